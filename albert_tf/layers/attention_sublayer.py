"""The attention half of an ALBERT transformer block (post-LN): its
variables; its arithmetic is layers/shared_block.py's."""

import tensorflow as tf
import tf_keras

from albert_tf.layers import shared_block
from albert_tf.layers.checkpointed_dropout import CheckpointedDropout
from albert_tf.layers.float32_softmax_attention import Float32SoftmaxAttention


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class AttentionSublayer(tf_keras.layers.Layer):
  """LayerNorm(x + Dropout(SelfAttention(x))), as the official `attention_1`.

  Args:
    hidden_size: int, width H.
    num_attention_heads: int, heads N; H must be divisible by N.
    initializer_range: float, stddev of the truncated-normal kernels.
    dropout_rate: float, dropout on the attention output.
    attention_dropout_rate: float, dropout on the attention probabilities.

  Call args:
    x: float [batch, seq, H].
    input_mask: int [batch, seq], 1 for real tokens, 0 for padding; or an
      attention mask int/bool [batch, seq, seq] (1: query t may attend to
      key s), e.g. block-diagonal for packed rows.
    training: bool, enables dropout.

  Returns:
    float32 [batch, seq, H].
  """

  def __init__(self, hidden_size, num_attention_heads, initializer_range,
               dropout_rate=0.0, attention_dropout_rate=0.0, **kwargs):
    super().__init__(**kwargs)
    self.hidden_size = hidden_size
    self.num_attention_heads = num_attention_heads
    self.initializer_range = initializer_range
    self.dropout_rate = dropout_rate
    self.attention_dropout_rate = attention_dropout_rate
    self.attention = Float32SoftmaxAttention(
        num_heads=num_attention_heads,
        key_dim=hidden_size // num_attention_heads,
        dropout=attention_dropout_rate,
        kernel_initializer=tf_keras.initializers.TruncatedNormal(
            stddev=initializer_range),
        dtype=self.dtype_policy,
        name="self_attention")
    self.dropout = CheckpointedDropout(dropout_rate, dtype=self.dtype_policy)
    self.layer_norm = tf_keras.layers.LayerNormalization(
        epsilon=1e-12, dtype="float32", name="layer_norm")

  def build(self, input_shape):
    """Creates the variables MultiHeadAttention and LayerNormalization
    create on a first call, under the same names (checkpoints and
    SavedModels of before load): `call` reads them, it does not call
    those layers."""
    shape = tf.TensorShape(input_shape)
    with tf.name_scope(self.attention.name):
      self.attention.build_projections(shape)
    with tf.name_scope(self.layer_norm.name):
      self.layer_norm.build(shape)
    super().build(input_shape)

  def call(self, x, input_mask, training=None):
    shape = tf.shape(x)
    rows = tf.reshape(x, [-1, self.hidden_size])  # (B*S, H)
    bias = shared_block.mask_bias(input_mask)  # (B, 1, 1|S, S)
    y = shared_block.Attention(self)(rows, shape[0], shape[1], bias,
                                     training=training)
    return tf.reshape(y, shape)  # (B, S, H)

  def get_config(self):
    config = super().get_config()
    config.update(
        hidden_size=self.hidden_size,
        num_attention_heads=self.num_attention_heads,
        initializer_range=self.initializer_range,
        dropout_rate=self.dropout_rate,
        attention_dropout_rate=self.attention_dropout_rate)
    return config
