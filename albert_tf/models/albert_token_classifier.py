"""AlbertTokenClassifier: a tag per position (token classification, NER)."""

from typing import Optional

import tensorflow as tf
import tf_keras

from albert_common.encoder_inputs import ENCODER_INPUT_NAMES
from albert_tf.layers.token_classification_head import TokenClassificationHead
from albert_tf.models.encoder_model_config import EncoderModelConfig


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class AlbertTokenClassifier(EncoderModelConfig, tf_keras.Model):
  """Encoder -> sequence output -> dropout -> dense, at every position.

  Args:
    encoder: an AlbertEncoder, or any layer with the TF Hub encoder interface
      (e.g. hub.KerasLayer of an exported encoder): dict of int32
      [batch, seq] inputs -> dict with `sequence_output` [batch, seq, H].
    num_classes: int, number of tags.
    dropout_rate: float, dropout before the dense layer (0.1).
    initializer_range: float, stddev of the head's truncated-normal init;
      None takes the encoder config's (0.02 for released models).

  Inputs (dict): input_word_ids, input_mask, input_type_ids: int32
    [batch, seq].
  Outputs (dict): logits: float32 [batch, seq, num_classes].
  """

  CONFIG_KEYS = ("num_classes", "dropout_rate", "initializer_range")

  def __init__(self, encoder, num_classes: int, dropout_rate: float = 0.1,
               initializer_range: Optional[float] = None, **kwargs):
    if initializer_range is None:
      config = getattr(encoder, "config", None)
      initializer_range = getattr(config, "initializer_range", 0.02)
    inputs = {name: tf_keras.Input(shape=(None,), dtype=tf.int32, name=name)
              for name in ENCODER_INPUT_NAMES}
    sequence = encoder(inputs)["sequence_output"]  # [batch, seq, H]
    head = TokenClassificationHead(num_classes, dropout_rate,
                                   initializer_range, name="tagger")
    outputs = dict(logits=head(sequence))
    kwargs.setdefault("name", "albert_token_classifier")
    super().__init__(inputs=inputs, outputs=outputs, **kwargs)
    self.encoder = encoder
    self.tagger = head
    self.num_classes = num_classes
    self.dropout_rate = dropout_rate
    self.initializer_range = initializer_range
