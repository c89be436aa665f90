"""Fine-tuning under `--strategy=multi_worker`: only the chief writes.

Every worker runs the same program. `per_worker_output_dir` gives all but
the chief a scratch output folder (output_dir.process_output_dir), and
`writes_shared_outputs` tells a task runner whether this process writes the
run's shared outputs (exports). Single-process runs are unchanged.
"""

import functools

from absl import logging
import tensorflow as tf

from albert_common import file_io
from albert_common import settings_fields
from albert_tf.training import output_dir
from albert_tf.training.finetuning import params as finetuning_params


def per_worker_output_dir(run):
  """Decorates `run(params, ...)` so that only the chief writes output_dir.

  Under `--strategy=multi_worker` every worker runs the same program; all
  but the chief (TF_CONFIG: the "chief" task, else worker 0) get params
  whose `output_dir` is their scratch directory inside it
  (output_dir.process_output_dir), so that their checkpoints, summaries,
  results and predictions do not collide with the chief's; it is removed
  when `run` returns. Single-process runs are unchanged.
  """
  @functools.wraps(run)
  def wrapper(prepared_run: finetuning_params.PreparedOrParams, *args,
              **kwargs):
    prepared_run = finetuning_params.prepared(prepared_run)
    params = prepared_run.params
    scratch = output_dir.process_output_dir(params.runtime.output_dir,
                                             _cluster_resolver(params))
    if scratch == params.runtime.output_dir:
      return run(prepared_run, *args, **kwargs)
    logging.info("this worker writes to %s (removed at the end); the chief "
                 "writes %s", scratch, params.runtime.output_dir)
    result = run(finetuning_params.PreparedFinetuning(
        settings_fields.replace(params, output_dir=scratch),
        prepared_run.config, prepared_run.tokenizer), *args, **kwargs)
    file_io.rmtree(scratch)
    return result
  return wrapper


def writes_shared_outputs(params: finetuning_params.FinetuningParams
                          ) -> bool:
  """Whether this process writes the run's shared outputs (exports)."""
  return output_dir.writes_output_dir(_cluster_resolver(params))


def _cluster_resolver(params: finetuning_params.FinetuningParams):
  """TF_CONFIG's cluster under --strategy=multi_worker; None (one process)
  otherwise. Read before the strategy exists: the decorated run builds it."""
  if params.runtime.strategy != "multi_worker":
    return None
  return tf.distribute.cluster_resolver.TFConfigClusterResolver()
