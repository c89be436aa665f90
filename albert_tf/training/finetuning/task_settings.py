"""Per-task fine-tuning settings -- recipes, options, their checks -- without
TensorFlow.

The GLUE (run_glue.sh), SQuAD and RACE recipes fill the hyperparameters a
user leaves unset; `SquadOptions` / `RaceOptions` hold the task flags.
`check_squad` / `check_race` find every mistake those flags alone show, and
`derive_squad` / `derive_race` derive a default that conflicts with a flag
the user set (logged; a value the user set is never changed). The tools run
them before TensorFlow is imported (see finetuning_params); the task runners
run the checks again for library callers.
"""

import dataclasses
from typing import Collection, Dict, Optional

from absl import logging

from albert_common import file_io
from albert_common import settings_fields
from albert_common.errors import UserInputError
from albert_common.settings_fields import FlatConstructible
from albert_common.settings_fields import setting
from data_pipeline.tasks.glue import examples as glue_examples

# --- GLUE ---------------------------------------------------------------------


def _recipe(warmup_step, learning_rate, train_step, save_checkpoints_steps,
            train_batch_size):
  return dict(warmup_step=warmup_step, learning_rate=learning_rate,
              train_step=train_step,
              save_checkpoints_steps=save_checkpoints_steps,
              train_batch_size=train_batch_size, max_seq_length=512)


# The official google-research/albert run_glue.sh recipe (ALBERT-base v1
# through TF Hub; max_seq_length 512, AdamW): warmup, learning rate, steps,
# checkpoint interval and batch size. WNLI is not in run_glue.sh; it gets
# RTE's recipe (a small NLI set).
TASK_DEFAULTS: Dict[str, Dict] = {
    "SST-2": _recipe(1256, 1e-5, 20935, 100, 32),
    "MNLI": _recipe(1000, 3e-5, 10000, 100, 128),
    "CoLA": _recipe(320, 1e-5, 5336, 100, 16),
    "QNLI": _recipe(1986, 1e-5, 33112, 200, 32),
    "QQP": _recipe(1000, 5e-5, 14000, 100, 128),
    "RTE": _recipe(200, 3e-5, 800, 100, 32),
    "STS-B": _recipe(214, 2e-5, 3598, 100, 16),
    "MRPC": _recipe(200, 2e-5, 800, 100, 32),
    "WNLI": _recipe(200, 3e-5, 800, 100, 32),
}


@dataclasses.dataclass(frozen=True, kw_only=True)
class GlueOptions(FlatConstructible):
  """GLUE-specific settings (each leaf field is the flag of its name)."""

  task_name: Optional[str] = setting(
      None, "GLUE task: CoLA, SST-2, MRPC, STS-B, QQP, MNLI, QNLI, RTE or "
      "WNLI (or give your own --train_file / --dev_file / --test_file).")
  data_dir: str = setting(
      "", "Directory with the task's GLUE TSV files (train.tsv, dev.tsv, "
      "test.tsv, ...).")
  export_dir: str = setting(
      "", "If set, export the best checkpoint as a SavedModel whose "
      "serving_default takes raw strings and returns the labels.")
  skip_malformed_rows: bool = setting(
      False, "Skip TSV rows with a wrong column count or label (with a "
      "warning) instead of failing.")


def task_defaults(task_name: str) -> Dict:
  """The run_glue.sh recipe of a task (see TASK_DEFAULTS)."""
  return dict(TASK_DEFAULTS[glue_examples.get_task(task_name).name])


def check_glue(options: GlueOptions) -> Dict:
  """The task's run_glue.sh recipe; UserInputError for an unknown task or a
  --data_dir that is not a directory."""
  if not options.task_name:
    raise UserInputError("give --task_name and --data_dir (a GLUE task), or "
                         "--train_file / --dev_file / --test_file (your own "
                         "data)")
  task = glue_examples.get_task(options.task_name)
  if not options.data_dir:
    raise UserInputError("--data_dir is required")
  if not file_io.isdir(options.data_dir):
    raise UserInputError(f"--data_dir={options.data_dir} is not a directory")
  return task_defaults(task.name)


def glue_task_type(task_name: str) -> str:
  """"regression" (STS-B) or "classification"."""
  task = glue_examples.get_task(task_name)
  return "regression" if task.is_regression else "classification"


def check_not_packed(params, what: str) -> None:
  """--pack_examples is for sentence-level classification only."""
  if getattr(params, "pack_examples", False):
    raise UserInputError(
        f"--pack_examples packs short sentence-level examples "
        f"(run_classifier); {what} are not packed: leave it unset (length "
        "buckets still apply)")


# --- SQuAD --------------------------------------------------------------------

# Paper / official README recipes (batch 48; v1.1 3649 steps, v2.0 8144).
DEFAULTS_V1 = dict(learning_rate=5e-5, train_step=3649, warmup_step=365,
                   train_batch_size=48, max_seq_length=384,
                   save_checkpoints_steps=1000)
DEFAULTS_V2 = dict(learning_rate=3e-5, train_step=8144, warmup_step=814,
                   train_batch_size=48, max_seq_length=384,
                   save_checkpoints_steps=1000)
NULL_SCORES = ("answer_class", "cls")


@dataclasses.dataclass(frozen=True, kw_only=True)
class SquadOptions(FlatConstructible):
  """SQuAD-specific settings; names as the official flags (each leaf field
  is the flag of its name). See data_pipeline's SQuAD modules for the
  windowing and post-processing they control."""

  version_2_with_negative: bool = setting(
      False, "SQuAD v2.0: some questions have no answer.")
  train_file: str = setting("", "SQuAD JSON for training.")
  predict_file: str = setting(
      "", "SQuAD JSON to evaluate (--do_eval) or predict.")
  doc_stride: int = setting(
      128, "Pieces between the starts of consecutive windows.")
  max_query_length: int = setting(
      64, "Question pieces kept (the rest is cut). If unset and too long "
      "for --max_seq_length: half of it.")
  n_best_size: int = setting(
      20, "Candidates per window and answers in nbest_predictions.json.")
  max_answer_length: int = setting(30, "Longest answer, in pieces.")
  start_n_top: int = setting(5, "v2.0 beam: start candidates.")
  end_n_top: int = setting(5, "v2.0 beam: end candidates per start.")
  null_score: str = setting(
      "answer_class", "v2.0 no-answer score: the official ALBERT "
      "answer-class head (with beam search), or BERT's [CLS] span score.",
      choices=NULL_SCORES)
  null_score_diff_threshold: Optional[float] = setting(
      None, "v2.0: answer '' above these null odds. Unset: tuned for best "
      "F1 on --predict_file (official evaluation); --do_predict alone takes "
      "the best checkpoint's tuned value.")
  dropout_prob: float = setting(
      0.1, "Dropout in the v2.0 answer-class head.")
  export_dir: str = setting(
      "", "If set, export the best checkpoint as a SavedModel whose "
      "serving_default takes raw question and context strings and returns "
      "the answer (predictions.json's).")

  @property
  def beam(self) -> bool:
    return self.version_2_with_negative and self.null_score == "answer_class"


def derive_squad(params, options: SquadOptions,
                 user_set: Collection[str]) -> SquadOptions:
  """--max_query_length left at its default but too long for the
  --max_seq_length the user chose becomes half of it (logged)."""
  if ("max_query_length" not in user_set and
      options.max_query_length + 3 >= params.max_seq_length):
    value = params.max_seq_length // 2
    logging.info("using --max_query_length=%d (half of --max_seq_length)",
                 value)
    return dataclasses.replace(options, max_query_length=value)
  return options


def check_squad(params, options: SquadOptions) -> None:
  """UserInputError for SQuAD settings that cannot work (flags quoted)."""
  check_not_packed(params, "SQuAD's windows")
  if options.null_score not in NULL_SCORES:
    raise UserInputError(f"--null_score must be one of {NULL_SCORES}, got "
                         f"{options.null_score!r}")
  if params.do_train and not options.train_file:
    raise UserInputError("--do_train needs --train_file")
  if (params.do_eval or params.do_predict) and not options.predict_file:
    raise UserInputError("--do_eval / --do_predict need --predict_file")
  settings_fields.check_positive(
      options, ("n_best_size", "max_answer_length", "start_n_top",
               "end_n_top", "max_query_length", "doc_stride"))
  if options.max_query_length + 3 >= params.max_seq_length:
    raise UserInputError(
        f"--max_seq_length ({params.max_seq_length}) must exceed "
        f"--max_query_length ({options.max_query_length}) + 3")
  if options.beam and max(options.start_n_top,
                          options.end_n_top) > params.max_seq_length:
    raise UserInputError("--start_n_top / --end_n_top exceed "
                         f"--max_seq_length={params.max_seq_length}")
  for name, needed in (("train_file", params.do_train),
                       ("predict_file", params.do_eval or params.do_predict)):
    path = getattr(options, name)
    if needed and not file_io.isfile(path):
      raise UserInputError(f"--{name}={path} does not exist")


# --- RACE ---------------------------------------------------------------------

# Official ALBERT RACE recipe (paper Table 16 / run_race flags).
RACE_DEFAULTS = dict(learning_rate=1e-5, train_step=12000, warmup_step=1000,
                     train_batch_size=32, max_seq_length=512,
                     save_checkpoints_steps=1000)


@dataclasses.dataclass(frozen=True, kw_only=True)
class RaceOptions(FlatConstructible):
  """RACE-specific settings; names as the official flags (each leaf field
  is the flag of its name)."""

  data_dir: str = setting(
      "", "RACE directory: train|dev|test/middle|high/*.txt.")
  high_only: bool = setting(False, "Use RACE-high only.")
  middle_only: bool = setting(False, "Use RACE-middle only.")
  max_qa_length: int = setting(
      128, "Pieces kept of question + option (its end). If unset and too "
      "long for --max_seq_length: half of it.")
  dropout_prob: float = setting(0.1, "Dropout on the pooled output.")
  export_dir: str = setting(
      "", "If set, export the best checkpoint as a SavedModel whose "
      "serving_default takes raw article, question and four options.")


def derive_race(params, options: RaceOptions,
                user_set: Collection[str]) -> RaceOptions:
  """--max_qa_length left at its default but too long for the
  --max_seq_length in use becomes half of it (logged)."""
  if ("max_qa_length" not in user_set and
      options.max_qa_length > params.max_seq_length - 3):
    value = params.max_seq_length // 2
    logging.info("using --max_qa_length=%d (half of --max_seq_length)",
                 value)
    return dataclasses.replace(options, max_qa_length=value)
  return options


def check_race(params, options: RaceOptions) -> None:
  """UserInputError for RACE settings that cannot work (flags quoted)."""
  check_not_packed(params, "RACE's four options of 512 tokens")
  if not options.data_dir:
    raise UserInputError("--data_dir is required")
  if not file_io.isdir(options.data_dir):
    raise UserInputError(f"--data_dir={options.data_dir} is not a directory")
  if options.high_only and options.middle_only:
    raise UserInputError("--high_only and --middle_only exclude each other")
  if not 0 < options.max_qa_length <= params.max_seq_length - 3:
    raise UserInputError(
        f"--max_qa_length ({options.max_qa_length}) must be in [1, "
        f"--max_seq_length - 3 = {params.max_seq_length - 3}]")
