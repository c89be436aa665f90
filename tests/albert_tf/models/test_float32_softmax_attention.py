"""Float32SoftmaxAttention: MultiHeadAttention's values and gradients, with
batched MatMuls for the scores and context instead of its einsums."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from albert_tf.layers.float32_softmax_attention import Float32SoftmaxAttention


def _mask(kind, batch, queries, keys):
  """A boolean attention mask: padding [B, 1, S] or per query [B, T, S]."""
  rng = np.random.default_rng(3)
  if kind == "padding":
    lengths = rng.integers(1, keys + 1, size=batch)
    return tf.constant(np.arange(keys)[None, None, :] < lengths[:, None, None])
  mask = rng.random((batch, queries, keys)) < 0.6
  mask[:, :, 0] = True  # every query attends somewhere
  return tf.constant(mask)


@pytest.mark.parametrize("mask_kind", ["padding", "per_query"])
@pytest.mark.parametrize("queries", [6, 2])  # all rows, or gathered rows
def test_equals_multi_head_attention(mask_kind, queries):
  batch, keys, hidden = 3, 6, 32
  kwargs = dict(num_heads=4, key_dim=8)
  ours = Float32SoftmaxAttention(**kwargs)
  reference = tf_keras.layers.MultiHeadAttention(**kwargs)
  x = tf.random.stateless_normal([batch, keys, hidden], seed=[1, 2])
  query = x[:, :queries]
  mask = _mask(mask_kind, batch, queries, keys)
  ours(query, x, attention_mask=mask)
  reference(query, x, attention_mask=mask)
  rng = np.random.default_rng(0)
  ours.set_weights([rng.normal(0.0, 0.3, w.shape).astype(np.float32)
                    for w in ours.get_weights()])
  reference.set_weights(ours.get_weights())
  with tf.GradientTape(persistent=True) as tape:
    tape.watch(x)
    y_ours, scores_ours = ours(query, x, attention_mask=mask,
                               return_attention_scores=True)
    y_reference, scores_reference = reference(
        query, x, attention_mask=mask, return_attention_scores=True)
    loss_ours = tf.reduce_sum(y_ours ** 2)
    loss_reference = tf.reduce_sum(y_reference ** 2)
  assert y_ours.shape == (batch, queries, hidden)
  assert scores_ours.shape == (batch, 4, queries, keys)
  assert float(tf.reduce_max(tf.abs(y_reference))) > 0.1  # not degenerate
  np.testing.assert_allclose(y_ours, y_reference, atol=1e-5)
  np.testing.assert_allclose(scores_ours, scores_reference, atol=1e-6)
  grads_ours = tape.gradient(loss_ours, [x] + ours.trainable_variables)
  grads_reference = tape.gradient(loss_reference,
                                  [x] + reference.trainable_variables)
  for got, want in zip(grads_ours, grads_reference):
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_other_attention_axes_take_the_einsums():
  # Rank-5 projections with attention over two axes: the parent's einsums.
  layer = Float32SoftmaxAttention(num_heads=2, key_dim=4,
                                  attention_axes=(1, 2))
  x = tf.random.stateless_normal([2, 3, 5, 8], seed=[4, 5])
  y, scores = layer(x, x, return_attention_scores=True)
  assert y.shape == (2, 3, 5, 8)
  assert scores.shape == (2, 2, 3, 5, 3, 5)
