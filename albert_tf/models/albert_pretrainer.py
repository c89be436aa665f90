"""AlbertPretrainer: the encoder with the masked-LM and sentence-order heads."""

import tensorflow as tf
import tf_keras

from albert_common.encoder_inputs import ENCODER_INPUT_NAMES
from albert_tf.layers.masked_lm_head import MaskedLMHead
from albert_tf.layers.sentence_order_head import SentenceOrderHead
from albert_tf.models.encoder_model_config import EncoderModelConfig
from albert_tf.networks.albert_encoder import AlbertEncoder


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class AlbertPretrainer(EncoderModelConfig, tf_keras.Model):
  """ALBERT pretraining model: masked LM (tied decoder) + sentence order.

  Args:
    encoder: an AlbertEncoder; its word table is the MLM decoder.

  Inputs (dict):
    input_word_ids, input_mask, input_type_ids: int32 [batch, seq].
    masked_lm_positions: int32 [batch, P], positions to score (padding slots
      may hold 0; their loss weight is 0).

  Outputs (dict):
    mlm_logits: float32 [batch, P, V].
    sop_logits: float32 [batch, 2].
    pooled_output: the encoder's, float32 [batch, H].

  The encoder runs with `output_positions`: its last block is computed only
  at [CLS] and the masked positions, which is all the heads read.

  Example:

  >>> import numpy as np
  >>> from albert_tf import AlbertConfig, AlbertEncoder, AlbertPretrainer
  >>> config = AlbertConfig(vocab_size=100, embedding_size=16, hidden_size=32,
  ...                       num_hidden_layers=2, num_attention_heads=2,
  ...                       intermediate_size=64, max_position_embeddings=8)
  >>> pretrainer = AlbertPretrainer(AlbertEncoder(config))
  >>> outputs = pretrainer(dict(
  ...     input_word_ids=np.array([[2, 4, 16, 4, 3, 0, 0, 0]]),
  ...     input_mask=np.array([[1, 1, 1, 1, 1, 0, 0, 0]]),
  ...     input_type_ids=np.zeros((1, 8), np.int32),
  ...     masked_lm_positions=np.array([[1, 3]])))
  >>> outputs["mlm_logits"].shape  # [batch, P, V]
  TensorShape([1, 2, 100])
  >>> outputs["sop_logits"].shape, outputs["pooled_output"].shape
  (TensorShape([1, 2]), TensorShape([1, 32]))

  The masked-LM decoder is the encoder's word-embedding table:

  >>> table = pretrainer.encoder.get_embedding_table()
  >>> table.shape  # [V, E]
  TensorShape([100, 16])
  >>> sum(v is table for v in pretrainer.trainable_variables)
  1
  """

  def __init__(self, encoder: AlbertEncoder, **kwargs):
    config = encoder.config
    inputs = {
        name: tf_keras.Input(shape=(None,), dtype=tf.int32, name=name)
        for name in ENCODER_INPUT_NAMES + ("masked_lm_positions",)
    }
    encoder_inputs = {k: inputs[k] for k in ENCODER_INPUT_NAMES}
    encoder_outputs = encoder(encoder_inputs,
                              output_positions=inputs["masked_lm_positions"])
    mlm_head = MaskedLMHead(
        encoder.embedding_layer, hidden_act=config.hidden_act,
        initializer_range=config.initializer_range,
        dtype=encoder.get_config()["dtype"], name="masked_lm")
    sop_head = SentenceOrderHead(config.initializer_range,
                                 name="sentence_order")
    outputs = dict(
        mlm_logits=mlm_head(encoder_outputs["sequence_output_at_positions"]),
        sop_logits=sop_head(encoder_outputs["pooled_output"]),
        pooled_output=encoder_outputs["pooled_output"])
    super().__init__(inputs=inputs, outputs=outputs, **kwargs)
    self.encoder = encoder
    self.masked_lm = mlm_head
    self.sentence_order = sop_head
