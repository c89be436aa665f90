"""The variables of an ALBERT attention: MultiHeadAttention's, not its call."""

import tensorflow as tf
import tf_keras

from albert_tf.layers.checkpointed_dropout import CheckpointedDropout

_PROJECTIONS = ("_query_dense", "_key_dense", "_value_dense", "_output_dense")


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class Float32SoftmaxAttention(tf_keras.layers.MultiHeadAttention):
  """`tf_keras.layers.MultiHeadAttention`'s variables, read by
  layers/shared_block.py, which computes the attention (its softmax in
  float32 under mixed precision, hence the name).

  The layer holds the query, key, value and output projections (EinsumDense
  kernels [H, N, D], [H, N, D], [H, N, D], [N, D, H], MultiHeadAttention's
  names, so checkpoints and SavedModels interchange) and the dropout on the
  attention probabilities, a CheckpointedDropout (its generator is a
  checkpointed variable). It is never called: `call` raises. Constructor
  arguments are those of MultiHeadAttention; the name stays, as SavedModels
  written before record it.
  """

  def build_projections(self, query_shape):
    """Creates the projections' variables for queries, keys and values of
    `query_shape` [batch, seq, H] as a first call would, under the same
    names (the caller opens this layer's name scope)."""
    if not self._built_from_signature:
      self._build_from_signature(query_shape, query_shape)
    inner = query_shape[:-1].concatenate([self._num_heads, self._key_dim])
    for layer, shape in zip(self.projections,
                            [query_shape] * 3 + [inner]):
      if not layer.built:
        with tf.name_scope(layer.name):
          layer.build(shape)
    self.built = True

  @property
  def probs_dropout(self):
    """The CheckpointedDropout on the attention probabilities."""
    return self._dropout_layer

  @property
  def projections(self):
    """The query, key, value and output EinsumDense layers (once built)."""
    return tuple(getattr(self, name) for name in _PROJECTIONS)

  def _build_attention(self, rank):
    super()._build_attention(rank)
    self._dropout_layer = CheckpointedDropout(self._dropout,
                                              dtype=self._dtype_policy)

  def call(self, *args, **kwargs):
    raise NotImplementedError(
        "Float32SoftmaxAttention holds variables; shared_block.Attention "
        "computes the attention (AttentionSublayer calls it)")
