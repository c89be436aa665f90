"""Dropout masks of an update (albert_tf.training.update_dropout): a row's
mask depends on the update's seed and its position only, not on the slice
of the batch it is computed in; the seed is read, never drawn."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from albert_tf.layers.checkpointed_dropout import CheckpointedDropout
from albert_tf.layers.checkpointed_dropout import row_uniform
from albert_tf.layers.checkpointed_dropout import seeded
from albert_tf.training import update_dropout

SEED = tf.constant([12345, -678], tf.int64)


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("shape", [(6, 4), (6, 7), (6, 2, 3, 5), (6, 1)])
def test_a_rows_values_do_not_depend_on_the_slice(jit, shape):
  """Philox's element j comes from counter + j // 4, on CPU and in XLA:
  rows 2..4 drawn alone equal those rows of the whole draw (7 and 30
  values a row: padded to a multiple of 4)."""
  draw = tf.function(row_uniform, jit_compile=jit)
  whole = draw(tf.constant(shape), SEED, tf.constant(0), tf.constant(6))
  part_shape = (3,) + shape[1:]
  part = draw(tf.constant(part_shape), SEED, tf.constant(2), tf.constant(3))
  np.testing.assert_array_equal(part.numpy(), whole.numpy()[2:5])
  assert whole.shape == shape
  values = whole.numpy()
  assert 0.0 <= values.min() and values.max() < 1.0
  assert len(np.unique(values)) == values.size  # no row repeats another
  other = draw(tf.constant(shape), SEED + 1, tf.constant(0), tf.constant(6))
  assert not np.array_equal(other.numpy(), values)


def test_several_rows_per_example_move_with_their_example():
  """[batch * choices, ...] (multiple choice, packed slots): example 1's
  3 rows drawn alone equal rows 3..5 of the whole draw."""
  whole = row_uniform(tf.constant([12, 8]), SEED, tf.constant(0),
                      tf.constant(4))
  part = row_uniform(tf.constant([3, 8]), SEED, tf.constant(1),
                     tf.constant(1))
  np.testing.assert_array_equal(part.numpy(), whole.numpy()[3:6])


def test_dropout_in_a_slice_drops_what_the_whole_batch_drops():
  """Two dropout calls under a scope: the second batch half's outputs
  equal the whole batch's second half, and the two calls differ."""
  layer = CheckpointedDropout(0.5)
  x = tf.ones([8, 16])

  def run(rows, first):
    with seeded(SEED, tf.constant(first), tf.constant(rows)):
      return (layer(x[first:first + rows], training=True).numpy(),
              layer(x[first:first + rows], training=True).numpy())

  whole, part = run(8, 0), run(4, 4)
  np.testing.assert_array_equal(part[0], whole[0][4:])
  np.testing.assert_array_equal(part[1], whole[1][4:])
  assert not np.array_equal(whole[0], whole[1])
  assert 0.3 < (whole[0] == 0).mean() < 0.7


def test_the_update_seed_reads_the_generator_and_follows_the_step():
  generator = tf.random.Generator.from_seed(3)
  state = generator.state.numpy().copy()
  first = update_dropout.update_seed(generator, tf.constant(5)).numpy()
  np.testing.assert_array_equal(generator.state.numpy(), state)  # read only
  np.testing.assert_array_equal(
      update_dropout.update_seed(generator, tf.constant(5)).numpy(), first)
  assert not np.array_equal(
      update_dropout.update_seed(generator, tf.constant(6)).numpy(), first)
  assert update_dropout.update_seed(None, tf.constant(5)) is None


def _agreement(a, b, rate):
  """Share of positions where two uniform draws keep alike."""
  return ((a >= rate) == (b >= rate)).mean()


def test_early_exit_update_masks_are_independent_bernoulli(monkeypatch):
  """The masks of two early-exit updates (FinetuningTrainer.train_step):
  every call keeps 1 - rate, and any two masks (the L exit heads' in their
  one [batch, L, H] call, two blocks', two examples', the same call in two
  updates) keep alike as often as independent draws do, (1 - p)^2 + p^2;
  no two calls share a seed. Masks shared between the heads, or the same
  at every update, agree everywhere (1.0)."""
  from albert_tf import AlbertConfig
  from albert_tf import AlbertEncoder
  from albert_tf import optimization
  from albert_tf.layers import checkpointed_dropout
  from albert_tf.models import AlbertEarlyExitClassifier
  from albert_tf.models.albert_early_exit_classifier import early_exit_loss
  from albert_tf.training.finetuning.model import FinetuningTrainer

  draws = []

  def spy(noise_shape, seed, first_row=None, num_rows=None):
    uniform = row_uniform(noise_shape, seed, first_row, num_rows)
    draws[-1].append((tuple(seed.numpy()), uniform.numpy()))
    return uniform

  monkeypatch.setattr(checkpointed_dropout, "row_uniform", spy)
  rate, layers, batch, hidden = 0.1, 4, 16, 64
  config = AlbertConfig(vocab_size=60, embedding_size=16, hidden_size=hidden,
                        num_hidden_layers=layers, num_attention_heads=4,
                        intermediate_size=128, max_position_embeddings=32,
                        hidden_dropout_prob=rate,
                        attention_probs_dropout_prob=rate)
  tf_keras.utils.set_random_seed(0)
  model = AlbertEarlyExitClassifier(AlbertEncoder(config), 3,
                                    dropout_rate=rate)
  rng = np.random.default_rng(0)
  ids = rng.integers(4, 60, (batch, 32)).astype(np.int32)
  features = dict(input_word_ids=ids,
                  input_mask=np.ones_like(ids),
                  input_type_ids=np.zeros_like(ids))
  labels = rng.integers(0, 3, batch)
  model(features, training=False)
  trainer = FinetuningTrainer(
      model, lambda y, outputs: early_exit_loss(y, outputs, False))
  trainer.compile(optimizer=optimization.create_optimizer("adamw", 1e-3, 10))
  for _ in range(2):
    draws.append([])
    trainer.train_step((features, labels))
  first, second = draws
  # Embeddings, then per application attention probabilities, attention
  # output and feed-forward output, then the heads.
  assert len(first) == len(second) == 1 + 3 * layers + 1
  assert len({seed for seed, _ in first + second}) == 2 * len(first)
  independent = (1 - rate) ** 2 + rate ** 2

  def assert_independent(a, b):
    spread = 4 * np.sqrt(independent * (1 - independent) / a.size)
    assert abs(_agreement(a, b, rate) - independent) < spread

  for _, uniform in first + second:
    assert abs((uniform >= rate).mean() - (1 - rate)) < 4 * np.sqrt(
        rate * (1 - rate) / uniform.size)
  heads = first[-1][1]
  assert heads.shape == (batch, layers, hidden)
  for i in range(layers):
    for j in range(i):
      assert_independent(heads[:, i], heads[:, j])
  for i in range(1, batch):
    assert_independent(heads[0], heads[i])
  feed_forward = [uniform for _, uniform in first[3:-1:3]]  # (B, S, H)
  assert len(feed_forward) == layers
  for i in range(1, layers):
    assert_independent(feed_forward[0], feed_forward[i])
  for (_, a), (_, b) in zip(first, second):
    assert_independent(a, b)
