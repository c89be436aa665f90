"""The flags every fine-tuning CLI shares, defined once.

Used by tools.run_classifier, tools.run_squad and tools.run_race:

  from tools import finetune_flags
  finetune_flags.define_shared_flags()
  flags.adopt_module_key_flags(finetune_flags)  # --help lists them
  ...
  params = finetune_flags.checked_params_from_flags(
      dict(learning_rate=3e-5, train_step=10000, warmup_step=1000,
           train_batch_size=128, max_seq_length=512))

Hyperparameters with per-task defaults (learning_rate, train_step,
warmup_step, train_batch_size, max_seq_length, save_checkpoints_steps) are
None unless given on the command line; `params_from_flags(defaults)` fills
them from the task's recipe, then from FinetuningParams' own defaults.
`checked_params_from_flags` also runs every check of the flags, the config
file and the SentencePiece model, and derives a default that conflicts with
a flag the user set -- all without TensorFlow, so that tools call it before
importing their TensorFlow modules.
"""

import dataclasses
from typing import Mapping, Optional, Set

from absl import flags

from albert_common.errors import UserInputError
from albert_common.run_constants import DTYPES
from albert_common.run_constants import OPTIMIZERS
from albert_common.run_constants import STRATEGIES
from albert_tf.training import finetuning_params

FLAGS = flags.FLAGS
# The flags' defaults: FinetuningParams' (TensorFlow-free).
DEFAULT = finetuning_params.FinetuningParams

# Flags whose default depends on the task (None = "use the task's recipe").
TASK_DEFAULTED = ("max_seq_length", "train_batch_size", "learning_rate",
                  "train_step", "warmup_step", "save_checkpoints_steps")


def define_shared_flags(flag_values=FLAGS) -> None:
  """Defines the shared flags on `flag_values` (once; later calls no-op)."""
  if "init_savedmodel" in flag_values:
    return
  _define_model_flags(flag_values)
  _define_action_flags(flag_values)
  _define_hyperparameter_flags(flag_values)
  _define_run_flags(flag_values)
  _define_length_buckets_flag(flag_values)


def _define_model_flags(flag_values) -> None:
  """The encoder: config, initial weights, vocabulary."""
  flags.DEFINE_string(
      "albert_config_file", DEFAULT.albert_config_file,
      "albert_config.json of the encoder (optional with --init_savedmodel: "
      "its assets hold one).", flag_values=flag_values)
  flags.DEFINE_string(
      "init_checkpoint", DEFAULT.init_checkpoint,
      "Warm-start weights: our checkpoint (prefix or directory), a released "
      "google-research/albert TF1 checkpoint, Hugging Face model.safetensors "
      "(file or folder) or a Model Garden checkpoint. Ignored when "
      "--output_dir already holds a checkpoint (the run resumes).",
      flag_values=flag_values)
  flags.DEFINE_string(
      "init_savedmodel", DEFAULT.init_savedmodel,
      "An exported encoder SavedModel (<export_dir>/encoder of "
      "tools.export_savedmodel), fine-tuned as a trainable hub.KerasLayer.",
      flag_values=flag_values)
  flags.DEFINE_string(
      "spm_model_file", None,
      "SentencePiece model the encoder was trained with.",
      flag_values=flag_values)
  flags.DEFINE_string(
      "vocab_file", None,
      "WordPiece vocab.txt the encoder was trained with (the Chinese "
      "ALBERTs' vocab_chinese.txt), used when --spm_model_file is not given "
      "(official precedence).",
      flag_values=flag_values)
  flags.DEFINE_bool(
      "do_lower_case", DEFAULT.do_lower_case,
      "Lowercase the input (released ALBERT models: True).",
      flag_values=flag_values)


def _define_action_flags(flag_values) -> None:
  """Where to write, and what to do."""
  flags.DEFINE_string(
      "output_dir", None,
      "Checkpoints, summaries, eval_results.json and predictions are "
      "written here.", flag_values=flag_values)
  flags.DEFINE_bool(
      "do_train", DEFAULT.do_train, "Fine-tune on the training set.",
      flag_values=flag_values)
  flags.DEFINE_bool(
      "do_eval", DEFAULT.do_eval,
      "Evaluate on the dev set at every checkpoint, keep the best, and "
      "write eval_results.json for it.", flag_values=flag_values)
  flags.DEFINE_bool(
      "do_predict", DEFAULT.do_predict,
      "Predict the test set with the best checkpoint.",
      flag_values=flag_values)


def _define_hyperparameter_flags(flag_values) -> None:
  """The recipe; TASK_DEFAULTED ones default to None (the task's value)."""
  flags.DEFINE_integer(
      "max_seq_length", None,
      "Tokens per sequence after SentencePiece (task default if unset, at "
      "most the config's max_position_embeddings).",
      flag_values=flag_values)
  flags.DEFINE_integer(
      "train_batch_size", None,
      "Global training batch size (task default if unset).",
      flag_values=flag_values)
  flags.DEFINE_integer(
      "eval_batch_size", DEFAULT.eval_batch_size,
      "Global batch size for evaluation and prediction.",
      flag_values=flag_values)
  flags.DEFINE_float(
      "learning_rate", None, "Peak learning rate (task default if unset).",
      flag_values=flag_values)
  flags.DEFINE_integer(
      "train_step", None, "Training steps (task default if unset).",
      flag_values=flag_values)
  flags.DEFINE_integer(
      "warmup_step", None,
      "Linear warmup steps (task default if unset, scaled down with a "
      "--train_step it does not fit in).", flag_values=flag_values)
  flags.DEFINE_enum(
      "optimizer", DEFAULT.optimizer, OPTIMIZERS,
      "Optimizer (the official fine-tuning recipes: adamw).",
      flag_values=flag_values)
  flags.DEFINE_float(
      "weight_decay_rate", DEFAULT.weight_decay_rate,
      "Decoupled weight decay.", flag_values=flag_values)


def _define_run_flags(flag_values) -> None:
  """Checkpoints, logging, distribution and precision."""
  flags.DEFINE_integer(
      "save_checkpoints_steps", None,
      "Checkpoint and evaluate every this many steps (task default if "
      "unset).", flag_values=flag_values)
  flags.DEFINE_integer(
      "keep_checkpoint_max", DEFAULT.keep_checkpoint_max,
      "Recent checkpoints kept for resuming (the best one is kept "
      "separately in <output_dir>/best).", flag_values=flag_values)
  flags.DEFINE_integer(
      "iterations_per_loop", DEFAULT.iterations_per_loop,
      "Training steps per host call (Keras steps_per_execution).",
      flag_values=flag_values)
  flags.DEFINE_integer(
      "log_steps", DEFAULT.log_steps,
      "Log and write training summaries every this many steps.",
      flag_values=flag_values)
  flags.DEFINE_enum(
      "strategy", DEFAULT.strategy, STRATEGIES, "tf.distribute strategy.",
      flag_values=flag_values)
  flags.DEFINE_string(
      "tpu", DEFAULT.tpu, "TPU address or name for TPUClusterResolver.",
      flag_values=flag_values)
  flags.DEFINE_enum(
      "dtype", DEFAULT.dtype, DTYPES,
      "Compute dtype (mixed precision; float16 with loss scaling).",
      flag_values=flag_values)
  flags.DEFINE_bool(
      "jit_compile", DEFAULT.jit_compile, "Compile the train step with XLA.",
      flag_values=flag_values)
  flags.DEFINE_integer(
      "seed", DEFAULT.seed, "Seed for initialisation, dropout and shuffling.",
      flag_values=flag_values)


def _define_length_buckets_flag(flag_values) -> None:
  """--length_buckets (data_pipeline.length_buckets)."""
  flags.DEFINE_string(
      "length_buckets", DEFAULT.length_buckets,
      "Batch by length: each batch is drawn from one bucket and padded to "
      "its length (static shapes per bucket). auto: powers of two from 32, "
      "then --max_seq_length; none: pad everything to --max_seq_length; or "
      "increasing lengths <= --max_seq_length, e.g. 32,64,128.",
      flag_values=flag_values)


def params_from_flags(defaults: Optional[Mapping] = None, flag_values=FLAGS):
  """FinetuningParams from the parsed shared flags.

  Args:
    defaults: the task's recipe for flags left unset (TASK_DEFAULTED names,
      or any FinetuningParams field whose flag is None).
    flag_values: absl FlagValues (FLAGS).

  Returns:
    albert_tf.training.finetuning_params.FinetuningParams.
  """
  defaults = dict(defaults or {})
  values = {}
  for field in (f.name for f in
                dataclasses.fields(finetuning_params.FinetuningParams)):
    if field not in flag_values:
      if field in defaults:
        values[field] = defaults[field]
      continue
    value = getattr(flag_values, field)
    if value is None:
      value = defaults.get(field)
    if value is not None:
      values[field] = value
  if not values.get("output_dir"):
    raise UserInputError("--output_dir is required")
  if not (values.get("spm_model_file") or values.get("vocab_file")):
    raise UserInputError("give --spm_model_file (SentencePiece) or "
                         "--vocab_file (WordPiece vocab.txt)")
  from data_pipeline.wordpiece_tokenization import resolve_vocabulary
  spm_model_file, vocab_file = resolve_vocabulary(
      values.get("spm_model_file"), values.get("vocab_file"))
  values.update(spm_model_file=spm_model_file or "",
                vocab_file=vocab_file or "")
  return finetuning_params.FinetuningParams(**values)


def user_set(flag_values=FLAGS) -> Set[str]:
  """Names of the flags given on the command line."""
  return {name for name in flag_values if flag_values[name].present}


def checked_params_from_flags(defaults: Optional[Mapping] = None,
                              flag_values=FLAGS):
  """`params_from_flags`, then `finetuning_params.check_before_building`:
  the flags, the config file and the SentencePiece model are checked, and
  a default that conflicts with a flag the user set is derived from it
  (logged). Imports no TensorFlow.

  Raises:
    UserInputError: the first problem found.
  """
  params = params_from_flags(defaults, flag_values)
  return finetuning_params.check_before_building(
      params, user_set(flag_values), defaults)



def print_results(results: Optional[Mapping]) -> None:
  """The dev results on one line, `key=value` sorted by key (floats to 4
  decimals); nothing when there were none (e.g. --do_eval=false)."""
  if results:
    print(" ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}"
                   for k, v in sorted(results.items())))
