"""Gradient accumulation inside one step: K micro-batches, one update.

The input keeps producing the update's whole batch (so length buckets and
packing give the same examples at the same padding); the replica step splits
its per-replica batch into K equal slices along axis 0 and loops over them in
the graph (`tf.while_loop`, static slice shapes, no host round trip per
micro-batch; XLA compiles the loop). Gradients are summed in float32
accumulators, then all-reduced, unscaled, clipped and applied once
(albert_tf.training.gradient_update).

Exactness is the caller's part: each micro-batch's loss must be its share of
the whole update's loss, i.e. normalised by quantities of the whole update
(summed mask weights, example counts) computed before the loop.
"""

from typing import Callable, List, Optional, Sequence, Tuple

import tensorflow as tf

# A micro-batch's step: (micro-batch, the row of the replica's batch it
# starts at, int32) -> (gradients, one per variable, None for a variable the
# loss does not use; float32 scalars to sum over the K micro-batches).
MicroStep = Callable[[object, tf.Tensor],
                     Tuple[Sequence[Optional[tf.Tensor]],
                           Sequence[tf.Tensor]]]


def split(batch, steps: int):
  """`batch` (a nest of tensors [b, ...]) as [steps, b / steps, ...] each:
  micro-batch i is row i. Static dimensions stay static."""

  def one(x):
    static = x.shape.as_list()
    dynamic = tf.shape(x)
    dims = [d if d is not None else dynamic[i] for i, d in enumerate(static)]
    return tf.reshape(x, [steps, dims[0] // steps] + dims[1:])

  return tf.nest.map_structure(one, batch)


def micro_batch(split_batch, index: tf.Tensor):
  """Micro-batch `index` (int32 scalar tensor) of `split(batch, K)`."""
  return tf.nest.map_structure(lambda x: tf.gather(x, index), split_batch)


def accumulate(batch, steps: int, micro_step: MicroStep,
               variables: Sequence[tf.Variable], num_sums: int = 0
              ) -> Tuple[List[Optional[tf.Tensor]], List[tf.Tensor]]:
  """Runs `micro_step` on the `steps` slices of `batch` in a tf.while_loop.

  Args:
    batch: this replica's whole batch, a nest of tensors [b, ...] with b a
      multiple of `steps`.
    steps: K, the number of micro-batches (a Python int).
    micro_step: see MicroStep; it may update metrics (runs once per slice).
    variables: the variables `micro_step`'s gradients belong to, in order.
    num_sums: how many float32 scalars `micro_step` returns to be summed.

  Returns:
    (summed gradients, float32, dense [variable's shape] each, None where
    `micro_step` gave None; the summed scalars).
  """
  parts = split(batch, steps)
  micro_rows = tf.shape(tf.nest.flatten(parts)[0])[1]
  unused = set()

  def body(i, grads, sums):
    micro_grads, micro_sums = micro_step(micro_batch(parts, i),
                                         i * micro_rows)
    summed = []
    for j, (total, grad) in enumerate(zip(grads, micro_grads)):
      if grad is None:
        unused.add(j)  # traced once: a Python record of the structure
        summed.append(total)
      else:
        summed.append(total + tf.cast(tf.convert_to_tensor(grad), tf.float32))
    new_sums = [s + tf.cast(m, tf.float32) for s, m in zip(sums, micro_sums)]
    return i + 1, summed, new_sums

  zeros = [tf.zeros(v.shape, tf.float32) for v in variables]
  _, grads, sums = tf.while_loop(
      lambda i, *_: i < steps, body,
      (tf.constant(0), zeros, [tf.zeros([], tf.float32)] * num_sums),
      parallel_iterations=1)
  return [None if j in unused else g for j, g in enumerate(grads)], list(sums)
