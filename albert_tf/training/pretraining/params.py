"""Pretraining settings, and every check that needs only them and the config
file -- without TensorFlow.

`tools.run_pretraining` generates its flags from `PretrainingParams`, builds
the settings and runs `prepare` right after parsing, before TensorFlow's ~5 s
import: every check, the one derived default, and the config file read once.
The `PreparedPretraining` it returns is what the library runs; a library
caller may pass plain `PretrainingParams`, prepared the same way (`prepared`).
This module must not import TensorFlow.
"""

import dataclasses
from typing import Collection, Union

from albert_common import file_io
from albert_common import settings_fields
from albert_common.errors import UserInputError
from albert_common.run_constants import DTYPES
from albert_common.run_constants import OPTIMIZERS
from albert_common.run_constants import check_seed
from albert_common.settings_fields import FlatConstructible
from albert_common.settings_fields import setting
from albert_tf import memory_plan
from albert_tf.checkpoints import configs
from albert_tf.config import AlbertConfig
from albert_tf.training import encoder_files
from albert_tf.training.runtime_params import RuntimeParams
from albert_tf.training.runtime_params import check_accumulation
from albert_tf.training.warmup import scaled_warmup
from data_pipeline.tasks import length_buckets


@dataclasses.dataclass(frozen=True, kw_only=True)
class PretrainingParams(FlatConstructible):
  """Settings of a pretraining run; names and defaults as the official
  flags (the ALBERT paper's recipe: batch 4096, LAMB at 0.00176, 125k
  steps). Each leaf field is the flag of its name
  (tools.support.settings_flags)."""

  runtime: RuntimeParams
  input_file: str = setting(
      help="Training TFRecords: comma-separated paths or globs.")
  albert_config_file: str = setting(
      "", "albert_config.json (a Hugging Face config.json is read too). "
      "Optional when --init_checkpoint is a folder holding albert_config.json"
      " (a released download, our run, an extend_vocabulary output) or "
      "config.json (a Hugging Face folder, a keras-hub preset): that file is "
      "used, and logged.")
  eval_file: str = setting("", "Held-out TFRecords for evaluation.")
  init_checkpoint: str = setting(
      "", "Warm-start weights: our checkpoint (prefix or directory), a "
      "released google-research/albert TF1 checkpoint (its folder or "
      "prefix), Hugging Face model.safetensors (file or folder), a keras-hub "
      "ALBERT preset folder (its config.json and weights; a masked-LM "
      "preset's head too) or a Model Garden checkpoint. "
      "The encoder, the MLM head and the SOP head are restored when the "
      "checkpoint has them. From our own run, its optimizer state and step "
      "too (the schedule goes on: --num_train_steps counts from the "
      "source's start), unless --restart_schedule. Ignored when "
      "--output_dir already has a checkpoint.")
  restart_schedule: bool = setting(
      False, "With --init_checkpoint from our own run: take its weights "
      "only, and start the learning-rate warm-up, LAMB's slots and the step "
      "afresh from 0 (--num_train_steps counts this run's updates). Other "
      "layouts hold no optimizer state and always start so.")
  train_batch_size: int = setting(
      4096, "Sequences per optimizer update over all replicas (computed in "
      "--gradient_accumulation_steps micro-batches).")
  eval_batch_size: int = setting(64, "Global evaluation batch size.")
  max_seq_length: int = setting(
      512, "Sequence length the TFRecords were written with.")
  max_predictions_per_seq: int = setting(
      20, "Masked positions per sequence in the TFRecords.")
  optimizer: str = setting("lamb", "Optimizer.", choices=OPTIMIZERS)
  learning_rate: float = setting(0.00176, "Peak learning rate.")
  poly_power: float = setting(1.0, "Power of the polynomial decay.")
  weight_decay_rate: float = setting(0.01, "Decoupled weight decay.")
  num_train_steps: int = setting(125000, "Training steps.")
  num_warmup_steps: int = setting(
      3125, "Linear warmup steps (if unset and not below --num_train_steps: "
      "2.5% of it).")
  save_checkpoints_steps: int = setting(
      5000, "Checkpoint (and evaluate) every this many steps.")
  keep_checkpoint_max: int = setting(5, "Checkpoints kept.")
  iterations_per_loop: int = setting(
      1000, "Steps per host loop (one tf.function call).")
  max_eval_steps: int = setting(
      100, "Evaluation batches per evaluation; -1 for the whole eval_file.")
  shuffle_buffer_size: int = setting(
      10000, "Records in the training shuffle buffer.")
  length_buckets: str = setting(
      "none", "Trim each training batch to a length bucket: batches sorted "
      "by length within windows of 16 (data_pipeline.pretraining.buckets; "
      "the same records and loss, exact resume). none: every batch at "
      "--max_seq_length (the official recipe); auto: powers of two from 32, "
      "then --max_seq_length; or increasing lengths, e.g. 128,256,512. "
      "Not with --strategy=tpu (a TPU loop needs one static shape).")
  device_memory: str = setting(
      "", "Memory per device, e.g. 16GiB or 80GB: warn at start when the "
      "memory plan (tools.model_summary) says a step will not fit.")
  resume_data_stream: bool = setting(
      True, "Resume the data stream where the restored step left it "
      "(data_pipeline.pretraining.record_stream); false restarts it from its "
      "beginning.")


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
  check_seed(params.runtime.seed)
  if params.device_memory:
    memory_plan.parse_bytes(params.device_memory)
  if params.runtime.dtype not in DTYPES:
    raise UserInputError(f"--dtype must be one of {sorted(DTYPES)}, "
                         f"got {params.runtime.dtype!r}")
  settings_fields.check_positive(
      params, ("train_batch_size", "eval_batch_size", "num_train_steps",
               "save_checkpoints_steps", "keep_checkpoint_max",
               "iterations_per_loop", "max_seq_length",
               "max_predictions_per_seq"))
  check_accumulation(params.runtime, params.train_batch_size)
  buckets = length_buckets.parse_length_buckets(params.length_buckets,
                                               params.max_seq_length)
  if len(buckets) > 1 and params.runtime.strategy == "tpu":
    raise UserInputError(
        f"--length_buckets={params.length_buckets} needs shapes that vary "
        "between steps, which a TPU loop cannot take; use "
        "--length_buckets=none with --strategy=tpu")
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
  warmup = scaled_warmup(params.num_train_steps, WARMUP_FRACTION,
                         "num_warmup_steps", "num_train_steps",
                         "default schedule")
  return dataclasses.replace(params, num_warmup_steps=warmup)


@dataclasses.dataclass(frozen=True)
class PreparedPretraining:
  """Checked settings, and what checking them read (once per run).

  Attributes:
    params: the settings to run with (derived defaults filled in).
    config: the encoder config of `params.albert_config_file`.
  """

  params: PretrainingParams
  config: AlbertConfig


def prepare(params: PretrainingParams,
            user_set: Collection[str] = ()) -> PreparedPretraining:
  """The config file read and every setting checked; a warmup that does not
  fit derived (see derive_warmup).

  Args:
    params: the settings.
    user_set: names of the settings the user gave (never derived).

  Raises:
    UserInputError: the first problem found.
  """
  params = encoder_files.with_config_file(params)
  if not file_io.exists(params.albert_config_file):
    raise UserInputError(
        f"--albert_config_file={params.albert_config_file} does not exist")
  config = configs.load_albert_config(params.albert_config_file)
  validate_params(params, config)
  params = derive_warmup(params, user_set)
  if not 0 <= params.num_warmup_steps < params.num_train_steps:
    raise UserInputError(
        f"--num_warmup_steps ({params.num_warmup_steps}) must be in "
        f"[0, num_train_steps={params.num_train_steps})")
  return PreparedPretraining(params, config)


def prepared(run: Union[PretrainingParams, PreparedPretraining]
            ) -> PreparedPretraining:
  """`run` as prepared settings: a PreparedPretraining is trusted as is,
  plain params are prepared (nothing derived)."""
  if isinstance(run, PreparedPretraining):
    return run
  return prepare(run, user_set=settings_fields.leaf_names(PretrainingParams))
