"""What a pretraining run and a fine-tuning run share, written once.

  - precision: `--dtype` -> the encoder's Keras dtype policy
    (`DTYPE_POLICIES`), and float16's loss scaling (`with_loss_scaling`,
    `scaled_loss`);
  - the update: gradients summed over the replicas, unscaled, clipped to a
    global norm and applied (`apply_clipped_gradients`), the same in the
    Orbit pretraining step and the fine-tuning `fit` step;
  - the output directory: checked writable before anything is built
    (`prepare_output_dir`); under `--strategy=multi_worker` only the chief
    writes it, every other worker its own scratch directory inside it
    (`process_output_dir`), removed at the end;
  - the results files (`write_results`: sorted keys, atomic) and the
    NaN/Inf stop (`NonFiniteLossError`);
  - the seeds (`set_global_seeds`): any --seed in [0, 2**63).
"""

import random
from typing import Dict, List, Optional

import tensorflow as tf
import tf_keras

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf.training import strategy as strategy_lib

# --dtype (albert_common.run_constants.DTYPES) -> the Keras dtype policy of
# the encoder (None: float32). Mixed policies keep float32 variables and
# compute in 16 bits.
DTYPE_POLICIES = {"float32": None, "bfloat16": "mixed_bfloat16",
                  "float16": "mixed_float16"}

# A non-chief worker's scratch directory: <output_dir>/.worker_<type>_<index>
# (a task's type and index name it uniquely in the cluster).
WORKER_SCRATCH_PREFIX = ".worker_"


class NonFiniteLossError(UserInputError):
  """The training loss became NaN or Inf."""


# --- precision ----------------------------------------------------------------


def with_loss_scaling(optimizer, dtype: str):
  """`optimizer`, wrapped in a dynamic LossScaleOptimizer for float16 (whose
  small gradients would underflow). Build inside the strategy's scope."""
  if dtype == "float16":
    return tf_keras.mixed_precision.LossScaleOptimizer(optimizer)
  return optimizer


def is_loss_scaled(optimizer) -> bool:
  return isinstance(optimizer, tf_keras.mixed_precision.LossScaleOptimizer)


def scaled_loss(optimizer, loss: tf.Tensor) -> tf.Tensor:
  """The loss to differentiate: multiplied by the loss scale if any."""
  return optimizer.get_scaled_loss(loss) if is_loss_scaled(optimizer) else loss


# --- seeds --------------------------------------------------------------------

# TensorFlow reduces its global seed modulo 2**31 - 1 and treats a result of 0
# specially, with a Python comparison that a tensor-valued op seed (the data
# stream's per-group shuffle seeds) cannot take inside a graph. Seeds of that
# class (0, 2**31 - 1, ...) are handed to TensorFlow as this one instead.
_TF_SEED_MODULUS = 2**31 - 1
_TF_SEED_FOR_ZERO_CLASS = _TF_SEED_MODULUS - 1


def set_global_seeds(seed: int) -> None:
  """Seeds Python, NumPy, TensorFlow and tf_keras (initialisation, dropout)
  from one --seed in [0, 2**63).

  `tf_keras.utils.set_random_seed` alone refuses NumPy seeds of 2**32 and
  above, and its TensorFlow seed 0 breaks tensor seeds; but it is called
  first, because it also restarts the generator tf_keras draws unseeded
  layers' seeds from. Left alone, a generator an earlier
  `set_random_seed` call made in the process keeps running, and a second
  run (a resume in a notebook, a test after another) draws other dropout
  seeds than the first.
  """
  tf_keras.utils.set_random_seed(seed % 2**32)
  random.seed(seed)
  tf.random.set_seed(seed % _TF_SEED_MODULUS or _TF_SEED_FOR_ZERO_CLASS)


# --- the update ---------------------------------------------------------------


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
  grads, norm = tf.clip_by_global_norm(grads, clip_norm)
  optimizer.apply_gradients(zip(grads, variables),
                            experimental_aggregate_gradients=False)
  return norm


def current_learning_rate(optimizer) -> tf.Tensor:
  """The learning rate at the optimizer's current step (schedules called)."""
  schedule = optimizer.learning_rate
  if callable(schedule):
    return schedule(optimizer.iterations)
  return tf.convert_to_tensor(schedule)


# --- the output directory -----------------------------------------------------


def prepare_output_dir(path: str) -> None:
  """Creates `path` and checks that a file can be written there: a
  UserInputError naming --output_dir now rather than at the first save."""
  try:
    file_io.makedirs(path)  # A root (gs://bucket) is left alone.
    probe = file_io.join(path, ".write_test")
    with tf.io.gfile.GFile(probe, "w") as f:
      f.write("ok")
    tf.io.gfile.remove(probe)
  except (tf.errors.OpError, OSError) as e:
    raise UserInputError(f"--output_dir={path} is not writable: {e}") from e


def is_chief_process(resolver=None) -> bool:
  """Whether this process writes the run's shared outputs.

  Args:
    resolver: the cluster resolver (a MultiWorkerMirroredStrategy's
      `cluster_resolver`, or TFConfigClusterResolver()); None for a
      single-process run, whose one process is the chief. In a cluster,
      the "chief" task if there is one, else worker 0 (strategy.is_chief).
  """
  return resolver is None or strategy_lib.is_chief(resolver)


def process_output_dir(output_dir: str, resolver=None) -> str:
  """Where this process writes its checkpoints, summaries and results.

  In a multi-worker run every worker runs the same program (and saving is
  collective), but only the chief writes `output_dir`; every other worker
  writes `output_dir/.worker_<task type>_<task index>`, which the run
  removes at its end.

  Args:
    output_dir: the run's --output_dir.
    resolver: as for `is_chief_process`.
  """
  if is_chief_process(resolver):
    return output_dir
  return file_io.join(
      output_dir,
      f"{WORKER_SCRATCH_PREFIX}{resolver.task_type}_{resolver.task_id}")


def chief_latest_checkpoint(write_dir: str) -> Optional[str]:
  """For a worker's scratch directory, the chief's latest checkpoint (a
  worker whose scratch directory is new or gone starts where the chief
  is); None for any other directory."""
  write_dir = file_io.normpath(write_dir)
  if not file_io.basename(write_dir).startswith(WORKER_SCRATCH_PREFIX):
    return None
  return tf.train.latest_checkpoint(file_io.dirname(write_dir))


# --- results ------------------------------------------------------------------


def write_results(path: str, results: Dict[str, float]) -> None:
  """Writes metric -> value (and `step`) as JSON with sorted keys, through
  a temporary name and a rename: never half-written."""
  file_io.write_json_atomic(path, dict(sorted(results.items())))
