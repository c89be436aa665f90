"""Distillation losses against NumPy references, and a student that is the
teacher itself (k = L, dropout off) has zero distillation loss."""

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.training.distillation import losses


def _log_softmax(x):
  x = x - x.max(-1, keepdims=True)
  return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_soft_target_loss_equals_numpy_with_temperature():
  rng = np.random.default_rng(0)
  s, t = rng.normal(size=(5, 3)) * 3, rng.normal(size=(5, 3)) * 3
  for temperature in (1.0, 2.0, 4.0):
    log_p, log_q = _log_softmax(t / temperature), _log_softmax(s / temperature)
    want = temperature ** 2 * (np.exp(log_p) * (log_p - log_q)).sum(-1)
    got = losses.soft_target_loss(s, t, "classification", temperature)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
  # Multi-label: binary KL per label, mean over labels, times T^2.
  p, q = 1 / (1 + np.exp(-t / 2)), 1 / (1 + np.exp(-s / 2))
  want = 4 * (p * np.log(p / q) + (1 - p) * np.log((1 - p) / (1 - q))).mean(-1)
  np.testing.assert_allclose(
      losses.soft_target_loss(s, t, "multi_label", 2.0).numpy(), want,
      rtol=1e-4, atol=1e-6)
  np.testing.assert_allclose(
      losses.soft_target_loss(s[:, :1], t[:, :1], "regression", 2.0).numpy(),
      (s[:, 0] - t[:, 0]) ** 2, rtol=1e-5)


def test_alpha_mixes_gold_and_soft_and_unlabelled_rows_are_soft_only():
  s = np.array([[2.0, 0.0, -1.0], [0.5, 0.5, 0.0]], np.float32)
  t = np.array([[0.0, 1.0, 0.0], [1.0, -1.0, 2.0]], np.float32)
  targets = losses.pack_targets([1, -1], [1, 0], t)
  got = losses.distillation_loss(tf.constant(targets), tf.constant(s),
                                 "classification", 2.0, 0.3).numpy()
  soft = losses.soft_target_loss(s, t, "classification", 2.0).numpy()
  gold = -_log_softmax(s.astype(np.float64))[0, 1]
  np.testing.assert_allclose(got, [0.3 * soft[0] + 0.7 * gold, soft[1]],
                             rtol=1e-5)


def _softmax(x):
  e = np.exp(x - x.max(-1, keepdims=True))
  return e / e.sum(-1, keepdims=True)


def test_attention_relation_loss_equals_numpy_on_crafted_maps():
  rng = np.random.default_rng(1)
  batch, heads, seq = 2, 2, 4
  mask = np.array([[1, 1, 1, 0], [1, 1, 0, 0]], np.int32)
  bias = (1 - mask[:, None, None, :]) * -1e9
  t_probs = _softmax(rng.normal(size=(batch, heads, seq, seq)) + bias)
  s_probs = _softmax(rng.normal(size=(batch, heads, seq, seq)) + bias)
  t_values = rng.normal(size=(batch, heads, seq, 8))
  s_values = rng.normal(size=(batch, heads, seq, 4))  # narrower student

  def relation(v):
    return _softmax(v @ np.swapaxes(v, -1, -2) / np.sqrt(v.shape[-1]) + bias)

  def kl(p, q):
    terms = np.where(p > 0, p * (np.log(p + 1e-12) - np.log(q + 1e-12)), 0)
    per_row = terms.sum(-1)  # (B, N, S)
    rows = mask[:, None, :]
    return (per_row * rows).sum((1, 2)) / (rows.sum(-1)[:, 0] * heads)

  want = kl(t_probs, s_probs) + kl(relation(t_values), relation(s_values))
  got = losses.attention_relation_loss(t_probs, s_probs, t_values, s_values,
                                       mask)
  np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-6)
  assert (want > 0.05).all()
  same = losses.attention_relation_loss(t_probs, t_probs, t_values, t_values,
                                        mask)
  np.testing.assert_allclose(same.numpy(), 0.0, atol=1e-6)


@pytest.mark.parametrize("kind", ["attention_relation", "hidden_projection",
                                  "tinybert"])
def test_a_student_that_is_the_teacher_has_zero_distillation_loss(kind):
  from albert_tf.config import AlbertConfig
  from albert_tf.models.albert_classifier import AlbertClassifier
  from albert_tf.networks.albert_encoder import AlbertEncoder
  from albert_tf.training.distillation import student
  from albert_tf.training.distillation.run import distillation_loss_fn
  from albert_tf.training.distillation.settings import DistillationOptions
  config = AlbertConfig(vocab_size=50, embedding_size=8, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=32,
                        hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
  tf.random.set_seed(3)
  teacher = AlbertClassifier(AlbertEncoder(config), 3, dropout_rate=0.0)
  pupil = AlbertClassifier(AlbertEncoder(config), 3, dropout_rate=0.0)
  pupil.set_weights(teacher.get_weights())
  model = student.DistillationModel(pupil, teacher, kind)
  ids = np.random.default_rng(2).integers(3, 50, size=(4, 16))
  mask = (np.arange(16)[None] < np.array([[16], [9], [5], [12]])).astype(
      np.int32)
  inputs = dict(input_word_ids=tf.constant(ids * mask, tf.int32),
                input_mask=tf.constant(mask),
                input_type_ids=tf.zeros_like(tf.constant(mask)))
  outputs = model(inputs, training=True)
  t_logits = teacher(inputs, training=False)["logits"].numpy()
  np.testing.assert_allclose(outputs["logits"].numpy(), t_logits, atol=1e-5)
  targets = losses.pack_targets([0, 1, 2, 0], np.ones(4), t_logits)
  options = DistillationOptions(teacher="t", student_layers=2, alpha=1.0,
                                intermediate_loss=kind)
  loss = distillation_loss_fn("classification", options)(
      tf.constant(targets), outputs)
  np.testing.assert_allclose(loss.numpy(), 0.0, atol=1e-5)
  # A different student is not at zero: the loss measures something.
  noise = np.random.default_rng(5)
  pupil.encoder.set_weights([
      w + 0.3 * noise.normal(size=w.shape).astype(w.dtype)
      if w.dtype == np.float32 else w for w in pupil.encoder.get_weights()])
  loss = distillation_loss_fn("classification", options)(
      tf.constant(targets), model(inputs, training=True))
  assert (loss.numpy() > 1e-3).all()
