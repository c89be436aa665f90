"""Pretraining settings, and every check that needs only them and the config
file -- without TensorFlow.

`tools.run_pretraining` reads its flag defaults from `PretrainingParams` and
runs `check_before_building` right after parsing, before TensorFlow's ~5 s
import; `run_pretraining.build_pretraining` runs `validate_params` again for
library callers. This module must not import TensorFlow.
"""

import dataclasses
from typing import Collection, Optional

from absl import logging

from albert_common.errors import UserInputError
from albert_common.run_constants import DTYPES
from albert_common.run_constants import check_seed
from albert_tf.config import AlbertConfig


@dataclasses.dataclass(frozen=True)
class PretrainingParams:
  """Settings of a pretraining run; names and defaults as the official
  flags (the ALBERT paper's recipe: batch 4096, LAMB at 0.00176, 125k
  steps)."""

  input_file: str
  output_dir: str
  albert_config_file: str
  eval_file: str = ""
  init_checkpoint: str = ""
  train_batch_size: int = 4096
  eval_batch_size: int = 64
  max_seq_length: int = 512
  max_predictions_per_seq: int = 20
  optimizer: str = "lamb"
  learning_rate: float = 0.00176
  poly_power: float = 1.0
  weight_decay_rate: float = 0.01
  num_train_steps: int = 125000
  num_warmup_steps: int = 3125
  save_checkpoints_steps: int = 5000
  keep_checkpoint_max: int = 5
  iterations_per_loop: int = 1000
  max_eval_steps: int = 100
  strategy: str = "default"
  tpu: str = ""
  dtype: str = "float32"
  jit_compile: bool = False
  seed: Optional[int] = None
  shuffle_buffer_size: int = 10000
  # Resume the data stream where the restored step left it (see
  # data_pipeline.record_stream); False restarts it from its beginning.
  resume_data_stream: bool = True


# The default schedule's warmup share (3125 of 125000 steps: 2.5%).
WARMUP_FRACTION = (PretrainingParams.num_warmup_steps /
                   PretrainingParams.num_train_steps)


def validate_params(params: PretrainingParams, config: AlbertConfig) -> None:
  """Raises UserInputError for settings that cannot work (flags quoted)."""
  if params.max_seq_length > config.max_position_embeddings:
    raise UserInputError(
        f"--max_seq_length={params.max_seq_length} exceeds "
        f"max_position_embeddings={config.max_position_embeddings} in "
        f"{params.albert_config_file}")
  check_seed(params.seed)
  if params.dtype not in DTYPES:
    raise UserInputError(f"--dtype must be one of {sorted(DTYPES)}, "
                         f"got {params.dtype!r}")
  for name in ("train_batch_size", "eval_batch_size", "num_train_steps",
               "save_checkpoints_steps", "keep_checkpoint_max",
               "iterations_per_loop", "max_seq_length",
               "max_predictions_per_seq"):
    if getattr(params, name) <= 0:
      raise UserInputError(f"--{name} must be positive, got "
                           f"{getattr(params, name)}")
  if params.save_checkpoints_steps % params.iterations_per_loop:
    raise UserInputError(
        f"--save_checkpoints_steps ({params.save_checkpoints_steps}) must be "
        f"a multiple of --iterations_per_loop ({params.iterations_per_loop})")


def derive_warmup(params: PretrainingParams, user_set: Collection[str]
                 ) -> PretrainingParams:
  """A --num_warmup_steps left at its default but not below the
  --num_train_steps in use is scaled down with it (WARMUP_FRACTION,
  logged); a value the user set is never changed."""
  if ("num_warmup_steps" in user_set or
      params.num_warmup_steps < params.num_train_steps):
    return params
  warmup = int(params.num_train_steps * WARMUP_FRACTION)
  logging.info("using --num_warmup_steps=%d (%.3g%% of --num_train_steps, "
               "as the default schedule)", warmup, 100 * WARMUP_FRACTION)
  return dataclasses.replace(params, num_warmup_steps=warmup)


def check_before_building(params: PretrainingParams,
                          user_set: Collection[str]) -> PretrainingParams:
  """The config file and every setting checked, a warmup that does not fit
  derived (see derive_warmup); returns the params to run with.

  Raises:
    UserInputError: the first problem found.
  """
  config = AlbertConfig.from_json_file(params.albert_config_file)
  validate_params(params, config)
  params = derive_warmup(params, user_set)
  if not 0 <= params.num_warmup_steps < params.num_train_steps:
    raise UserInputError(
        f"--num_warmup_steps ({params.num_warmup_steps}) must be in "
        f"[0, num_train_steps={params.num_train_steps})")
  return params
