"""Fine-tuning settings, and every check that needs only them, the config
file and the vocabulary -- without TensorFlow.

The tools run `prepare` right after parsing their flags, before importing
anything that loads TensorFlow (about 5 s), so that a mistake the flags
alone show is one `error:` line within a second, and the vocabulary is
checked before any checkpoint is read. `prepare` reads the config and the
vocabulary once and hands them down in a `PreparedFinetuning`, which the
library trusts; plain `FinetuningParams` from a library caller are prepared
the same way. This module must not import TensorFlow (tested).
"""

import dataclasses
from typing import (
  Any,
  Callable,
  Collection,
  Mapping,
  Optional,
  Sequence,
  Tuple,
  Union,
)

from absl import logging

from albert_common import file_io
from albert_common import settings_fields
from albert_common.errors import UserInputError
from albert_common.run_constants import DTYPES
from albert_common.run_constants import OPTIMIZERS
from albert_common.run_constants import check_seed
from albert_common.settings_fields import FlatConstructible
from albert_common.settings_fields import setting
from albert_tf import saved_model_inspection as inspection
from albert_tf.config import AlbertConfig
from albert_tf.training import encoder_files
from albert_tf.training.runtime_params import RuntimeParams
from albert_tf.training.runtime_params import check_accumulation
from albert_tf.training.warmup import scaled_warmup
from data_pipeline.tasks import bucket_boundaries
from data_pipeline.tasks import length_buckets

# The warmup share of train_step when no recipe gives one.
DEFAULT_WARMUP_FRACTION = 0.1


@dataclasses.dataclass(frozen=True, kw_only=True)
class FinetuningParams(FlatConstructible):
  """Settings shared by every fine-tuning task; names as the official flags.

  Each leaf field is the flag of its name (tools.support.settings_flags).
  Defaults are the official run_classifier.py defaults; the `recipe` ones are
  replaced by the task's recipe (albert_tf.training.finetuning.task_settings)
  when the user leaves them unset.
  """

  runtime: RuntimeParams
  # The encoder: config, initial weights, vocabulary.
  albert_config_file: str = setting(
      "", "albert_config.json of the encoder (optional with "
      "--init_savedmodel: its assets hold one; or with an --init_checkpoint "
      "folder that holds one).")
  init_checkpoint: str = setting(
      "", "Warm-start weights: our checkpoint (prefix or directory), a "
      "released google-research/albert TF1 checkpoint, Hugging Face "
      "model.safetensors (file or folder) or a Model Garden checkpoint; a "
      "fine-tuned task model of this tool's kind, head included (also our "
      "own fine-tuning run directory or its --export_dir; their config, "
      "vocabulary and labels read from them). Ignored when --output_dir "
      "already holds a checkpoint (the run resumes).")
  init_head: bool = setting(
      True, "Restore the task head an --init_checkpoint of this tool's kind "
      "holds (a fine-tuned Hugging Face AlbertFor*, official TF1 or our "
      "model; labels matched by name); false: a fresh head on its encoder.")
  label_names: str = setting(
      "", "Label names in index order, comma-separated: of an "
      "--init_checkpoint head that names none (the official layout; else "
      "labels.txt beside it, one name a line); run_ner: of integer tags in "
      "JSON lines (O,B-PER,...; or a file, one name a line or a JSON list; "
      "unset: label_names.txt or label_names.json beside the data file).")
  init_savedmodel: str = setting(
      "", "An exported encoder SavedModel (<export_dir>/encoder of "
      "tools.export_savedmodel), fine-tuned as a trainable hub.KerasLayer.")
  spm_model_file: str = setting(
      "", "SentencePiece model the encoder was trained with (optional with "
      "--init_savedmodel: its assets hold the vocabulary; or with an "
      "--init_checkpoint folder that holds one tokenizer file).")
  vocab_file: str = setting(
      "", "WordPiece vocab.txt the encoder was trained with (the Chinese "
      "ALBERTs' vocab_chinese.txt), used when --spm_model_file is not given "
      "(official precedence).")
  do_lower_case: bool = setting(
      True, "Lowercase the input (released ALBERT models: True).")
  # What to do.
  do_train: bool = setting(False, "Fine-tune on the training set.")
  do_eval: bool = setting(
      False, "Evaluate on the dev set at every checkpoint, keep the best, "
      "and write eval_results.json for it.")
  do_predict: bool = setting(
      False, "Predict the test set with the best checkpoint.")
  # The recipe.
  max_seq_length: int = setting(
      512, "Tokens per sequence after tokenization (at most the config's "
      "max_position_embeddings).", recipe=True)
  train_batch_size: int = setting(
      32, "Examples per optimizer update over all replicas (computed in "
      "--gradient_accumulation_steps micro-batches).", recipe=True)
  eval_batch_size: int = setting(
      8, "Global batch size for evaluation and prediction.")
  learning_rate: float = setting(5e-5, "Peak learning rate.", recipe=True)
  train_step: int = setting(1000, "Training steps.", recipe=True)
  warmup_step: int = setting(
      0, "Linear warmup steps (scaled down with a --train_step it does not "
      "fit in).", recipe=True)
  optimizer: str = setting(
      "adamw", "Optimizer (the official fine-tuning recipes: adamw).",
      choices=OPTIMIZERS)
  weight_decay_rate: float = setting(0.01, "Decoupled weight decay.")
  poly_power: float = setting(1.0, "Power of the polynomial decay.")
  clip_norm: float = setting(1.0, "Gradients are clipped to this global "
                             "norm.")
  # Checkpoints and logging.
  save_checkpoints_steps: int = setting(
      1000, "Checkpoint and evaluate every this many steps.", recipe=True)
  keep_checkpoint_max: int = setting(
      2, "Recent checkpoints kept for resuming (the best one is kept "
      "separately in <output_dir>/best).")
  iterations_per_loop: int = setting(
      100, "Training steps per host call (Keras steps_per_execution).")
  log_steps: int = setting(
      100, "Log and write training summaries every this many steps.")
  length_buckets: str = setting(
      length_buckets.AUTO,
      "Batch by length: each batch is drawn from one bucket and padded to "
      "its length (static shapes per bucket). auto: at most "
      "--max_length_buckets lengths (multiples of 8, then --max_seq_length) "
      "fitted to the training set for the least padding, kept in "
      "<output_dir>/length_buckets.json for reruns, evaluation and export; "
      "pow2: powers of two from 32, then --max_seq_length; none: pad "
      "everything to --max_seq_length; or increasing lengths <= "
      "--max_seq_length, e.g. 32,64,128.")
  max_length_buckets: int = setting(
      4, "--length_buckets=auto chooses at most this many lengths (each a "
      "compiled step shape; keep it small on TPUs).")
  pack_examples: bool = setting(
      False, "Sentence-level classification (run_classifier): pack several "
      "training examples into each row of --max_seq_length (own [CLS], "
      "positions and attention each; logits as unpacked), about "
      "--train_batch_size examples a step, one static shape. Evaluation "
      "and prediction stay unpacked, in --length_buckets.")


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
  if params.runtime.dtype not in DTYPES:
    raise UserInputError(f"--dtype must be one of {sorted(DTYPES)}, "
                         f"got {params.runtime.dtype!r}")
  check_seed(params.runtime.seed)
  if params.pack_examples and params.init_savedmodel:
    raise UserInputError("--pack_examples needs the encoder built here "
                         "(--albert_config_file, --init_checkpoint): an "
                         "exported encoder (--init_savedmodel) takes no "
                         "[batch, seq, seq] attention mask")
  if params.runtime.recompute_layers and params.init_savedmodel:
    raise UserInputError("--recompute_layers needs the encoder built here "
                         "(--albert_config_file, --init_checkpoint), not an "
                         "exported encoder (--init_savedmodel)")
  if params.init_savedmodel and params.runtime.dtype != "float32":
    raise UserInputError("--init_savedmodel runs in float32 (the exported "
                         "encoder's dtype); got "
                         f"--dtype={params.runtime.dtype}")


def _check_numbers(params: FinetuningParams) -> None:
  """Counts and sizes positive; a learning rate to train with."""
  settings_fields.check_positive(
      params, ("max_seq_length", "train_batch_size", "eval_batch_size",
               "train_step", "save_checkpoints_steps", "keep_checkpoint_max",
               "iterations_per_loop", "log_steps", "max_length_buckets"))
  check_accumulation(params.runtime, params.train_batch_size)
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
    # An official albert_config.json, or the config.json of a Hugging Face
    # folder or a keras-hub preset (an --init_checkpoint folder's).
    from albert_tf.checkpoints import configs
    return configs.load_albert_config(params.albert_config_file)
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
  from data_pipeline.tokenization import factory as tokenizer_factory
  return tokenizer_factory.make_tokenizer(
      params.spm_model_file or None, params.vocab_file or None,
      params.do_lower_case)


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
    changes["warmup_step"] = scaled_warmup(
        params.train_step, fraction, "warmup_step", "train_step",
        "default recipe")
  return settings_fields.replace(params, **changes) if changes else params


@dataclasses.dataclass(frozen=True)
class PreparedFinetuning:
  """Checked settings, and what checking them read (once per run).

  Attributes:
    params: the settings to run with (derived defaults filled in).
    config: the encoder config (--albert_config_file, else the exported
      encoder's asset).
    tokenizer: the one tokenizer of the run (SentencePieceTokenizer or
      WordPieceTokenizer, from data_pipeline.tokenization.factory's
      factory); every consumer (features, exports) uses it. None when the
      settings name no vocabulary.
    source: --init_checkpoint's weights, read and checked (source_model),
      or None.
  """

  params: FinetuningParams
  config: AlbertConfig
  tokenizer: Optional[Any] = None
  source: Optional[Any] = None


def prepare(params: FinetuningParams,
            user_set: Optional[Collection[str]] = None,
            recipe: Optional[Mapping] = None,
            require_vocabulary: bool = False,
            head_kind: Optional[str] = None) -> PreparedFinetuning:
  """Every check of the settings, the config file and the vocabulary, in
  the order a user would want (settings, config, vocabulary), with the
  defaults that conflict with the user's settings derived first. The config
  and the vocabulary are read here, once.

  Args:
    params: the settings.
    user_set: settings the user gave (None: all of them, as for a library
      caller: nothing is derived).
    recipe: the task's defaults, see derive_defaults.
    require_vocabulary: a run without --spm_model_file or --vocab_file is
      an error (the tools: they tokenize raw text).
    head_kind: the tool's task head (checkpoints.head_tables): an
      --init_checkpoint is read here and its head checked against it.

  Raises:
    UserInputError: the first problem found.
  """
  params = settings_fields.replace(
      params, **encoder_files.checkpoint_folder_files(params, user_set))
  if require_vocabulary:
    params = _resolve_vocabulary(params)
  validate_params(params)
  config = load_config(params)
  if user_set is not None:
    params = derive_defaults(params, user_set, config, recipe)
  validate_params(params, config)
  tokenizer = None
  if params.spm_model_file or params.vocab_file:
    tokenizer = make_tokenizer(params)
    check_vocab_size(config, tokenizer, params.spm_model_file,
                     params.vocab_file)
  check_init_checkpoint(params.init_checkpoint)
  from albert_tf.checkpoints.task_models import source_model
  return PreparedFinetuning(params, config, tokenizer,
                            source_model.read_source(params, config,
                                                     head_kind))


def _resolve_vocabulary(params: FinetuningParams) -> FinetuningParams:
  """One vocabulary, by the official precedence (--spm_model_file first);
  with --init_savedmodel and neither, the one in the export's assets."""
  if not (params.spm_model_file or params.vocab_file) and (
      params.init_savedmodel):
    _check_paths_exist(params)  # a wrong folder is named before anything
    params = settings_fields.replace(
        params, **encoder_files.savedmodel_vocabulary(params.init_savedmodel))
  if not (params.spm_model_file or params.vocab_file):
    raise UserInputError("give --spm_model_file (SentencePiece) or "
                         "--vocab_file (WordPiece vocab.txt)")
  from data_pipeline.tokenization.factory import resolve_vocabulary
  spm_model_file, vocab_file = resolve_vocabulary(
      params.spm_model_file or None, params.vocab_file or None)
  return settings_fields.replace(params, spm_model_file=spm_model_file or "",
                                 vocab_file=vocab_file or "")


# What the library's entry points take: prepared settings, or plain ones
# (prepared on entry).
PreparedOrParams = Union[FinetuningParams, PreparedFinetuning]


def prepared(run: Union[FinetuningParams, PreparedFinetuning]
            ) -> PreparedFinetuning:
  """`run` as prepared settings: a PreparedFinetuning is trusted as is,
  plain params are prepared (nothing derived)."""
  if isinstance(run, PreparedFinetuning):
    return run
  return prepare(run)


def check_init_checkpoint(path: str) -> None:
  """--init_checkpoint names something: a file (.safetensors), a folder, or
  a checkpoint prefix (`<path>.index`). Its contents are read (and checked
  against the config) when the model is built."""
  if path and not (file_io.exists(path) or file_io.exists(path + ".index")):
    raise UserInputError(f"--init_checkpoint={path} does not exist (no such "
                         "file or folder, nor a checkpoint prefix with an "
                         ".index file)")


def check_new_export_dir(export_dir: str) -> None:
  """An --export_dir (if given) must not exist yet: checked before
  training, not after it."""
  if export_dir and file_io.exists(export_dir):
    raise UserInputError(f"--export_dir {export_dir} already exists; remove "
                         "it or choose another")


def run_length_buckets(params: FinetuningParams,
                       lengths: Optional[Callable[[], Sequence[int]]] = None,
                       source: str = "train") -> Tuple[int, ...]:
  """The length buckets of a run: --length_buckets resolved against the
  examples' token counts and the choice kept in --output_dir
  (data_pipeline.tasks.bucket_boundaries.resolve: auto fits them to
  `lengths()`, or reuses the boundaries an earlier run there chose).

  Args:
    params: the settings.
    lengths: () -> int token counts of the examples of `source` (for
      multiple choice, each question's longest choice), or None.
    source: the split they come from ("train" when training).
  """
  return bucket_boundaries.resolve(
      params.length_buckets, params.max_seq_length,
      params.max_length_buckets, params.runtime.output_dir, lengths, source)
