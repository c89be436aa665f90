"""The feed-forward half of an ALBERT transformer block (post-LN)."""

import tf_keras

from albert_tf.layers.activations import get_activation
from albert_tf.layers.checkpointed_dropout import CheckpointedDropout


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class FeedForwardSublayer(tf_keras.layers.Layer):
  """LayerNorm(x + Dropout(W2 act(W1 x))), as the official `ffn_1`.

  Args:
    hidden_size: int, width H.
    intermediate_size: int, inner width I.
    hidden_act: str, an AlbertConfig activation name ("gelu" is tanh GELU).
    initializer_range: float, stddev of the truncated-normal kernels.
    dropout_rate: float, dropout on the output projection.

  Call args:
    x: float [batch, seq, H].
    training: bool, enables dropout.

  Returns:
    float32 [batch, seq, H].
  """

  def __init__(self, hidden_size, intermediate_size, hidden_act,
               initializer_range, dropout_rate=0.0, **kwargs):
    super().__init__(**kwargs)
    self.hidden_size = hidden_size
    self.intermediate_size = intermediate_size
    self.hidden_act = hidden_act
    self.initializer_range = initializer_range
    self.dropout_rate = dropout_rate

    def init():
      return tf_keras.initializers.TruncatedNormal(stddev=initializer_range)

    # Dense on [B, S, H] is one 2-D MatMul over B*S rows (tensordot), whose
    # gradients oneDNN runs at matmul speed; the equivalent EinsumDense's
    # backward was 1.5x slower here (benchmarks/BENCHMARKS.md).
    self.intermediate = tf_keras.layers.Dense(
        intermediate_size, activation=get_activation(hidden_act),
        kernel_initializer=init(), dtype=self.dtype_policy,
        name="intermediate")
    self.output_dense = tf_keras.layers.Dense(
        hidden_size, kernel_initializer=init(), dtype=self.dtype_policy,
        name="output")
    self.dropout = CheckpointedDropout(dropout_rate, dtype=self.dtype_policy)
    self.layer_norm = tf_keras.layers.LayerNormalization(
        epsilon=1e-12, dtype="float32", name="layer_norm")

  def call(self, x, training=None):
    y = self.intermediate(x)  # (B, S, I)
    y = self.output_dense(y)  # (B, S, H)
    y = self.dropout(y, training=training)
    return self.layer_norm(x + y)

  def get_config(self):
    config = super().get_config()
    config.update(
        hidden_size=self.hidden_size,
        intermediate_size=self.intermediate_size,
        hidden_act=self.hidden_act,
        initializer_range=self.initializer_range,
        dropout_rate=self.dropout_rate)
    return config
