"""Where and how a run executes: the settings every tool shares.

As Model Garden's `RuntimeConfig`: the strategy, the precision, XLA, the seed
and the output folder. `PretrainingParams` and `FinetuningParams` hold one as
`runtime`. TensorFlow-free (the tools check settings before importing it).
"""

import dataclasses
from typing import Optional

from absl import logging

from albert_common.run_constants import DTYPES
from albert_common.run_constants import STRATEGIES
from albert_common.settings_fields import FlatConstructible
from albert_common.settings_fields import setting
from albert_tf import memory_plan


@dataclasses.dataclass(frozen=True, kw_only=True)
class RuntimeParams(FlatConstructible):
  """Where and how a run executes (each field is the flag of its name)."""

  output_dir: str = setting(
      help="Checkpoints, summaries and results are written here (any "
      "TensorFlow filesystem, e.g. gs://).")
  strategy: str = setting("default", "tf.distribute strategy.",
                          choices=STRATEGIES)
  tpu: str = setting("", "TPU address or name for TPUClusterResolver.")
  dtype: str = setting("float32", "Compute dtype (mixed precision; float16 "
                       "with loss scaling).", choices=DTYPES)
  jit_compile: bool = setting(False, "Compile the train step with XLA.")
  recompute_layers: bool = setting(
      False, "Keep only each transformer block's input for the backward "
      "pass and recompute the rest: activation memory of one block instead "
      "of num_hidden_layers, for about one more forward pass (the same "
      "gradients and dropout masks). See tools.model_summary's memory plan.")
  seed: Optional[int] = setting(
      None, "Seed for initialisation, dropout and shuffling.")
  gradient_accumulation_steps: int = setting(
      1, "Compute each update's --train_batch_size in this many equal "
      "micro-batches (slices of the batch, looped inside the step) and "
      "apply their summed gradient once: the whole batch's update, with one "
      "micro-batch's activations in memory.")


def check_accumulation(runtime: RuntimeParams, train_batch_size: int,
                       num_replicas: int = 1) -> None:
  """memory_plan.check_division of the run's
  --gradient_accumulation_steps."""
  memory_plan.check_division(
      train_batch_size, runtime.gradient_accumulation_steps, num_replicas)


def log_update(runtime: RuntimeParams, train_batch_size: int,
               num_replicas: int, unit: str = "examples", detail: str = "",
               log: bool = True) -> None:
  """Checks --gradient_accumulation_steps against the per-replica batch
  (check_accumulation) and, with `log`, logs what one update holds.

  Args:
    unit: what a row of the batch is ("examples", "sequences of 128
      tokens").
    detail: appended to the update's size ("", ", at most ... masked
      tokens").
  """
  check_accumulation(runtime, train_batch_size, num_replicas)
  if not log:
    return
  steps = runtime.gradient_accumulation_steps
  micro = train_batch_size // max(num_replicas, 1) // steps
  logging.info(
      "one update: %d %s%s; %d replica(s), each %d micro-batch(es) of %d "
      "%s (--gradient_accumulation_steps=%d)", train_batch_size, unit, detail,
      num_replicas, steps, micro, unit.split()[0], steps)
