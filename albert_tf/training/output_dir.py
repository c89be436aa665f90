"""A run's output directory: checked writable before anything is built;
under `--strategy=multi_worker` only the chief writes it, every other worker
its own scratch directory inside it, removed at the end; results files
written whole (sorted keys, atomic)."""

from typing import Dict, Optional

import tensorflow as tf

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf.training import strategy as strategy_lib

# A non-chief worker's scratch directory: <output_dir>/.worker_<type>_<index>
# (a task's type and index name it uniquely in the cluster).
WORKER_SCRATCH_PREFIX = ".worker_"


def prepare_output_dir(path: str) -> None:
  """Creates `path` and checks that a file can be written there: a
  UserInputError naming --output_dir now rather than at the first save."""
  try:
    file_io.makedirs(path)  # A root (gs://bucket) is left alone.
    probe = file_io.join(path, ".write_test")
    file_io.write_atomic(probe, "ok")
    file_io.remove(probe)
  except (tf.errors.OpError, OSError) as e:
    raise UserInputError(f"--output_dir={path} is not writable: {e}") from e


def writes_output_dir(resolver=None) -> bool:
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
    resolver: as for `writes_output_dir`.
  """
  if writes_output_dir(resolver):
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


def write_results(path: str, results: Dict[str, float]) -> None:
  """Writes metric -> value (and `step`) as JSON with sorted keys, through
  a temporary name and a rename: never half-written."""
  file_io.write_json_atomic(path, dict(sorted(results.items())))


def step_in_checkpoint_name(path: str, default: int) -> int:
  """The step of a checkpoint prefix `.../ckpt-<step>`, else `default`."""
  try:
    return int(path.rsplit("-", 1)[1])
  except (IndexError, ValueError):
    return default
