"""Settings of fine-tuning on one's own files -- options, recipes, checks --
without TensorFlow.

`OwnDataOptions` (tools.run_classifier --train_file/--dev_file/--test_file)
and `MultipleChoiceOptions` (tools.run_multiple_choice) hold the task flags;
`check_own_data` / `check_multiple_choice` find the mistakes those flags
alone show. The tools run them before TensorFlow is imported, and read the
training file then too, so a bad record is reported within a second.

Recipes. Hyperparameters a user leaves unset come from the closest GLUE
task's official run_glue.sh recipe (task_settings.TASK_DEFAULTS):

  regression                          STS-B
  one text, >= 20,000 training records SST-2, fewer: CoLA
  text pairs, >= 100,000               MNLI, >= 20,000: QNLI, fewer: MRPC
  (multi_label: as classification)

and multiple choice gets RACE's. `train_step` keeps the recipe's number of
epochs over the user's data: recipe steps x recipe batch / the GLUE (RACE)
training set's size (SST-2 9.9, CoLA 10.0, STS-B 10.0, MRPC 7.0, QNLI 10.1,
MNLI 3.3, RACE 4.4 epochs), times the user's records / the batch size in
use, rounded up; the warmup keeps the recipe's share of the steps. The log
says which recipe and how many steps.
"""

import dataclasses
import math
from typing import Dict, Optional, Tuple

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_common.settings_fields import FlatConstructible
from albert_common.settings_fields import setting
from albert_tf.training.finetuning import export_once
from albert_tf.training.finetuning import task_settings
from data_pipeline.corpora.record_files import RecordFileOptions
from data_pipeline.tasks.multiple_choice.examples import ChoiceColumns
from data_pipeline.tasks.own_data.examples import TASK_TYPES
from data_pipeline.tasks.own_data.examples import TextColumns

# Training records of the recipes' data sets (GLUE and RACE train splits).
RECIPE_TRAIN_SIZES = {"SST-2": 67349, "CoLA": 8551, "STS-B": 5749,
                      "MRPC": 3668, "QNLI": 104743, "MNLI": 392702,
                      "RACE": 87866}

_FILES_HELP = ("Any filesystem (gs://); the format from the extension "
               "(.csv .tsv .jsonl .json .parquet, .gz of the text ones) or "
               "--input_format.")


@dataclasses.dataclass(frozen=True, kw_only=True)
class OwnDataOptions(FlatConstructible):
  """One's own classification / regression / multi-label files (each leaf
  field is the flag of its name)."""

  train_file: str = setting(
      "", "Your training records, instead of --task_name / --data_dir. " +
      _FILES_HELP)
  dev_file: str = setting(
      "", "Your dev records, evaluated at every checkpoint (--do_eval); "
      "the best checkpoint is kept.")
  test_file: str = setting(
      "", "Records to predict (--do_predict; labels not needed) into "
      "<output_dir>/test_predictions.jsonl.")
  task_type: str = setting(
      "auto", "classification (softmax over the label names), regression "
      "(float labels, MSE), multi_label (any number of labels a record: "
      "sigmoid, binary cross-entropy). auto: multi_label for list labels, "
      "regression for numbers that are not all whole, else classification.",
      choices=TASK_TYPES)
  threshold: Optional[float] = setting(
      None, "multi_label: a label is predicted when its probability is "
      "above this (kept in labels.json and the export). Unset: the one the "
      "--init_checkpoint run or export recorded, else 0.5.")
  skip_labels: Tuple[str, ...] = setting(
      (), "Label values whose records are skipped and counted, e.g. `-` "
      "for OCNLI's records without a majority label.")
  files: RecordFileOptions = dataclasses.field(
      default_factory=RecordFileOptions)
  columns: TextColumns = dataclasses.field(default_factory=TextColumns)
  export_dir: str = setting(
      "", "If set, export the best checkpoint as a SavedModel whose "
      "serving_default takes raw strings and returns the labels.")

  @property
  def given(self) -> bool:
    """Whether any own-data file was given (else the run is GLUE's)."""
    return bool(self.train_file or self.dev_file or self.test_file)


@dataclasses.dataclass(frozen=True, kw_only=True)
class MultipleChoiceOptions(FlatConstructible):
  """One's own multiple-choice files (each leaf field is the flag of its
  name)."""

  train_file: str = setting(
      "", "Your training questions. " + _FILES_HELP)
  dev_file: str = setting(
      "", "Your dev records, evaluated at every checkpoint (--do_eval); "
      "the best checkpoint is kept.")
  test_file: str = setting(
      "", "Records to predict (--do_predict; labels not needed) into "
      "<output_dir>/test_predictions.jsonl.")
  files: RecordFileOptions = dataclasses.field(
      default_factory=RecordFileOptions)
  columns: ChoiceColumns = dataclasses.field(default_factory=ChoiceColumns)
  max_qa_length: int = setting(
      128, "Pieces kept of question + option (its end). If unset and too "
      "long for --max_seq_length: half of it.")
  dropout_prob: float = setting(0.1, "Dropout on the pooled output.")
  export_dir: str = setting(
      "", "If set, export the best checkpoint as a SavedModel whose "
      "serving_default takes raw strings and returns the labels.")


def _check_files(params, options, what: str) -> None:
  """Each action has its file, and each given file exists."""
  for action, name in (("do_train", "train_file"), ("do_eval", "dev_file"),
                       ("do_predict", "test_file")):
    path = getattr(options, name)
    if getattr(params, action) and not path:
      raise UserInputError(f"--{action} needs --{name} ({what})")
    if path and not file_io.isfile(path):
      raise UserInputError(f"--{name}={path} does not exist")
  export_once.check_export_dir(options.export_dir,
                               params.runtime.output_dir)


def check_own_data(params, options: OwnDataOptions) -> None:
  """UserInputError for own-data settings that cannot work."""
  _check_files(params, options, "your own data")
  if options.task_type not in TASK_TYPES:
    raise UserInputError(f"--task_type must be one of {TASK_TYPES}, got "
                         f"{options.task_type!r}")
  if options.threshold is not None and not 0.0 < options.threshold < 1.0:
    raise UserInputError(f"--threshold must be in (0, 1), got "
                         f"{options.threshold}")


def check_multiple_choice(params, options: MultipleChoiceOptions) -> None:
  """UserInputError for multiple-choice settings that cannot work."""
  task_settings.check_not_packed(params,
                                "a question's choices (scored together)")
  _check_files(params, options, "multiple choice")
  if not 0 < options.max_qa_length <= params.max_seq_length - 3:
    raise UserInputError(
        f"--max_qa_length ({options.max_qa_length}) must be in [1, "
        f"--max_seq_length - 3 = {params.max_seq_length - 3}]")


def closest_glue_task(task_type: str, pair: bool, num_train: int) -> str:
  """The GLUE task whose recipe fits (module docstring)."""
  if task_type == "regression":
    return "STS-B"
  if pair:
    return ("MNLI" if num_train >= 100_000 else
            "QNLI" if num_train >= 20_000 else "MRPC")
  return "SST-2" if num_train >= 20_000 else "CoLA"


def recipe_epochs(name: str, recipe: Dict) -> float:
  """Epochs the recipe trains over its own data set."""
  return (recipe["train_step"] * recipe["train_batch_size"] /
          RECIPE_TRAIN_SIZES[name])


def scaled_recipe(name: str, recipe: Dict, num_train: int,
                  train_batch_size: Optional[int] = None
                 ) -> Tuple[Dict, str]:
  """(the recipe with train_step and warmup_step for `num_train` records,
  a line for the log saying so).

  Args:
    name: the recipe's task ("SST-2", ..., "RACE").
    recipe: its settings (train_step, warmup_step, train_batch_size, ...).
    num_train: the user's training records.
    train_batch_size: the batch size in use when the user set one.
  """
  recipe = dict(recipe)
  batch = train_batch_size or recipe["train_batch_size"]
  epochs = recipe_epochs(name, recipe)
  steps = max(1, math.ceil(epochs * num_train / batch))
  share = recipe["warmup_step"] / recipe["train_step"]
  recipe.update(train_step=steps, warmup_step=int(share * steps))
  line = (f"recipe of {name} (run_glue.sh / RACE: learning rate "
          f"{recipe['learning_rate']:g}, warmup {share:.0%}, batch "
          f"{recipe['train_batch_size']}, max_seq_length "
          f"{recipe['max_seq_length']}); train_step {steps} = its "
          f"{epochs:.1f} epochs x {num_train} records / batch {batch}")
  return recipe, line


def own_data_recipe(task_type: str, pair: bool, num_train: int,
                    train_batch_size: Optional[int] = None
                   ) -> Tuple[Dict, str]:
  """The recipe of an own-data classifier (module docstring) and its log
  line."""
  name = closest_glue_task(task_type, pair, num_train)
  return scaled_recipe(name, task_settings.TASK_DEFAULTS[name], num_train,
                       train_batch_size)


def multiple_choice_recipe(num_train: int,
                           train_batch_size: Optional[int] = None
                          ) -> Tuple[Dict, str]:
  """RACE's recipe over `num_train` questions, and its log line."""
  return scaled_recipe("RACE", task_settings.RACE_DEFAULTS, num_train,
                       train_batch_size)


def derive_multiple_choice(params, options: MultipleChoiceOptions,
                           user_set) -> MultipleChoiceOptions:
  """--max_qa_length left at its default but too long for the
  --max_seq_length in use becomes half of it (as RACE's)."""
  race = task_settings.derive_race(
      params, task_settings.RaceOptions(max_qa_length=options.max_qa_length),
      user_set)
  return dataclasses.replace(options, max_qa_length=race.max_qa_length)


def _batch_size_in_use(params, user_set) -> Optional[int]:
  return params.train_batch_size if "train_batch_size" in user_set else None


def read_own_training(params, options: OwnDataOptions, user_set
                     ) -> Tuple[Optional[object], Dict]:
  """(the training file read, the recipe for it) when training, else
  (None, {}): read before TensorFlow, so a bad record is reported at once.
  Logs the recipe chosen and its train_step."""
  check_own_data(params, options)
  if not params.do_train:
    return None, {}
  from absl import logging

  from data_pipeline.tasks.own_data import examples as own_examples
  train = own_examples.read_text_file(
      options.train_file, options.files, options.columns, options.task_type,
      "required", options.skip_labels)
  recipe, line = own_data_recipe(train.task_type, "text_b" in train.columns,
                                 len(train.examples),
                                 _batch_size_in_use(params, user_set))
  logging.info("%s: %d %s records; defaults: %s", options.train_file,
               len(train.examples), train.task_type, line)
  return train, recipe


def read_choice_training(params, options: MultipleChoiceOptions, user_set
                        ) -> Tuple[Optional[object], Dict]:
  """As read_own_training, for multiple choice (RACE's recipe)."""
  if not params.do_train:
    return None, {}
  if not options.train_file:
    raise UserInputError("--do_train needs --train_file (multiple choice)")
  from absl import logging

  from data_pipeline.tasks.multiple_choice import examples as choice_examples
  train = choice_examples.read_choice_file(options.train_file, options.files,
                                           options.columns)
  recipe, line = multiple_choice_recipe(len(train.examples),
                                        _batch_size_in_use(params, user_set))
  logging.info("%s: %d questions, %d choices; defaults: %s",
               options.train_file, len(train.examples), train.num_choices,
               line)
  return train, recipe
