"""AlbertMultipleChoice: one score per option, softmax over options (RACE)."""

from typing import Dict, Optional

import tensorflow as tf
import tf_keras

from albert_common.encoder_inputs import ENCODER_INPUT_NAMES
from albert_common.encoder_inputs import INPUT_MASK
from albert_common.encoder_inputs import INPUT_TYPE_IDS
from albert_common.encoder_inputs import INPUT_WORD_IDS
from albert_tf.layers.multiple_choice_head import MultipleChoiceHead
from albert_tf.models.encoder_model_config import EncoderModelConfig
from albert_tf.networks.albert_encoder import AlbertEncoder
from albert_tf.networks.albert_encoder import pooled_output


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class AlbertMultipleChoice(EncoderModelConfig, tf_keras.Model):
  """Encodes each (article, question + option) pair; scores its pooled output.

  Args:
    encoder: an AlbertEncoder.
    num_choices: int, options per question (RACE: 4).
    dropout_rate: dropout on the pooled output while training (0.1).
    initializer_range: of the head; None = the encoder config's.

  Inputs (dict, int32 [batch, num_choices, seq]):
    input_word_ids, input_mask, input_type_ids.

  Outputs (dict):
    logits: float32 [batch, num_choices].
  """

  CONFIG_KEYS = ("num_choices", "dropout_rate", "initializer_range")

  def __init__(self, encoder: AlbertEncoder, num_choices: int = 4,
               dropout_rate: float = 0.1,
               initializer_range: Optional[float] = None, **kwargs):
    super().__init__(**kwargs)
    if initializer_range is None:
      initializer_range = encoder.config.initializer_range
    self.initializer_range = initializer_range
    self.encoder = encoder
    self.num_choices = num_choices
    self.dropout_rate = dropout_rate
    self.multiple_choice = MultipleChoiceHead(
        num_choices, initializer_range=initializer_range,
        dropout_rate=dropout_rate, name="multiple_choice")
    zeros = tf.zeros([1, num_choices, 2], tf.int32)
    self({INPUT_WORD_IDS: zeros, INPUT_MASK: zeros + 1, INPUT_TYPE_IDS: zeros},
         training=False)

  def call(self, inputs: Dict[str, tf.Tensor], training=None):
    flat = {}
    for name in ENCODER_INPUT_NAMES:
      x = inputs[name]
      flat[name] = tf.reshape(x, [-1, tf.shape(x)[-1]])  # (B*C, S)
    pooled = pooled_output(self.encoder, flat, training=training)
    return dict(logits=self.multiple_choice(pooled, training=training))
