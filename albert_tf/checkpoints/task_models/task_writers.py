"""Our fine-tuned task models written as the other layouts' task models.

huggingface: model.safetensors with the head under transformers' names
  (head_tables) and a config.json whose `architectures` is the task's
  AlbertFor* class, with `num_labels`, `id2label` / `label2id` in the head's
  order and a classifier's `problem_type` ("single_label_classification",
  "multi_label_classification", "regression"). transformers builds
  AlbertForQuestionAnswering and AlbertForTokenClassification without a
  pooler, so theirs is left out (it would be an unexpected key).
official: the google-research/albert scripts' names (run_classifier's
  output_weights [C, H] / output_bias, run_squad_v1's cls/squad/...,
  run_squad_v2's start_logits/end_logits/answer_class layers, run_race's
  output_weights [1, H]) and, for a head with label names, `labels.txt`
  beside the checkpoint: one name a line, in the head's order.

A head the layout cannot hold (the official v2 head in Hugging Face; a
token classifier or a multi-label classifier in the official layout, whose
run_classifier.py has neither) is refused before anything is written
(`check_writable`); a regression head is official run_classifier's STS-B
head (output_weights [1, H], no labels.txt).
"""

from typing import Any, Dict, List

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf.checkpoints import writers
from albert_tf.checkpoints.task_models import head_tables
from albert_tf.checkpoints.task_models import task_sources
from albert_tf.checkpoints.task_models.task_sources import TaskSource
from albert_tf.config import AlbertConfig

LABELS_FILE = "labels.txt"
# The output formats our task model is written in with its head (keras_hub:
# keras_hub_presets; ours: as it is, the run's checkpoint). Another
# layout's task model is written to ours by write_ours_task_model.
TASK_FORMATS = ("huggingface", "official")
HUGGINGFACE_CLASSES = {kind: cls for cls, kind
                       in head_tables.HUGGINGFACE_ARCHITECTURES.items()
                       if kind is not None}


def check_writable(source: TaskSource, output_format: str,
                   output: str = "") -> None:
  """Raises UserInputError (one line) when `output_format` has no form for
  the source's head, or `output` cannot hold a task model (a bare
  .safetensors file has no config.json for its class and labels)."""
  head_tables.head_table(output_format, source.head)
  if output_format == "huggingface" and output.endswith(".safetensors"):
    raise UserInputError(
        f"--output_checkpoint={output}: a task model is a folder (its "
        "config.json names the AlbertFor* class and the labels); give a "
        "folder")
  if (output_format == "official" and
      source.problem_type == "multi_label_classification"):
    raise UserInputError(
        f"{source.paths.prefix} is a multi-label classifier; the official "
        "layout cannot hold one (google-research/albert's run_classifier.py "
        "scores a softmax over the labels): write it with "
        "--output_format=huggingface (problem_type "
        "multi_label_classification)")


def label_names(source: TaskSource) -> List[str]:
  """The head's label names; Hugging Face's LABEL_<i> for unnamed ones."""
  if source.labels is not None:
    return list(source.labels)
  return [f"LABEL_{i}" for i in range(source.num_labels)]


def huggingface_task_values(source: TaskSource) -> Dict[str, Any]:
  """config.json entries of the source's AlbertFor* class (module
  docstring)."""
  values: Dict[str, Any] = {
      "architectures": [HUGGINGFACE_CLASSES[source.head]]}
  if source.head in ("classifier", "token_classifier", "span"):
    names = (label_names(source) if source.head != "span"
             else ["LABEL_0", "LABEL_1"])  # start, end
    values.update(num_labels=len(names),
                  id2label={str(i): n for i, n in enumerate(names)},
                  label2id={n: i for i, n in enumerate(names)})
  if source.problem_type:
    values["problem_type"] = source.problem_type
  return values


def write_task_model(source: TaskSource, config: AlbertConfig,
                     output: str, output_format: str) -> str:
  """Writes `source` as a task model in `output_format` ("huggingface": a
  folder; "official": a checkpoint prefix); returns what was written, in
  words."""
  check_writable(source, output_format, output)
  if output_format == "huggingface":
    arrays = dict(source.arrays)
    if source.head in head_tables.HUGGINGFACE_WITHOUT_POOLER:
      for name in ("pooler/kernel", "pooler/bias"):
        arrays.pop(name, None)
    file = writers.write_huggingface(arrays, config, output, source.head,
                                     huggingface_task_values(source))
    return f"{file} ({HUGGINGFACE_CLASSES[source.head]})"
  writers.write_official(source.arrays, config, output, source.head)
  where = output
  if source.labels is not None:
    labels_file = file_io.join(file_io.dirname(output) or ".", LABELS_FILE)
    file_io.write_atomic(labels_file, "".join(f"{n}\n" for n in source.labels))
    where += f" + {labels_file}"
  return where


# Hugging Face problem_type -> labels.json task type.
_TASK_TYPES = {v: k for k, v in task_sources.PROBLEM_TYPES.items()}


def write_ours_task_model(weights, config: AlbertConfig,
                          output_prefix: str) -> str:
  """Writes another layout's task model (reading.readers.Weights with a
  `head`) in our task layout: the checkpoint a fine-tuning run writes
  (writers.write_ours_task_model), albert_config.json and, for a
  classifier or token classifier, labels.json (the names in the head's
  order, the task type) beside it; the fine-tuning tools read the folder
  back with its head (task_sources). Returns what was written, in words.

  Raises:
    UserInputError: a head whose kind the source does not tell (an official
      [1, H] head: run_classifier's regression or run_race's), or a
      partial one.
  """
  from albert_tf.checkpoints.task_models import task_heads
  from data_pipeline.tasks import label_list as label_list_lib
  head = weights.head
  kinds = head.kinds
  if len(kinds) != 1:
    raise UserInputError(
        f"{head.where} holds {head.describe()}, which our task layout "
        f"cannot tell apart ({' or '.join(kinds) or 'no head of ours'}): "
        "give the source itself to the fine-tuning tool as "
        "--init_checkpoint")
  kind = kinds[0]
  table = head_tables.head_table(head.layout, kind)
  task_heads.check_kind(head, kind)
  num_labels = task_heads.stored_labels(head, table)
  arrays = dict(weights.arrays)
  arrays.update(task_heads.fit_head(head, kind, config.hidden_size,
                                    num_labels, task_heads.HeadRequest()))
  fresh = () if "pooler/kernel" in arrays else ("pooler/",)
  writers.write_ours_task_model(arrays, config, output_prefix, kind,
                                num_labels, fresh)
  folder = file_io.dirname(output_prefix) or "."
  config.to_json_file(file_io.join(folder, "albert_config.json"))
  where = f"{output_prefix} (tf.train.Checkpoint(model=...), {kind} head)"
  if kind in ("classifier", "token_classifier"):
    task_type = ("token_classification" if kind == "token_classifier" else
                 _TASK_TYPES.get(head.problem_type) or (
                     "regression" if num_labels == 1 else "classification"))
    labels = tuple(head.labels or ()) if task_type != "regression" else ()
    where += "; " + label_list_lib.write(
        folder, label_list_lib.LabelList(task_type, labels))
    if task_type != "regression" and not labels:
      hf = (f"; {task_heads.HF_DEFAULT_NAMES}" if head.layout == "huggingface"
            else "")
      where += (f" ({num_labels} labels without names{hf}: a fine-tuning "
                "tool started from the folder needs --label_names in the "
                "head's order, or a labels.txt beside the checkpoint)")
  file_io.write_json_atomic(
      task_sources.conversion_path(output_prefix),
      {"source": weights.path, "layout": weights.format, "head": kind,
       "new": ["pooler"] if fresh else []})
  where += f"; {task_sources.conversion_path(output_prefix)}"
  if fresh:
    where += ("; the source has no pooler: a new one, recorded there (a "
              "classifier or multiple-choice head started from the folder "
              "says so)")
  return where
