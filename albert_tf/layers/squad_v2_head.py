"""SQuAD v2.0 head of the official ALBERT `run_squad_v2` (XLNet-style).

Start log-probabilities over the paragraph; end log-probabilities
conditioned on the start (teacher-forced in training, a beam of
`start_n_top` starts x `end_n_top` ends at inference); an answer-class logit
from [CLS] and the start-probability-weighted representation.
"""

import tensorflow as tf
import tf_keras

from albert_tf.layers.checkpointed_dropout import CheckpointedDropout

_NEG = -1e30


def _dense(units, initializer_range, name, activation=None, use_bias=True):
  return tf_keras.layers.Dense(
      units, activation=activation, use_bias=use_bias,
      kernel_initializer=tf_keras.initializers.TruncatedNormal(
          stddev=initializer_range),
      dtype="float32", name=name)


def _masked(logits, p_mask):
  """Logits with positions where p_mask == 1 pushed to -1e30."""
  return logits * (1.0 - p_mask) + _NEG * p_mask


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class SquadV2Head(tf_keras.layers.Layer):
  """Start, conditioned end and answer-class heads.

  Variables as the official `start_logits/dense`, `end_logits/dense_0`,
  `end_logits/LayerNorm`, `end_logits/dense_1`, `answer_class/dense_0`,
  `answer_class/dense_1` (no bias).

  Args:
    hidden_size: int, H of the encoder.
    start_n_top, end_n_top: int, beam sizes at inference.
    initializer_range: float, stddev of the truncated-normal kernels.
    dropout_rate: float, dropout in the answer-class head while training.

  Call args:
    sequence_output: float [batch, seq, H].
    p_mask: int or float [batch, seq], 1 where no answer may start or end.
    start_positions: optional int32 [batch]; given, the end head is
      conditioned on these starts (training), else on the beam.

  Returns:
    dict; always cls_logits float32 [batch] (higher = unanswerable).
    With start_positions: start_log_probs, end_log_probs float32
      [batch, seq].
    Without: start_top_log_probs, start_top_index [batch, start_n_top];
      end_top_log_probs, end_top_index [batch, start_n_top * end_n_top]
      (row-major: the ends of start i at i * end_n_top ...).
  """

  def __init__(self, hidden_size, start_n_top=5, end_n_top=5,
               initializer_range=0.02, dropout_rate=0.1, **kwargs):
    super().__init__(**kwargs)
    self.hidden_size = hidden_size
    self.start_n_top = start_n_top
    self.end_n_top = end_n_top
    self.initializer_range = initializer_range
    self.dropout_rate = dropout_rate
    self.start_dense = _dense(1, initializer_range, "start_logits")
    self.end_dense_0 = _dense(hidden_size, initializer_range, "end_dense_0",
                              activation="tanh")
    self.end_layer_norm = tf_keras.layers.LayerNormalization(
        epsilon=1e-12, dtype="float32", name="end_layer_norm")
    self.end_dense_1 = _dense(1, initializer_range, "end_dense_1")
    self.answer_dense_0 = _dense(hidden_size, initializer_range,
                                 "answer_class_dense_0", activation="tanh")
    self.answer_dropout = CheckpointedDropout(dropout_rate)
    self.answer_dense_1 = _dense(1, initializer_range,
                                 "answer_class_dense_1", use_bias=False)

  def _end_logits(self, sequence_output, start_features):
    """sequence_output (B, S, H), start_features (B, K, H) -> (B, K, S)."""
    seq_len = tf.shape(sequence_output)[1]
    k = tf.shape(start_features)[1]
    tiled_seq = tf.tile(sequence_output[:, None], [1, k, 1, 1])  # (B,K,S,H)
    tiled_start = tf.tile(start_features[:, :, None], [1, 1, seq_len, 1])
    x = tf.concat([tiled_seq, tiled_start], axis=-1)  # (B, K, S, 2H)
    x = self.end_layer_norm(self.end_dense_0(x))
    return tf.squeeze(self.end_dense_1(x), -1)  # (B, K, S)

  def call(self, sequence_output, p_mask, start_positions=None,
           training=None):
    sequence_output = tf.cast(sequence_output, tf.float32)
    p_mask = tf.cast(p_mask, tf.float32)
    start_logits = tf.squeeze(self.start_dense(sequence_output), -1)  # (B,S)
    start_logits = _masked(start_logits, p_mask)
    start_log_probs = tf.nn.log_softmax(start_logits, -1)
    outputs = {}
    if start_positions is not None:
      start_features = tf.gather(
          sequence_output, tf.cast(start_positions, tf.int32)[:, None],
          batch_dims=1)  # (B, 1, H)
      end_logits = _masked(
          self._end_logits(sequence_output, start_features)[:, 0], p_mask)
      outputs.update(start_log_probs=start_log_probs,
                     end_log_probs=tf.nn.log_softmax(end_logits, -1))
    else:
      start_top_log_probs, start_top_index = tf.nn.top_k(
          start_log_probs, k=self.start_n_top)  # (B, K1)
      start_features = tf.gather(sequence_output, start_top_index,
                                 batch_dims=1)  # (B, K1, H)
      end_logits = _masked(self._end_logits(sequence_output, start_features),
                           p_mask[:, None])  # (B, K1, S)
      end_log_probs = tf.nn.log_softmax(end_logits, -1)
      end_top_log_probs, end_top_index = tf.nn.top_k(
          end_log_probs, k=self.end_n_top)  # (B, K1, K2)
      flat = [-1, self.start_n_top * self.end_n_top]
      outputs.update(start_top_log_probs=start_top_log_probs,
                     start_top_index=start_top_index,
                     end_top_log_probs=tf.reshape(end_top_log_probs, flat),
                     end_top_index=tf.reshape(end_top_index, flat))
    # Answer class: [start-probability-weighted state ; CLS state].
    start_p = tf.nn.softmax(start_logits, -1)
    start_feature = tf.einsum("bsh,bs->bh", sequence_output, start_p)
    cls_feature = sequence_output[:, 0]
    x = self.answer_dense_0(tf.concat([start_feature, cls_feature], -1))
    x = self.answer_dropout(x, training=training)
    outputs["cls_logits"] = tf.squeeze(self.answer_dense_1(x), -1)
    return outputs

  def get_config(self):
    config = super().get_config()
    config.update(hidden_size=self.hidden_size, start_n_top=self.start_n_top,
                  end_n_top=self.end_n_top,
                  initializer_range=self.initializer_range,
                  dropout_rate=self.dropout_rate)
    return config
