"""Fine-tuning settings, and every check that needs only them, the config
files and the SentencePiece model -- without TensorFlow.

The tools run `check_before_building` right after parsing their flags, before
importing anything that loads TensorFlow (about 5 s), so that a mistake the
flags alone show is one `error:` line within a second, and the vocabulary is
checked before any checkpoint is read. `FinetuningRunner` repeats the checks
for library callers. This module must not import TensorFlow (tested).
"""

import dataclasses
from typing import Collection, Mapping, Optional

from absl import logging

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_common.run_constants import DTYPES
from albert_common.run_constants import check_seed
from albert_tf.config import AlbertConfig
from albert_tf.exports import inspection
from data_pipeline import length_buckets

# The warmup share of train_step when no recipe gives one.
DEFAULT_WARMUP_FRACTION = 0.1


@dataclasses.dataclass(frozen=True)
class FinetuningParams:
  """Settings shared by every fine-tuning task; names as the official flags.

  Defaults are the official run_classifier.py defaults, and those of the
  tools' flags (tools/finetune_flags.py); the hyperparameters of a task's
  recipe (albert_tf.training.task_options) replace them when left unset.
  """

  output_dir: str
  spm_model_file: str = ""
  vocab_file: str = ""
  albert_config_file: str = ""
  init_checkpoint: str = ""
  init_savedmodel: str = ""
  do_lower_case: bool = True
  do_train: bool = False
  do_eval: bool = False
  do_predict: bool = False
  max_seq_length: int = 512
  train_batch_size: int = 32
  eval_batch_size: int = 8
  learning_rate: float = 5e-5
  train_step: int = 1000
  warmup_step: int = 0
  optimizer: str = "adamw"
  weight_decay_rate: float = 0.01
  poly_power: float = 1.0
  clip_norm: float = 1.0
  save_checkpoints_steps: int = 1000
  keep_checkpoint_max: int = 2
  iterations_per_loop: int = 100
  log_steps: int = 100
  strategy: str = "default"
  tpu: str = ""
  dtype: str = "float32"
  jit_compile: bool = False
  seed: Optional[int] = None
  # data_pipeline.length_buckets: "auto", "none" or e.g. "32,64,128".
  length_buckets: str = length_buckets.AUTO


def validate_params(params: FinetuningParams,
                    config: Optional[AlbertConfig] = None) -> None:
  """Raises UserInputError for inconsistent settings (flag names quoted).

  With `config`, also checks the settings that derive_defaults may derive
  (max_seq_length against the config, warmup_step against train_step).
  """
  _check_actions_and_sources(params)
  _check_numbers(params)
  _check_paths_exist(params)
  if config is not None:
    _check_against_config(params, config)


def _check_actions_and_sources(params: FinetuningParams) -> None:
  """Something to do, one source of weights, a config, a dtype it runs in."""
  if not (params.do_train or params.do_eval or params.do_predict):
    raise UserInputError(
        "at least one of --do_train, --do_eval, --do_predict must be set")
  if params.init_checkpoint and params.init_savedmodel:
    raise UserInputError("give --init_checkpoint or --init_savedmodel, "
                         "not both")
  if not params.albert_config_file and not params.init_savedmodel:
    raise UserInputError("--albert_config_file is required (or "
                         "--init_savedmodel, whose config is used)")
  if params.dtype not in DTYPES:
    raise UserInputError(f"--dtype must be one of {sorted(DTYPES)}, "
                         f"got {params.dtype!r}")
  check_seed(params.seed)
  if params.init_savedmodel and params.dtype != "float32":
    raise UserInputError("--init_savedmodel runs in float32 (the exported "
                         f"encoder's dtype); got --dtype={params.dtype}")


def _check_numbers(params: FinetuningParams) -> None:
  """Counts and sizes positive; a learning rate to train with."""
  for name in ("max_seq_length", "train_batch_size", "eval_batch_size",
               "train_step", "save_checkpoints_steps", "keep_checkpoint_max",
               "iterations_per_loop", "log_steps"):
    if getattr(params, name) <= 0:
      raise UserInputError(f"--{name} must be positive, got "
                           f"{getattr(params, name)}")
  length_buckets.parse_length_buckets(params.length_buckets,
                                      params.max_seq_length)
  if params.do_train and not params.learning_rate > 0:
    raise UserInputError(f"--learning_rate must be positive, got "
                         f"{params.learning_rate}")


def _check_paths_exist(params: FinetuningParams) -> None:
  """The files exist; --init_savedmodel is an encoder export (not its
  preprocessor, its parent folder, a serving export or a checkpoint)."""
  for name in ("spm_model_file", "vocab_file", "albert_config_file",
               "init_savedmodel"):
    path = getattr(params, name)
    if path and not file_io.exists(path):
      raise UserInputError(f"--{name}={path} does not exist")
  if params.init_savedmodel:
    inspection.check_encoder_savedmodel(params.init_savedmodel)


def _check_against_config(params: FinetuningParams,
                          config: AlbertConfig) -> None:
  """The settings derive_defaults may derive from the config or the flags."""
  if params.max_seq_length > config.max_position_embeddings:
    raise UserInputError(
        f"--max_seq_length={params.max_seq_length} exceeds "
        f"max_position_embeddings={config.max_position_embeddings} of the "
        f"model config ({params.albert_config_file or params.init_savedmodel})")
  if params.do_train and not 0 <= params.warmup_step < params.train_step:
    raise UserInputError(
        f"--warmup_step={params.warmup_step} must be in [0, --train_step="
        f"{params.train_step})")


def load_config(params: FinetuningParams) -> AlbertConfig:
  """The encoder config: --albert_config_file, else the SavedModel's asset."""
  if params.albert_config_file:
    if not file_io.exists(params.albert_config_file):
      raise UserInputError(
          f"--albert_config_file={params.albert_config_file} does not exist")
    return AlbertConfig.from_json_file(params.albert_config_file)
  path = file_io.join(params.init_savedmodel, "assets", "albert_config.json")
  if not file_io.exists(path):
    raise UserInputError(
        f"--init_savedmodel={params.init_savedmodel} has no "
        "assets/albert_config.json; pass --albert_config_file")
  return AlbertConfig.from_json_file(path)


def check_vocab_size(config: AlbertConfig, tokenizer,
                     spm_model_file: str, vocab_file: str = "") -> None:
  """A vocabulary with more entries than the model's vocab_size would feed
  out-of-range ids: a UserInputError. Fewer are allowed (vocabularies
  padded to a multiple of 128, say; the extra rows go unused).
  `tokenizer`: anything with `vocab_size` (a SentencePieceTokenizer, or a
  WordPieceTokenizer of `vocab_file` when `spm_model_file` is empty)."""
  if config.vocab_size < tokenizer.vocab_size:
    what = (f"SentencePiece model {spm_model_file} has "
            f"{tokenizer.vocab_size} pieces" if spm_model_file else
            f"--vocab_file={vocab_file} has {tokenizer.vocab_size} tokens")
    raise UserInputError(
        f"{what}, more than the model's vocab_size ({config.vocab_size})")


def make_tokenizer(params: FinetuningParams):
  """The tokenizer of --spm_model_file, else of the WordPiece --vocab_file
  (the official precedence)."""
  from data_pipeline import wordpiece_tokenization
  return wordpiece_tokenization.make_tokenizer(
      params.spm_model_file or None, params.vocab_file or None,
      params.do_lower_case)


def check_spm_model(params: FinetuningParams, config: AlbertConfig) -> None:
  """Loads the vocabulary (--spm_model_file, else --vocab_file; fast) and
  checks its size against the config's vocab_size."""
  check_vocab_size(config, make_tokenizer(params), params.spm_model_file,
                   params.vocab_file)


def derive_defaults(params: FinetuningParams, user_set: Collection[str],
                    config: AlbertConfig,
                    recipe: Optional[Mapping] = None) -> FinetuningParams:
  """Settings the user left to a default that conflicts with a flag they
  did set (or with the config) are derived from it, and logged; a value
  the user set is never changed (a conflict stays an error).

  Args:
    params: the settings, defaults filled in.
    user_set: names of the flags given on the command line.
    config: the encoder config.
    recipe: the task's defaults (its train_step / warmup_step ratio is
      kept when warmup_step is derived).

  Returns:
    params with the derived values.
  """
  changes = {}
  if ("max_seq_length" not in user_set and
      params.max_seq_length > config.max_position_embeddings):
    changes["max_seq_length"] = config.max_position_embeddings
    logging.info("using --max_seq_length=%d (max_position_embeddings of %s)",
                 config.max_position_embeddings,
                 params.albert_config_file or params.init_savedmodel)
  if ("warmup_step" not in user_set and params.do_train and
      params.warmup_step >= params.train_step):
    recipe = recipe or {}
    fraction = DEFAULT_WARMUP_FRACTION
    if recipe.get("train_step") and recipe.get("warmup_step") is not None:
      fraction = recipe["warmup_step"] / recipe["train_step"]
    changes["warmup_step"] = int(params.train_step * fraction)
    logging.info("using --warmup_step=%d (%.3g%% of --train_step, as the "
                 "default recipe)", changes["warmup_step"], 100 * fraction)
  return dataclasses.replace(params, **changes) if changes else params


def check_before_building(params: FinetuningParams,
                          user_set: Optional[Collection[str]] = None,
                          recipe: Optional[Mapping] = None
                         ) -> FinetuningParams:
  """Every check of the settings, the config file and the SentencePiece
  model, in the order a user would want (flags, config, vocabulary), with
  the defaults that conflict with the user's flags derived first.

  Args:
    params: the settings.
    user_set: flags given on the command line (None: all of them, as for
      a library caller: nothing is derived).
    recipe: the task's defaults, see derive_defaults.

  Returns:
    The params to run with.

  Raises:
    UserInputError: the first problem found.
  """
  validate_params(params)
  config = load_config(params)
  if user_set is not None:
    params = derive_defaults(params, user_set, config, recipe)
  validate_params(params, config)
  if params.spm_model_file or params.vocab_file:
    check_spm_model(params, config)
  check_init_checkpoint(params.init_checkpoint)
  return params


def check_init_checkpoint(path: str) -> None:
  """--init_checkpoint names something: a file (.safetensors), a folder, or
  a checkpoint prefix (`<path>.index`). Its contents are read (and checked
  against the config) when the model is built."""
  if path and not (file_io.exists(path) or file_io.exists(path + ".index")):
    raise UserInputError(f"--init_checkpoint={path} does not exist (no such "
                         "file or folder, nor a checkpoint prefix with an "
                         ".index file)")
