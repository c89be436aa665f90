"""Multi-head attention whose softmax runs in float32 under mixed precision."""

import math

import tensorflow as tf
import tf_keras

from albert_tf.layers import shared_block
from albert_tf.layers.checkpointed_dropout import CheckpointedDropout
from albert_tf.layers.matmul_einsum_dense import MatMulEinsumDense

_PROJECTIONS = ("_query_dense", "_key_dense", "_value_dense", "_output_dense")

@tf_keras.utils.register_keras_serializable(package="albert_tf")
class Float32SoftmaxAttention(tf_keras.layers.MultiHeadAttention):
  """`tf_keras.layers.MultiHeadAttention` with a float32 masked softmax.

  Under mixed_float16 / mixed_bfloat16 the projections and einsums run in the
  compute dtype, but the softmax over attention scores runs in float32 (as the
  official model and Model Garden do) and the probabilities are cast back.
  Constructor arguments are those of MultiHeadAttention.

  The attention mask may be [batch, 1, to] (broadcast over query positions),
  which avoids materialising a [batch, from, to] mask.

  Dropout on the probabilities draws from a tf.random.Generator (a layer
  variable), so its state is checkpointed with the model.

  The query, key, value and output projections are MatMulEinsumDense:
  the same variables as MultiHeadAttention's EinsumDense, each computed as
  one 2-D MatMul. Scores and context are batched MatMuls on [B, N, T, D]
  rather than MultiHeadAttention's einsums: the same values, and forward +
  backward of 12 layers' attention at [7, 128, 12, 64] ran 1.65x faster
  on 2 CPU cores (TensorFlow 2.20's einsum transposes and reshapes more).
  """

  def _build_from_signature(self, query, value, key=None):
    super()._build_from_signature(query, value, key)
    # Swapped before first use, so no variables exist yet; same names.
    for name in _PROJECTIONS:
      einsum_dense = getattr(self, name)
      setattr(self, name,
              MatMulEinsumDense.from_config(einsum_dense.get_config()))

  def build_projections(self, query_shape):
    """Creates the projections' variables for queries, keys and values of
    `query_shape` [batch, seq, H] as a first call would, under the same
    names (the caller opens this layer's name scope): for layers that
    read them (shared_block) without calling this one."""
    if not self._built_from_signature:
      self._build_from_signature(query_shape, query_shape)
    inner = query_shape[:-1].concatenate([self._num_heads, self._key_dim])
    for layer, shape in zip(self.projections,
                            [query_shape] * 3 + [inner]):
      with tf.name_scope(layer.name):
        layer.build(shape)
    self.built = True

  @property
  def probs_dropout(self):
    """The CheckpointedDropout on the attention probabilities."""
    return self._dropout_layer

  @property
  def projections(self):
    """The query, key, value and output MatMulEinsumDense layers (once
    built): kernels [H, N, D], [H, N, D], [H, N, D], [N, D, H]."""
    return tuple(getattr(self, name) for name in _PROJECTIONS)

  def _build_attention(self, rank):
    super()._build_attention(rank)
    self._softmax = tf_keras.layers.Softmax(axis=self._softmax.axis,
                                            dtype="float32")
    self._dropout_layer = CheckpointedDropout(self._dropout,
                                              dtype=self._dtype_policy)

  def _compute_attention(self, query, key, value, attention_mask=None,
                         training=None):
    """MultiHeadAttention's attention on [B, T, N, D] projections (see the
    class docstring); other attention axes take its einsums."""
    if tuple(self._attention_axes) != (1,):
      return super()._compute_attention(query, key, value, attention_mask,
                                        training)
    query = tf.multiply(query, 1.0 / math.sqrt(float(self._key_dim)))
    query, key, value = (tf.transpose(t, [0, 2, 1, 3])  # (B, N, T|S, D)
                         for t in (query, key, value))
    bias = 0.0 if attention_mask is None else shared_block.mask_bias(
        attention_mask)  # (B, 1, T|1, S)
    context, probs = shared_block.attention_context(
        query, key, value, bias, self._dropout_layer, training)
    return tf.transpose(context, [0, 2, 1, 3]), probs  # (B, T, N, D)

  def _masked_softmax(self, attention_scores, attention_mask=None):
    probs = super()._masked_softmax(tf.cast(attention_scores, tf.float32),
                                    attention_mask)
    return tf.cast(probs, self.compute_dtype)
