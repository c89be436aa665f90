"""AlbertSpanLabeler: start / end logits for extractive QA (SQuAD v1.1)."""

from typing import Optional

import tensorflow as tf
import tf_keras

from albert_common.encoder_inputs import ENCODER_INPUT_NAMES
from albert_tf.layers.span_head import SpanHead
from albert_tf.models.encoder_model_config import EncoderModelConfig
from albert_tf.networks.albert_encoder import AlbertEncoder


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class AlbertSpanLabeler(EncoderModelConfig, tf_keras.Model):
  """The encoder with a start / end logit per position.

  Also SQuAD v2.0 with the BERT-style null score: train impossible windows
  to point at [CLS] (position 0) and compare start[0] + end[0] with the best
  span at prediction time.

  Args:
    encoder: an AlbertEncoder (or an exported encoder as hub.KerasLayer).
    initializer_range: stddev of the head's kernel; None = the encoder
      config's.

  Inputs (dict, int32 [batch, seq]):
    input_word_ids, input_mask, input_type_ids.

  Outputs (dict):
    start_logits, end_logits: float32 [batch, seq].
  """

  CONFIG_KEYS = ("initializer_range",)

  def __init__(self, encoder: AlbertEncoder,
               initializer_range: Optional[float] = None, **kwargs):
    if initializer_range is None:
      initializer_range = encoder.config.initializer_range
    inputs = {
        name: tf_keras.Input(shape=(None,), dtype=tf.int32, name=name)
        for name in ENCODER_INPUT_NAMES
    }
    sequence_output = encoder(inputs)["sequence_output"]
    head = SpanHead(initializer_range, name="span")
    start_logits, end_logits = head(sequence_output)
    super().__init__(inputs=inputs,
                     outputs=dict(start_logits=start_logits,
                                  end_logits=end_logits), **kwargs)
    self.encoder = encoder
    self.span = head
    self.initializer_range = initializer_range
