"""NER (token classification) settings -- recipe, options, checks -- without
TensorFlow.

`NerOptions` holds run_ner's task flags. The recipe is Hugging Face's
run_ner.py (`AlbertForTokenClassification`): learning rate 5e-5, batch 32,
max_seq_length 128, 3 epochs; here the epochs become `train_step` from the
training file's sentence count, with 10% warmup and a checkpoint (and dev
evaluation) once per epoch. `ner_recipe` computes and logs it; a flag the
user sets wins. `check_ner` finds every mistake the flags alone show and
`derive_ner` derives --doc_stride when the user left it too long for
their --max_seq_length. The tool runs them before TensorFlow is imported;
run_ner runs the checks again for library callers.
"""

import dataclasses
import math
from typing import Collection, Dict

from absl import logging

from albert_common import file_io
from albert_common import settings_fields
from albert_common.errors import UserInputError
from albert_common.settings_fields import FlatConstructible
from albert_common.settings_fields import setting
from albert_tf.training.finetuning.task_settings import check_not_packed
from data_pipeline.tasks.ner import ner_files
from data_pipeline.tasks.ner import tag_schemes
from data_pipeline.tasks.ner import task_files

# Hugging Face run_ner.py's defaults (its README's CoNLL-2003 command).
NER_DEFAULTS = dict(learning_rate=5e-5, train_batch_size=32,
                    max_seq_length=128)
WARMUP_FRACTION = 0.1


@dataclasses.dataclass(frozen=True, kw_only=True)
class NerOptions(FlatConstructible):
  """Token classification settings (each leaf field is the flag of its
  name). See data_pipeline.tasks.ner for the formats and windows."""

  train_file: str = setting(
      "", "Training data: CoNLL (token ... tag per line), JSON lines "
      "(tokens / tags) or CLUENER (text / label spans).")
  dev_file: str = setting(
      "", "Dev data (--do_eval), in the training file's format and labels.")
  test_file: str = setting(
      "", "Data to predict (--do_predict), tagged or not; written back with "
      "the predicted tags as <output_dir>/test_predictions.<ext>.")
  input_format: str = setting(
      ner_files.AUTO, "Format of the files; auto: from the extension "
      "(.jsonl / .json: JSON lines, or CLUENER when records have a 'text'; "
      ".conll, .txt, .tsv, .iob, .bio: CoNLL).",
      choices=(ner_files.AUTO,) + ner_files.FORMATS)
  tag_scheme: str = setting(
      tag_schemes.AUTO, "Tag scheme of the training tags (BIO = IOB2); "
      "auto: detected. Predictions are written in it; IOBES is scored in "
      "seqeval's strict mode. CLUENER spans become tags of this scheme "
      "(auto: IOB2).", choices=tag_schemes.CHOICES)
  doc_stride: int = setting(
      64, "Pieces between the starts of consecutive windows of a sentence "
      "longer than --max_seq_length; each word is predicted from the window "
      "where it has the most context. If unset and longer than a window: "
      "half a window.")
  num_train_epochs: float = setting(
      3.0, "Epochs of the training file that --train_step defaults to "
      "(Hugging Face's recipe).")
  dropout_prob: float = setting(
      0.1, "Dropout on the sequence output before the tag layer.")
  skip_bad_records: bool = setting(
      False, "Skip bad sentences (a tag that breaks the scheme, a line "
      "without a tag, tokens and tags of different lengths, a bad CLUENER "
      "span, a dev tag training never saw) with a warning and a count "
      "instead of failing.")
  export_dir: str = setting(
      "", "If set, export the best checkpoint as a SavedModel whose "
      "serving_default takes raw text and returns entities with character "
      "offsets (load it with albert_tf.exports.load_ner).")


def ner_recipe(params, options: NerOptions, train_sentences: int,
               user_set: Collection[str] = ()) -> Dict:
  """Hugging Face run_ner's recipe (module docstring) for a training file of
  `train_sentences` sentences, at the batch size in `params`; logged
  (values the user set are noted as theirs)."""
  recipe = dict(NER_DEFAULTS)
  if params.do_train and train_sentences:
    steps_per_epoch = math.ceil(train_sentences / params.train_batch_size)
    recipe["train_step"] = max(
        1, math.ceil(options.num_train_epochs * steps_per_epoch))
    # Warmup and checkpoints follow the --train_step in effect.
    train_step = (params.train_step if "train_step" in user_set
                  else recipe["train_step"])
    recipe.update(warmup_step=int(WARMUP_FRACTION * train_step),
                  save_checkpoints_steps=min(steps_per_epoch, train_step))
  shown = ", ".join(f"{k}={getattr(params, k)} (yours)" if k in user_set
                    else f"{k}={v}" for k, v in recipe.items())
  logging.info("run_ner recipe (Hugging Face run_ner: %g epochs of %d "
               "sentences, %d%% warmup, a checkpoint per epoch): %s",
               options.num_train_epochs, train_sentences,
               WARMUP_FRACTION * 100, shown)
  return recipe


def derive_ner(params, options: NerOptions,
               user_set: Collection[str]) -> NerOptions:
  """--doc_stride left at its default but longer than a window
  (--max_seq_length - 2) becomes half a window (logged)."""
  window = params.max_seq_length - 2
  if "doc_stride" not in user_set and options.doc_stride > window:
    value = max(window // 2, 1)
    logging.info("using --doc_stride=%d (half of --max_seq_length - 2)",
                 value)
    return dataclasses.replace(options, doc_stride=value)
  return options


def check_ner(params, options: NerOptions) -> None:
  """UserInputError for NER settings that cannot work (flags quoted)."""
  check_not_packed(params, "NER's token-level windows")
  for name, needed, action in (("train_file", params.do_train, "--do_train"),
                               ("dev_file", params.do_eval, "--do_eval"),
                               ("test_file", params.do_predict,
                                "--do_predict")):
    path = getattr(options, name)
    if needed and not path:
      raise UserInputError(f"{action} needs --{name}")
    if needed and not file_io.isfile(path):
      raise UserInputError(f"--{name}={path} does not exist")
  settings_fields.check_positive(options, ("doc_stride", "num_train_epochs"))
  if params.max_seq_length < 3:
    raise UserInputError(f"--max_seq_length={params.max_seq_length} leaves "
                         "no room for a word between [CLS] and [SEP]")
  if not 0 <= options.dropout_prob < 1:
    raise UserInputError(f"--dropout_prob must be in [0, 1), got "
                         f"{options.dropout_prob}")


def read_files(params, options: NerOptions) -> task_files.TaskFiles:
  """The files the run uses (--do_train: --train_file, ...), read and
  checked, and its labels (data_pipeline.tasks.ner.task_files)."""
  return task_files.read_task_files(
      params.runtime.output_dir,
      train_file=options.train_file if params.do_train else "",
      dev_file=options.dev_file if params.do_eval else "",
      test_file=options.test_file if params.do_predict else "",
      input_format=options.input_format, tag_scheme=options.tag_scheme,
      label_names=params.label_names,
      skip_bad_records=options.skip_bad_records,
      head_labels=_source_tags(params))


def _source_tags(params):
  """The tags of the token classifier the run starts from, in its head's
  order: a NER run dir's or export's of ours (its labels.json), a Hugging
  Face AlbertForTokenClassification folder's (its id2label); else None."""
  folder = params.init_checkpoint
  if not (params.init_head and folder) or (
      file_io.exists(file_io.join(params.runtime.output_dir, "checkpoint"))):
    return None
  from albert_tf.checkpoints.task_models import source_paths  # no TF
  saved = source_paths.saved_labels(folder)
  if saved is not None:
    return (list(saved.labels) if saved.task_type == task_files.TASK_TYPE
            else None)
  if not file_io.isdir(folder):
    return None
  from albert_tf.checkpoints.task_models import task_heads
  info = task_heads.huggingface_info(file_io.join(folder, "config.json"))
  if info.get("architecture") != "AlbertForTokenClassification":
    return None
  return info.get("labels")
