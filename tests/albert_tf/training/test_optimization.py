"""LAMB / AdamW configuration and the learning-rate schedule."""

import numpy as np
import pytest
import tensorflow as tf

from albert_common.errors import UserInputError
from albert_tf import optimization


def _numpy_lamb_step(w, g, m, v, step, lr, wd, decayed, beta1=0.9,
                     beta2=0.999, eps=1e-6):
  """One LAMB update (You et al. 2019, with Adam bias correction)."""
  m = beta1 * m + (1 - beta1) * g
  v = beta2 * v + (1 - beta2) * g * g
  m_hat = m / (1 - beta1 ** step)
  v_hat = v / (1 - beta2 ** step)
  update = m_hat / (np.sqrt(v_hat) + eps)
  ratio = 1.0
  if decayed:
    update = update + wd * w
    w_norm, u_norm = np.linalg.norm(w), np.linalg.norm(update)
    ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
  return w - ratio * lr * update, m, v


def test_lamb_steps_match_numpy():
  rng = np.random.default_rng(0)
  kernel0 = rng.normal(size=(4, 3))
  bias0 = rng.normal(size=(3,))
  gamma0 = rng.normal(size=(3,))
  # Names as in our model: kernels decay and adapt; bias / LayerNorm do not.
  kernel = tf.Variable(kernel0, dtype=tf.float32, name="ffn/kernel")
  bias = tf.Variable(bias0, dtype=tf.float32, name="ffn/bias")
  gamma = tf.Variable(gamma0, dtype=tf.float32, name="x/layer_norm/gamma")
  optimizer = optimization.create_optimizer(
      "lamb", learning_rate=0.01, num_train_steps=100, num_warmup_steps=0,
      weight_decay_rate=0.01)
  expected = {"k": (kernel0, 0, 0), "b": (bias0, 0, 0), "g": (gamma0, 0, 0)}
  for step in (1, 2, 3):
    grads = {k: rng.normal(size=w.shape) for k, w in
             (("k", kernel0), ("b", bias0), ("g", gamma0))}
    optimizer.apply_gradients(
        [(tf.constant(grads["k"], tf.float32), kernel),
         (tf.constant(grads["b"], tf.float32), bias),
         (tf.constant(grads["g"], tf.float32), gamma)])
    lr = 0.01 * (1 - (step - 1) / 100)  # polynomial decay read at step - 1
    for key in expected:
      w, m, v = expected[key]
      expected[key] = _numpy_lamb_step(w, grads[key], m, v, step, lr, 0.01,
                                       decayed=(key == "k"))
  np.testing.assert_allclose(kernel.numpy(), expected["k"][0], rtol=2e-5)
  np.testing.assert_allclose(bias.numpy(), expected["b"][0], rtol=2e-5)
  np.testing.assert_allclose(gamma.numpy(), expected["g"][0], rtol=2e-5)
  # Layer adaptation: the kernel moved by lr * ||w|| per step, not lr * ~1.
  assert optimizer.iterations.numpy() == 3


def test_schedule_warmup_then_polynomial_decay():
  schedule = optimization.learning_rate_schedule(
      1e-3, num_train_steps=100, num_warmup_steps=10, poly_power=2.0)
  peak = 1e-3 * (1 - 10 / 100) ** 2
  np.testing.assert_allclose(schedule(5).numpy(), peak * 5 / 10, rtol=1e-6)
  np.testing.assert_allclose(schedule(10).numpy(), peak, rtol=1e-6)
  np.testing.assert_allclose(schedule(55).numpy(), 1e-3 * 0.45 ** 2,
                             rtol=1e-6)
  assert schedule(100).numpy() == 0.0
  assert schedule(150).numpy() == 0.0


def test_adamw_excludes_layer_norm_and_bias_from_decay():
  optimizer = optimization.create_optimizer(
      "adamw", learning_rate=0.1, num_train_steps=10, weight_decay_rate=0.5)
  kernel = tf.Variable(np.ones((2, 2), np.float32), name="dense/kernel")
  bias = tf.Variable(np.ones((2,), np.float32), name="dense/bias")
  optimizer.apply_gradients([(tf.zeros((2, 2), tf.float32), kernel),
                             (tf.zeros((2,), tf.float32), bias)])
  np.testing.assert_allclose(kernel.numpy(), 1 - 0.1 * 0.5)  # decayed
  np.testing.assert_allclose(bias.numpy(), 1.0)  # excluded


@pytest.mark.parametrize("kwargs,message", [
    (dict(optimizer="sgd"), r"--optimizer must be one of .*'sgd'"),
    (dict(num_train_steps=0), r"--num_train_steps must be positive, got 0"),
    (dict(num_warmup_steps=20), r"--num_warmup_steps \(20\) must be in"),
])
def test_bad_settings_are_user_errors(kwargs, message):
  settings = dict(optimizer="lamb", learning_rate=1e-3, num_train_steps=10)
  settings.update(kwargs)
  with pytest.raises(UserInputError, match=message):
    optimization.create_optimizer(**settings)
