"""Sentence-order prediction head on the pooled output."""

import tf_keras


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class SentenceOrderHead(tf_keras.layers.Layer):
  """Two-way classifier: 0 = segments in order, 1 = swapped.

  The official `cls/seq_relationship` (output_weights [2, H], output_bias [2]);
  here a Dense with kernel [H, 2].

  Args:
    initializer_range: float, stddev of the truncated-normal kernel.

  Call args:
    pooled_output: float [batch, H].

  Returns:
    float32 logits [batch, 2].
  """

  def __init__(self, initializer_range=0.02, **kwargs):
    super().__init__(**kwargs)
    self.initializer_range = initializer_range
    self.dense = tf_keras.layers.Dense(
        2, kernel_initializer=tf_keras.initializers.TruncatedNormal(
            stddev=initializer_range),
        dtype="float32", name="dense")

  def call(self, pooled_output):
    return self.dense(pooled_output)

  def get_config(self):
    config = super().get_config()
    config.update(initializer_range=self.initializer_range)
    return config
