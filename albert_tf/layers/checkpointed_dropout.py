"""Dropout whose random state is saved in checkpoints, and whose masks can
be a function of (seed, call, example position)."""

import contextlib
import threading

import tensorflow as tf
import tf_keras
from tf_keras.src.saving.legacy.saved_model import save_impl
from tf_keras.src.utils import control_flow_util

# The innermost `seeded` scope of this thread: [seed, next index, rows].
_scope = threading.local()

# Philox (counter based): one call gives 4 uint32, so element j of a draw
# comes from counter + j // 4 (tests/albert_tf/layers: checked on CPU and
# XLA). Rows padded to a multiple of 4 values start on a call boundary.
_PHILOX = 1
_VALUES_PER_CALL = 4


@contextlib.contextmanager
def seeded(seed, first_row=None, num_rows=None):
  """Inside, each CheckpointedDropout call draws a stateless mask.

  The k-th dropout call (rate > 0) inside the scope draws its mask from
  `fold_in(seed, k)`: running the same code again under the same seed draws
  the same masks, as a recomputed forward pass must
  (networks/layer_loop.py). Row r of a mask depends only on that seed
  and the row's position `first_row + r` (in examples; a tensor with n rows
  per example, e.g. [batch * choices, ...], counts n per example), so an
  update cut into micro-batches or replicas draws each example's mask of
  the whole batch (albert_tf.training.update_dropout). Outside any scope,
  or with `seed` None, dropout draws from its checkpointed generator.

  Args:
    seed: int64 [2] tensor (e.g. `Generator.make_seeds(1)[:, 0]`), or None.
    first_row: int32 scalar, the position of the batch's first example
      (default: that of the enclosing scope, else 0).
    num_rows: int32 scalar, the batch's examples (default: the enclosing
      scope's, else each mask's first dimension).
  """
  previous = getattr(_scope, "state", None)
  if first_row is None and previous is not None:
    first_row, num_rows = previous[2]
  _scope.state = None if seed is None else [seed, 0, (first_row, num_rows)]
  try:
    yield
  finally:
    _scope.state = previous


def scope_rows():
  """(first_row, num_rows) of the innermost scope, or (None, None) outside
  any. A function that runs again later, outside the scope (a block under
  tf.recompute_grad reruns inside `tape.gradient`), reads them now and
  passes them to its own `seeded`, so it draws the rows it drew the first
  time."""
  state = getattr(_scope, "state", None)
  return (None, None) if state is None else state[2]


def next_seed():
  """The seed of the next dropout call in the current scope, or None.

  None while Keras traces layer call functions for a SavedModel: it traces
  each sublayer's call on its own, where the encoder's seed (a tensor of
  the enclosing trace) cannot be saved; an export needs no recomputed
  masks."""
  state = getattr(_scope, "state", None)
  if state is None or save_impl.tracing_enabled():
    return None
  seed, index, _ = state
  state[1] = index + 1
  return tf.random.experimental.stateless_fold_in(seed, index)


def row_uniform(noise_shape, seed, first_row=None, num_rows=None):
  """float32 uniform [0, 1) of `noise_shape` whose row r is a function of
  (seed, (first_row + r / n) for n rows per example) only: any contiguous
  slice of a batch draws the rows it would draw in the whole batch.

  Args:
    noise_shape: int32 [rank] (rank >= 1), rows first.
    seed: int64 [2].
    first_row, num_rows: see `seeded` (None: 0 and noise_shape[0]).
  """
  noise_shape = tf.cast(noise_shape, tf.int64)
  rows = noise_shape[0]
  per_row = tf.reduce_prod(noise_shape[1:])
  calls_per_row = (per_row + _VALUES_PER_CALL - 1) // _VALUES_PER_CALL
  first = tf.constant(0, tf.int64)
  if first_row is not None:
    per_example = rows // tf.maximum(tf.cast(num_rows, tf.int64), 1)
    first = tf.cast(first_row, tf.int64) * per_example
  # Key and counter scrambled from the seed, as tf.random.stateless_uniform
  # does; the row offset added to the counter's low word.
  key, counter = tf.raw_ops.StatelessRandomGetKeyCounter(
      seed=tf.cast(seed, tf.int64))
  counter = counter + tf.stack(
      [tf.bitcast(first * calls_per_row, tf.uint64), tf.constant(0, tf.uint64)])
  uniform = tf.raw_ops.StatelessRandomUniformV2(
      shape=tf.stack([rows, calls_per_row * _VALUES_PER_CALL]), key=key,
      counter=counter, alg=_PHILOX, dtype=tf.float32)
  return tf.reshape(uniform[:, :per_row], noise_shape)


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class CheckpointedDropout(tf_keras.layers.Dropout):
  """`tf_keras.layers.Dropout` drawing from a checkpointed tf.random.Generator.

  Keras keeps a layer's random generator out of checkpoints, so a resumed run
  would draw different dropout masks than an uninterrupted one. Holding the
  generator as an attribute puts its state variable in the checkpoint. With
  rate 0 (ALBERT v2 pretraining) no generator is made.

  Inside a `seeded(seed)` scope the mask is stateless (a function of the
  scope's seed, the call's index in the scope and each row's example
  position); the trainers derive that seed from a generator's checkpointed
  state and the update's step, so resumed runs still draw the same masks.

  Args:
    rate: float in [0, 1), as Dropout.
  """

  def __init__(self, rate, **kwargs):
    kwargs.pop("rng_type", None)
    super().__init__(rate, force_generator=rate > 0, **kwargs)
    if rate > 0:
      self._random_generator._maybe_init()
      self.rng = self._random_generator._generator

  def call(self, inputs, training=None):
    seed = next_seed() if self.rate > 0 else None
    if seed is None:
      return super().call(inputs, training=training)
    first_row, num_rows = _scope.state[2]
    if training is None:
      training = tf_keras.backend.learning_phase()

    noise_shape = self._get_noise_shape(inputs)
    if noise_shape is None:
      noise_shape = tf.shape(inputs)

    def dropped():
      uniform = row_uniform(noise_shape, seed, first_row, num_rows)
      keep = tf.cast(uniform >= self.rate, inputs.dtype)
      return inputs * keep * tf.cast(1.0 / (1.0 - self.rate), inputs.dtype)

    return control_flow_util.smart_cond(training, dropped,
                                        lambda: tf.identity(inputs))
