"""Start / end logits over the sequence (SQuAD v1.1 span labeler head)."""

import tensorflow as tf
import tf_keras


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class SpanHead(tf_keras.layers.Layer):
  """One dense layer H -> 2 on every position: start and end logits.

  The official `cls/squad/output_weights` [2, H] and `output_bias` [2]; here
  a Dense with kernel [H, 2].

  Args:
    initializer_range: float, stddev of the truncated-normal kernel.

  Call args:
    sequence_output: float [batch, seq, H].

  Returns:
    (start_logits, end_logits): float32 [batch, seq] each.
  """

  def __init__(self, initializer_range=0.02, **kwargs):
    super().__init__(**kwargs)
    self.initializer_range = initializer_range
    self.dense = tf_keras.layers.Dense(
        2, kernel_initializer=tf_keras.initializers.TruncatedNormal(
            stddev=initializer_range),
        dtype="float32", name="dense")

  def call(self, sequence_output):
    logits = self.dense(tf.cast(sequence_output, tf.float32))  # (B, S, 2)
    return logits[..., 0], logits[..., 1]

  def get_config(self):
    config = super().get_config()
    config.update(initializer_range=self.initializer_range)
    return config
