"""AttentionSublayer (layers/shared_block.py's arithmetic on its variables):
tf_keras MultiHeadAttention's values and gradients, LayerNorm(x + MHA(x))."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from albert_tf.layers import shared_block
from albert_tf.layers.attention_sublayer import AttentionSublayer

B, S, H, N = 3, 6, 32, 4  # batch, sequence, hidden width, heads


def _mask(kind):
  """Padding int [B, S], or per query int [B, S, S] (packed rows' form)."""
  rng = np.random.default_rng(3)
  if kind == "padding":
    lengths = rng.integers(1, S + 1, size=B)
    return (np.arange(S)[None, :] < lengths[:, None]).astype(np.int32)
  mask = rng.random((B, S, S)) < 0.6
  mask[:, :, 0] = True  # every query attends somewhere
  return mask.astype(np.int32)


def _pair():
  """Our sublayer and a MultiHeadAttention + LayerNorm with its weights."""
  ours = AttentionSublayer(hidden_size=H, num_attention_heads=N,
                           initializer_range=0.3)
  ours.build([B, S, H])
  mha = tf_keras.layers.MultiHeadAttention(num_heads=N, key_dim=H // N)
  norm = tf_keras.layers.LayerNormalization(epsilon=1e-12)
  x = tf.zeros([B, S, H])
  mha(x, x)
  norm(x)
  rng = np.random.default_rng(0)
  for layer in (mha._query_dense, mha._key_dense, mha._value_dense,
                mha._output_dense):
    for w in layer.weights:
      w.assign(rng.normal(0.0, 0.3, w.shape).astype(np.float32))
  for theirs, mine in zip((mha._query_dense, mha._key_dense,
                           mha._value_dense, mha._output_dense),
                          ours.attention.projections):
    mine.kernel.assign(theirs.kernel)
    mine.bias.assign(theirs.bias)
  norm.gamma.assign(rng.uniform(0.5, 1.5, [H]).astype(np.float32))
  norm.beta.assign(rng.normal(0.0, 0.1, [H]).astype(np.float32))
  ours.layer_norm.gamma.assign(norm.gamma)
  ours.layer_norm.beta.assign(norm.beta)
  return ours, mha, norm


@pytest.mark.parametrize("mask_kind", ["padding", "per_query"])
def test_equals_multi_head_attention(mask_kind):
  ours, mha, norm = _pair()
  x = tf.random.stateless_normal([B, S, H], seed=[1, 2])
  mask = _mask(mask_kind)
  keras_mask = tf.cast(mask if mask.ndim == 3 else mask[:, None, :], tf.bool)
  with tf.GradientTape(persistent=True) as tape:
    tape.watch(x)
    y_ours = ours(x, mask)
    y_reference = norm(x + mha(x, x, attention_mask=keras_mask))
    loss_ours = tf.reduce_sum(y_ours ** 2 * tf.range(1.0, H + 1.0))
    loss_reference = tf.reduce_sum(y_reference ** 2 *
                                   tf.range(1.0, H + 1.0))
  assert y_ours.shape == (B, S, H)
  np.testing.assert_allclose(y_ours, y_reference, atol=1e-5)
  variables = [v for layer in ours.attention.projections
               for v in (layer.kernel, layer.bias)]
  reference_variables = [v for layer in (
      mha._query_dense, mha._key_dense, mha._value_dense,
      mha._output_dense) for v in (layer.kernel, layer.bias)]
  grads_ours = tape.gradient(loss_ours, [x] + variables)
  grads_reference = tape.gradient(loss_reference, [x] + reference_variables)
  assert float(tf.reduce_max(tf.abs(grads_reference[0]))) > 0.1
  for got, want in zip(grads_ours, grads_reference):
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_gathered_query_rows_equal_those_rows_of_the_whole():
  # The last block at output_positions: queries at some rows only, keys and
  # values at all (MultiHeadAttention with a shorter query).
  ours, mha, norm = _pair()
  x = tf.random.stateless_normal([B, S, H], seed=[3, 4])
  mask = _mask("padding")
  rows = tf.constant([[0, 2], [0, 5], [0, 1]], tf.int32)  # (B, T)
  query = tf.gather(x, rows, batch_dims=1)  # (B, T, H)
  got = shared_block.Attention(ours)(
      tf.reshape(x, [-1, H]), B, S, shared_block.mask_bias(mask),
      query_rows=rows)
  keras_mask = tf.cast(mask[:, None, :], tf.bool)
  want = norm(query + mha(query, x, attention_mask=keras_mask))
  np.testing.assert_allclose(tf.reshape(got, [B, 2, H]), want, atol=1e-5)


def test_one_reading_of_the_training_flag(tiny_config, encoder_inputs):
  # layers/shared_block.py decides for the block, the embeddings and the
  # loop (networks/layer_loop.py): Python or NumPy values; tensors refused.
  from albert_tf.networks import layer_loop
  from albert_tf.networks.albert_encoder import AlbertEncoder
  assert layer_loop.is_training is shared_block.is_training
  for flag, expected in ((None, False), (False, False), (0, False),
                         (True, True), (1, True), (np.bool_(True), True)):
    assert shared_block.is_training(flag) is expected, flag
  encoder = AlbertEncoder(tiny_config)
  with pytest.raises(TypeError, match="training must be None or a Python"):
    encoder(encoder_inputs, training=tf.constant(True))
