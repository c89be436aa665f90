"""Dropout masks of an update (albert_tf.training.update_dropout): a row's
mask depends on the update's seed and its position only, not on the slice
of the batch it is computed in; the seed is read, never drawn."""

import numpy as np
import pytest
import tensorflow as tf

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
