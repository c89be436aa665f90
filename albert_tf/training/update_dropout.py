"""Dropout masks of an update that do not depend on how it is computed.

A trainer computes one update in R replicas and K micro-batches; with
dropout drawn per call, each replica and each micro-batch would draw masks
of its own, and the update would change with R and K. Instead each
update has one seed (a function of a checkpointed generator's state and
the optimizer's step: the same on every replica, again after a resume),
and each example's masks are a function of that seed, the dropout call
and the example's position in the update's batch
(layers.checkpointed_dropout.`row_uniform`): replica r's micro-batch k
starts at r * (per-replica rows) + k * (micro-batch rows), as
`experimental_distribute_dataset` and `distribute_datasets_from_function`
hand replica r the r-th contiguous part of the global batch (a packed row
is one position).

An encoder loaded from a SavedModel (hub.KerasLayer, --init_savedmodel)
runs its own dropout inside the SavedModel: only the task head's masks
follow the update's seed there.
"""

import contextlib
from typing import Optional

import tensorflow as tf

from albert_tf.layers.checkpointed_dropout import CheckpointedDropout
from albert_tf.layers.checkpointed_dropout import seeded


def seed_generator(model) -> Optional[tf.random.Generator]:
  """The generator of the model's first dropout with rate > 0 (in the
  order of `model.submodules`), or None without one. Its state is in the
  model's checkpoints; under an update scope it is never drawn from, so
  it stays the run's key."""
  for module in model.submodules:
    if isinstance(module, CheckpointedDropout) and module.rate > 0:
      return module.rng
  return None


def update_seed(generator: Optional[tf.random.Generator],
                step: tf.Tensor) -> Optional[tf.Tensor]:
  """int64 [2], the seed of update `step` (the optimizer's iterations), or
  None for None: the generator's state folded with the step, read (never
  advanced), so every replica and a resumed run compute the same seed."""
  if generator is None:
    return None
  state = tf.cast(generator.state, tf.int64)  # (3,) Philox, (2,) ThreeFry
  seed = state[:2]
  for index in range(2, state.shape[0]):
    seed = tf.random.experimental.stateless_fold_in(seed, state[index])
  return tf.random.experimental.stateless_fold_in(
      seed, tf.cast(step, tf.int64))


def replica_first_row(rows) -> tf.Tensor:
  """int32, the position in the global batch of this replica's first row,
  for a per-replica batch of `rows` rows (replica context)."""
  context = tf.distribute.get_replica_context()
  replica = 0 if context is None else context.replica_id_in_sync_group
  return tf.cast(replica, tf.int32) * tf.cast(rows, tf.int32)


@contextlib.contextmanager
def update_scope(seed: Optional[tf.Tensor], first_row, num_rows):
  """Inside, dropout draws the masks of the rows `first_row` ...
  `first_row + num_rows - 1` of the update whose seed is `seed`; nothing
  changes for `seed` None."""
  if seed is None:
    yield
    return
  with seeded(seed, tf.cast(first_row, tf.int32),
              tf.cast(num_rows, tf.int32)):
    yield
