"""The intermediate losses read what the student's own forward pass
computed (layer_loop.run's per-block internals), and TinyBERT's layer
mapping loss equals a NumPy computation on crafted tensors."""

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.config import AlbertConfig
from albert_tf.networks.albert_encoder import AlbertEncoder
from albert_tf.training.distillation import losses
from albert_tf.training.distillation import student
from albert_tf.training.distillation import student_rule


def _config(**changes):
  values = dict(vocab_size=50, embedding_size=8, hidden_size=32,
                num_hidden_layers=2, num_attention_heads=4,
                intermediate_size=64, max_position_embeddings=32,
                hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
  values.update(changes)
  return AlbertConfig(**values)


def _inputs(seed=2, batch=3, seq=12):
  rng = np.random.default_rng(seed)
  lengths = np.array([seq, 7, 4][:batch])[:, None]
  mask = (np.arange(seq)[None] < lengths).astype(np.int32)
  ids = rng.integers(3, 50, size=(batch, seq)) * mask
  return dict(input_word_ids=tf.constant(ids, tf.int32),
              input_mask=tf.constant(mask),
              input_type_ids=tf.zeros([batch, seq], tf.int32)), mask


def _value_heads(encoder, sublayer_name, rows, heads):
  """NumPy: the sublayer's value projection of rows [B, S, H] split into
  heads [B, N, S, D]."""
  projection = encoder.get_layer(sublayer_name).attention.projections[2]
  hidden = rows.shape[-1]
  kernel = projection.kernel.numpy().reshape(hidden, hidden)
  bias = projection.bias.numpy().reshape(hidden)
  v = rows @ kernel + bias  # (B, S, H)
  batch, seq = rows.shape[:2]
  return v.reshape(batch, seq, heads, hidden // heads).transpose(0, 2, 1, 3)


def _relation(values, mask):
  """NumPy softmax(V V^T / sqrt(d)) over the real keys."""
  scores = values @ np.swapaxes(values, -1, -2) / np.sqrt(values.shape[-1])
  scores = scores + (1 - mask[:, None, None, :]) * -1e9
  e = np.exp(scores - scores.max(-1, keepdims=True))
  return e / e.sum(-1, keepdims=True)


def test_value_relation_with_two_inner_blocks_is_the_last_blocks_own():
  """inner_group_num=2: the last application is the second inner block,
  whose input is the first inner block's output (not the layer's input)."""
  # Wide initial weights: each block moves its rows visibly.
  config = _config(inner_group_num=2, initializer_range=0.5)
  tf.random.set_seed(4)
  encoder = AlbertEncoder(config)
  inputs, mask = _inputs()
  got = student.intermediate_outputs(encoder, inputs, training=False)
  # Independently: the Keras sublayers one after the other, in the order
  # layer 1 (inner 0, inner 1), layer 2 (inner 0), then the value
  # projection of the last block (layer 2, inner 1) in NumPy.
  x = encoder.embedding_layer(inputs["input_word_ids"],
                              inputs["input_type_ids"], training=False)
  layer_input = None
  for layer, inner in ((0, 0), (0, 1), (1, 0)):
    if inner == 0:
      layer_input = x
    name = f"group_0_inner_{inner}"
    x = encoder.get_layer(name + "_ffn")(
        encoder.get_layer(name + "_attention")(x, inputs["input_mask"]))
  want = _value_heads(encoder, "group_0_inner_1_attention", x.numpy(), 4)
  np.testing.assert_allclose(got["values"].numpy(), want, atol=1e-4)
  np.testing.assert_allclose(
      losses.value_relation(got["values"], mask).numpy(),
      _relation(want, mask), atol=1e-4)
  # The layer's input (what the old code projected) gives other values.
  wrong = _value_heads(encoder, "group_0_inner_1_attention",
                       layer_input.numpy(), 4)
  assert np.abs(wrong - want).max() > 0.1
  # Per layer, its last block's scores (TinyBERT): two layers, two blocks.
  assert len(got["layers"]) == 2 and len(got["layer_scores"]) == 2


def test_with_dropout_at_one_application_the_values_are_the_forwards(
    monkeypatch):
  """k=1 with dropout on: the values come from the embedding output the
  forward pass ran on (one embedding call, one dropout mask), not from a
  second call that draws a fresh mask."""
  config = _config(num_hidden_layers=1, hidden_dropout_prob=0.3,
                   attention_probs_dropout_prob=0.1)
  tf.random.set_seed(6)
  encoder = AlbertEncoder(config)
  inputs, mask = _inputs(seed=3)
  embedding = encoder.embedding_layer
  # Dropout is on: two calls of the embedding layer differ.
  twice = [embedding(inputs["input_word_ids"], inputs["input_type_ids"],
                     training=True).numpy() for _ in range(2)]
  assert np.abs(twice[0] - twice[1]).max() > 1e-3
  calls = []
  call = embedding.call

  def recorded(*args, **kwargs):
    out = call(*args, **kwargs)
    calls.append(out)
    return out

  monkeypatch.setattr(embedding, "call", recorded)
  got = student.intermediate_outputs(encoder, inputs, training=True)
  assert calls, "the embedding layer was not called"
  want = _value_heads(encoder, "group_0_inner_0_attention",
                      calls[0].numpy(), 4)
  np.testing.assert_allclose(got["values"].numpy(), want, atol=2e-5)
  np.testing.assert_allclose(got["embedding"].numpy(), calls[0].numpy(),
                             atol=1e-6)


def test_layer_map_is_tinyberts_uniform_mapping():
  assert student_rule.layer_map(2, 4) == [(1, 2), (2, 4)]
  assert student_rule.layer_map(3, 12) == [(1, 4), (2, 8), (3, 12)]
  assert student_rule.layer_map(1, 1) == [(1, 1)]
  with pytest.raises(ValueError):
    student_rule.layer_map(5, 12)


def _mse(teacher, student, mask):
  """NumPy: mean over hidden units, then over the real tokens."""
  per_token = ((teacher - student) ** 2).mean(-1)  # (B, S)
  return (per_token * mask).sum(-1) / mask.sum(-1)


def test_tinybert_loss_equals_numpy_on_crafted_tensors():
  rng = np.random.default_rng(7)
  batch, seq, heads, wide, narrow = 2, 5, 2, 6, 3
  mask = np.array([[1, 1, 1, 1, 0], [1, 1, 0, 0, 0]], np.float64)
  teacher_layers, student_layers = 4, 2
  t = dict(embedding=rng.normal(size=(batch, seq, wide)),
           hidden=[rng.normal(size=(batch, seq, wide))
                   for _ in range(teacher_layers)],
           scores=[rng.normal(size=(batch, heads, seq, seq)) * 3
                   for _ in range(teacher_layers)])
  s = dict(embedding=rng.normal(size=(batch, seq, narrow)),
           hidden=[rng.normal(size=(batch, seq, narrow))
                   for _ in range(student_layers)],
           scores=[rng.normal(size=(batch, heads, seq, seq)) * 3
                   for _ in range(student_layers)])
  w_e, w_h = rng.normal(size=(narrow, wide)), rng.normal(size=(narrow, wide))
  # NumPy, from the definition: embeddings through W_e; student layer m
  # against teacher layer 2m; scores over heads and real (query, key).
  want = _mse(t["embedding"], s["embedding"] @ w_e, mask)
  for m in (1, 2):
    g = 2 * m
    pairs = mask[:, None, :, None] * mask[:, None, None, :]
    diff = (t["scores"][g - 1] - s["scores"][m - 1]) ** 2 * pairs
    want = want + diff.sum((1, 2, 3)) / (heads * mask.sum(-1) ** 2)
    want = want + _mse(t["hidden"][g - 1], s["hidden"][m - 1] @ w_h, mask)

  def as_tf(tree):
    return tf.nest.map_structure(lambda a: tf.constant(a, tf.float32), tree)

  def projection(w):
    return lambda x: tf.einsum("bsi,io->bso", x, tf.constant(w, tf.float32))

  got = losses.tinybert_loss(
      as_tf(t), as_tf(s), tf.constant(mask, tf.int32),
      student_rule.layer_map(student_layers, teacher_layers),
      projection(w_e), projection(w_h)).numpy()
  np.testing.assert_allclose(got, want, rtol=1e-5)
  # Another mapping (m -> m) gives another value: the mapping is used.
  other = losses.tinybert_loss(
      as_tf(t), as_tf(s), tf.constant(mask, tf.int32), [(1, 1), (2, 2)],
      projection(w_e), projection(w_h)).numpy()
  assert np.abs(other - want).min() > 1e-3


def test_tinybert_and_head_rules_are_refused_in_one_line():
  from albert_common.errors import UserInputError
  from albert_tf.training.distillation.settings import DistillationOptions
  teacher = _config(num_hidden_layers=12)
  with pytest.raises(UserInputError, match="tinybert.*5 layers must divide"):
    student_rule.student_config(teacher, DistillationOptions(
        teacher="t", student_layers=5, intermediate_loss="tinybert"))
  assert student_rule.student_config(teacher, DistillationOptions(
      teacher="t", student_layers=4,
      intermediate_loss="tinybert")).num_hidden_layers == 4
  # Five layers are fine without the layer mapping.
  assert student_rule.student_config(teacher, DistillationOptions(
      teacher="t", student_layers=5,
      intermediate_loss="hidden_projection")).num_hidden_layers == 5


def test_the_internals_under_recomputation_have_the_same_values_and_grads():
  """--recompute_layers: the recomputed blocks return the same internals
  and the same gradients through them as the plain loop."""
  config = _config(inner_group_num=2, initializer_range=0.3)
  inputs, mask = _inputs(seed=5)
  results, weights = [], None
  for recompute in (False, True):
    encoder = AlbertEncoder(config, recompute_layers=recompute)
    encoder(inputs)
    if weights is None:
      weights = encoder.get_weights()
    encoder.set_weights(weights)
    with tf.GradientTape() as tape:
      out = student.intermediate_outputs(encoder, inputs, training=True)
      loss = (tf.reduce_sum(out["values"] ** 2) +
              tf.reduce_sum(out["layer_scores"][0] ** 2) +
              tf.reduce_sum(out["embedding"] ** 2))
    grads = tape.gradient(loss, encoder.trainable_variables)
    # The pooler is not in the loss: no gradient (None) either way.
    results.append((out["values"].numpy(), [
        None if g is None else tf.convert_to_tensor(g).numpy()
        for g in grads]))
  np.testing.assert_allclose(results[0][0], results[1][0], atol=1e-5)
  for a, b in zip(results[0][1], results[1][1]):
    assert (a is None) == (b is None)
    if a is not None:
      np.testing.assert_allclose(a, b, atol=1e-4, rtol=1e-4)
  assert sum(g is not None for g in results[0][1]) >= 10
