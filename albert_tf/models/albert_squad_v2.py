"""AlbertSquadV2: the official ALBERT SQuAD v2.0 model (run_squad_v2)."""

from typing import Dict, Optional

import tensorflow as tf
import tf_keras

from albert_common.encoder_inputs import ENCODER_INPUT_NAMES
from albert_common.encoder_inputs import INPUT_MASK
from albert_common.encoder_inputs import INPUT_TYPE_IDS
from albert_common.encoder_inputs import INPUT_WORD_IDS
from albert_tf.layers.squad_v2_head import SquadV2Head
from albert_tf.models.encoder_model_config import EncoderModelConfig
from albert_tf.networks.albert_encoder import AlbertEncoder


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class AlbertSquadV2(EncoderModelConfig, tf_keras.Model):
  """Start, start-conditioned end (beam search) and answer-class heads.

  Args:
    encoder: an AlbertEncoder.
    start_n_top, end_n_top: beam sizes at inference (official: 5 and 5).
    dropout_rate: dropout in the answer-class head (official: 0.1).
    hidden_size, initializer_range: of the heads; None = the encoder
      config's (give them for an exported encoder as hub.KerasLayer).

  Inputs (dict):
    input_word_ids, input_mask, input_type_ids: int32 [batch, seq].
    p_mask: int32 [batch, seq], 1 where no answer may start or end.
    start_positions: optional int32 [batch]: present while training (the
      end head is conditioned on the true start), absent for the beam.

  Outputs (dict): see `SquadV2Head`: with start_positions, start_log_probs
    and end_log_probs [batch, seq]; without, the beam's start_top_* and
    end_top_*; always cls_logits [batch] (the null odds; trained with a
    sigmoid towards is_impossible).
  """

  CONFIG_KEYS = ("start_n_top", "end_n_top", "dropout_rate", "hidden_size",
                 "initializer_range")

  def __init__(self, encoder: AlbertEncoder, start_n_top: int = 5,
               end_n_top: int = 5, dropout_rate: float = 0.1,
               hidden_size: Optional[int] = None,
               initializer_range: Optional[float] = None, **kwargs):
    super().__init__(**kwargs)
    if hidden_size is None:
      hidden_size = encoder.config.hidden_size
    if initializer_range is None:
      initializer_range = encoder.config.initializer_range
    self.hidden_size = hidden_size
    self.initializer_range = initializer_range
    self.encoder = encoder
    self.start_n_top = start_n_top
    self.end_n_top = end_n_top
    self.dropout_rate = dropout_rate
    self.squad_v2 = SquadV2Head(
        hidden_size, start_n_top=start_n_top, end_n_top=end_n_top,
        initializer_range=initializer_range,
        dropout_rate=dropout_rate, name="squad_v2")
    # Build every variable now (warm starts and checkpoints need them).
    seq = max(start_n_top, end_n_top, 2)
    zeros = tf.zeros([1, seq], tf.int32)
    self({INPUT_WORD_IDS: zeros, INPUT_MASK: zeros + 1, INPUT_TYPE_IDS: zeros,
          "p_mask": zeros}, training=False)

  def call(self, inputs: Dict[str, tf.Tensor], training=None):
    encoder_inputs = {k: inputs[k] for k in ENCODER_INPUT_NAMES}
    sequence_output = self.encoder(encoder_inputs,
                                   training=training)["sequence_output"]
    return self.squad_v2(sequence_output, inputs["p_mask"],
                         start_positions=inputs.get("start_positions"),
                         training=training)
