"""The attention half of an ALBERT transformer block (post-LN)."""

import tensorflow as tf
import tf_keras

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
    x: float [batch, seq, H], the keys and values (and, by default, queries).
    input_mask: int [batch, seq], 1 for real tokens, 0 for padding; or an
      attention mask int/bool [batch, T, seq] (1: query t may attend to
      key s), e.g. block-diagonal for packed rows, whose rows are the
      queries' (`query`'s when given).
    query: optional float [batch, T, H], rows of `x` to compute the output
      for (e.g. gathered [CLS] + masked positions); default all of `x`.
    training: bool, enables dropout.

  Returns:
    float32 [batch, T, H] (T = seq without `query`).
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

  def call(self, x, input_mask, query=None, training=None):
    # Keras casts only the first argument to the compute dtype.
    query = x if query is None else tf.cast(query, x.dtype)
    attention_mask = tf.cast(input_mask, tf.bool)
    if attention_mask.shape.rank == 2:
      # Every query attends to the non-padding keys: (B, 1, S) broadcasts
      # over the query axis without building a (B, T, S) mask.
      attention_mask = attention_mask[:, tf.newaxis, :]
    y = self.attention(query, x, attention_mask=attention_mask,
                       training=training)
    y = self.dropout(y, training=training)
    return self.layer_norm(query + y)

  def get_config(self):
    config = super().get_config()
    config.update(
        hidden_size=self.hidden_size,
        num_attention_heads=self.num_attention_heads,
        initializer_range=self.initializer_range,
        dropout_rate=self.dropout_rate,
        attention_dropout_rate=self.attention_dropout_rate)
    return config
