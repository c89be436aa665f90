"""The update a pretraining step and a fine-tuning step share: gradients
summed over the replicas, unscaled, clipped to a global norm and applied;
and the stop on a NaN/Inf loss."""

from typing import List

import tensorflow as tf

from albert_common.errors import UserInputError
from albert_tf.training.mixed_precision import is_loss_scaled


class NonFiniteLossError(UserInputError):
  """The training loss became NaN or Inf."""


def apply_clipped_gradients(optimizer, grads: List[tf.Tensor],
                            variables: List[tf.Variable],
                            clip_norm: float) -> tf.Tensor:
  """One replica's update, in replica context.

  Each replica's loss is its share of the global-batch loss, so the sum of
  the replicas' gradients is the global gradient; it is unscaled (float16),
  clipped to global norm `clip_norm` after the all-reduce (as the official
  optimizer clips the whole batch's gradient) and applied without a second
  aggregation.

  Args:
    optimizer: the run's optimizer (LossScaleOptimizer-wrapped for float16).
    grads: this replica's gradients of its `scaled_loss`, one per variable.
    variables: the trainable variables, in the order of `grads`.
    clip_norm: the global norm to clip to.

  Returns:
    The global gradient norm before clipping, a float32 scalar.
  """
  context = tf.distribute.get_replica_context()
  grads = context.all_reduce(tf.distribute.ReduceOp.SUM, grads)
  if is_loss_scaled(optimizer):
    grads = optimizer.get_unscaled_gradients(grads)
  grads, norm = tf.clip_by_global_norm(grads, clip_norm,
                                       use_norm=global_norm(grads))
  optimizer.apply_gradients(zip(grads, variables),
                            experimental_aggregate_gradients=False)
  return norm


def global_norm(grads: List[tf.Tensor]) -> tf.Tensor:
  """The global norm of the summed gradient. tf.clip_by_global_norm's own
  counts an IndexedSlices gradient (an embedding lookup's) by its rows, so a
  row gathered n times adds n squared parts instead of the square of their
  sum (token type embeddings: 2 rows gathered batch * seq times; the norm
  was about 1% high in a tiny model); such gradients are made dense for the
  norm (static shape: XLA compiles it), and stay sparse for the update."""
  return tf.linalg.global_norm(
      [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g
       for g in grads])


def current_learning_rate(optimizer) -> tf.Tensor:
  """The learning rate at the optimizer's current step (schedules called)."""
  schedule = optimizer.learning_rate
  if callable(schedule):
    return schedule(optimizer.iterations)
  return tf.convert_to_tensor(schedule)
