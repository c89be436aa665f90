"""Where and how a run executes: the settings every tool shares.

As Model Garden's `RuntimeConfig`: the strategy, the precision, XLA, the seed
and the output folder. `PretrainingParams` and `FinetuningParams` hold one as
`runtime`. TensorFlow-free (the tools check settings before importing it).
"""

import dataclasses
from typing import Optional

from albert_common.run_constants import DTYPES
from albert_common.run_constants import STRATEGIES
from albert_common.settings_fields import FlatConstructible
from albert_common.settings_fields import setting


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
