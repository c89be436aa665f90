"""The feed-forward half of an ALBERT transformer block (post-LN): its
variables; its arithmetic is layers/shared_block.py's."""

import tensorflow as tf
import tf_keras

from albert_tf.layers import shared_block
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

    # Dense kernels [H, I] and [I, H]: 2-D MatMuls over B*S rows, whose
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

  def build(self, input_shape):
    """Creates the Dense and LayerNormalization variables under the names
    their first call gives them; `call` reads them (shared_block)."""
    shape = tf.TensorShape(input_shape)
    for layer, width in ((self.intermediate, shape[-1]),
                         (self.output_dense, self.intermediate_size),
                         (self.layer_norm, shape[-1])):
      with tf.name_scope(layer.name):
        layer.build(shape[:-1].concatenate([width]))
    super().build(input_shape)

  def call(self, x, training=None):
    shape = tf.shape(x)
    rows = tf.reshape(x, [-1, self.hidden_size])  # (B*S, H)
    y = shared_block.FeedForward(self)(rows, shape[0], shape[1], training)
    return tf.reshape(y, shape)

  def get_config(self):
    config = super().get_config()
    config.update(
        hidden_size=self.hidden_size,
        intermediate_size=self.intermediate_size,
        hidden_act=self.hidden_act,
        initializer_range=self.initializer_range,
        dropout_rate=self.dropout_rate)
    return config
