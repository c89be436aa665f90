"""Multi-head attention whose softmax runs in float32 under mixed precision."""

import tensorflow as tf
import tf_keras

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
  one 2-D MatMul.
  """

  def _build_from_signature(self, query, value, key=None):
    super()._build_from_signature(query, value, key)
    # Swapped before first use, so no variables exist yet; same names.
    for name in _PROJECTIONS:
      einsum_dense = getattr(self, name)
      setattr(self, name,
              MatMulEinsumDense.from_config(einsum_dense.get_config()))

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

  def _masked_softmax(self, attention_scores, attention_mask=None):
    probs = super()._masked_softmax(tf.cast(attention_scores, tf.float32),
                                    attention_mask)
    return tf.cast(probs, self.compute_dtype)
