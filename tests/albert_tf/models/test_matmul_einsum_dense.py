"""MatMulEinsumDense: EinsumDense's variables and values, computed by MatMul."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from albert_tf.layers.matmul_einsum_dense import MatMulEinsumDense
from albert_tf.layers.matmul_einsum_dense import _matmul_plan


@pytest.mark.parametrize("equation,plan", [
    ("abc,cde->abde", (2, 1)),  # MultiHeadAttention's query/key/value
    ("abcd,cde->abe", (2, 2)),  # its output projection
    ("bsh,hi->bsi", (2, 1)),
    ("ab,bc->ac", (1, 1)),
    ("...b,bc->...c", None),  # ellipsis: einsum
    ("abc,dce->abde", None),  # contracted axis not leading in the kernel
    ("abc,cd->adb", None),  # output permuted
    ("abc,acd->abd", None),  # batch axis shared with the kernel
])
def test_plan(equation, plan):
  assert _matmul_plan(equation) == plan


@pytest.mark.parametrize("equation,input_shape,output_shape,bias_axes", [
    ("abc,cde->abde", (3, 5, 32), (None, 4, 8), "de"),
    ("abcd,cde->abe", (3, 5, 4, 8), (None, 32), "e"),
    ("abc,cd->abd", (3, 5, 32), (None, 16), None),
    ("abc,dce->abde", (3, 5, 32), (None, 2, 6), "e"),  # falls back to einsum
])
@pytest.mark.parametrize("policy", ["float32", "mixed_float16",
                                    "mixed_bfloat16"])
def test_equals_einsum_dense(equation, input_shape, output_shape, bias_axes,
                             policy):
  kwargs = dict(output_shape=output_shape, bias_axes=bias_axes,
                activation="tanh", bias_initializer="random_normal",
                dtype=policy)
  ours = MatMulEinsumDense(equation, **kwargs)
  reference = tf_keras.layers.EinsumDense(equation, **kwargs)
  x = tf.random.stateless_normal(input_shape, seed=[1, 2])
  ours(x)
  reference(x)
  assert [w.shape for w in ours.weights] == [w.shape for w in reference.weights]
  assert [w.name.split("/")[-1] for w in ours.weights] == [
      w.name.split("/")[-1] for w in reference.weights]
  reference.set_weights(ours.get_weights())
  with tf.GradientTape(persistent=True) as tape:
    tape.watch(x)
    y_ours, y_reference = ours(x), reference(x)
    loss_ours = tf.reduce_sum(tf.cast(y_ours, tf.float32) ** 2)
    loss_reference = tf.reduce_sum(tf.cast(y_reference, tf.float32) ** 2)
  assert y_ours.shape == y_reference.shape
  assert y_ours.dtype == y_reference.dtype
  tolerance = 1e-5 if policy == "float32" else 0.05
  np.testing.assert_allclose(tf.cast(y_ours, tf.float32),
                             tf.cast(y_reference, tf.float32),
                             atol=tolerance)
  grads_ours = tape.gradient(loss_ours, [x] + ours.trainable_variables)
  grads_reference = tape.gradient(loss_reference,
                                  [x] + reference.trainable_variables)
  for g_ours, g_reference in zip(grads_ours, grads_reference):
    scale = np.abs(g_reference.numpy()).max()
    np.testing.assert_allclose(g_ours / scale, g_reference / scale,
                               atol=tolerance)


def test_matches_numpy_projection():
  layer = MatMulEinsumDense("abcd,cde->abe", output_shape=(None, 6),
                            bias_axes="e", bias_initializer="random_normal")
  x = np.random.default_rng(0).normal(size=(2, 3, 4, 5)).astype(np.float32)
  y = layer(x).numpy()
  kernel, bias = [w.numpy() for w in layer.weights]
  expected = np.einsum("abcd,cde->abe", x.astype(np.float64), kernel) + bias
  np.testing.assert_allclose(y, expected, atol=1e-5)
  assert y.shape == (2, 3, 6)


def test_config_round_trip():
  layer = MatMulEinsumDense("abc,cde->abde", output_shape=(None, 4, 8),
                            bias_axes="de")
  clone = tf_keras.layers.deserialize(tf_keras.layers.serialize(layer))
  assert isinstance(clone, MatMulEinsumDense)
  assert clone._plan == (2, 1)
