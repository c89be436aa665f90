"""The label list of an --init_checkpoint classifier.

A fine-tuned classifier (a Hugging Face AlbertForSequenceClassification
folder, an official run_classifier.py checkpoint) fixes the labels of the
run that continues or scores it: its names in its head's order (id2label;
--label_names; labels.txt beside an official checkpoint), its task type
(Hugging Face `problem_type`; one output: regression). run_classifier on
one's own files takes them instead of the training file's sorted names,
and a file label the head does not know stops the run in one line.
"""

from typing import Iterable, Optional, Tuple

from albert_common.errors import UserInputError
from albert_tf.checkpoints.task_models import head_tables
from albert_tf.checkpoints.task_models import task_heads
from data_pipeline.tasks.label_list import DEFAULT_THRESHOLD
from data_pipeline.tasks.label_list import LabelList

_HF_TASK_TYPES = {"regression": "regression",
                  "multi_label_classification": "multi_label",
                  "single_label_classification": "classification"}


def multi_label_threshold(given: Optional[float],
                          source) -> Tuple[float, str]:
  """(the decision threshold of a multi-label run, where it comes from in
  words): --threshold when given (`given`), else the one the source's run
  or export recorded (its labels.json), else DEFAULT_THRESHOLD.

  Args:
    given: --threshold, or None when unset.
    source: reading.readers.Weights of --init_checkpoint, or None.
  """
  if given is not None:
    return given, "--threshold"
  head = None if source is None else source.head
  if head is not None and head.threshold is not None:
    return head.threshold, f"recorded with --init_checkpoint={head.where}"
  return DEFAULT_THRESHOLD, "the default" + (
      f"; --init_checkpoint={head.where} records none"
      if head is not None else "")


def classifier_labels(source, label_names: str = "",
                      task_type: str = "auto",
                      threshold: Optional[float] = None
                      ) -> Optional[LabelList]:
  """The label list of the classifier head a source holds, or None when it
  holds none (an encoder).

  Args:
    source: reading.readers.Weights of --init_checkpoint (its head
      already checked to be a classifier: source_model), or None.
    label_names: --label_names ("" if unset), the head's names in order.
    task_type: --task_type ("auto": the source's).
    threshold: multi-label's decision threshold (None: the source's, else
      the default; multi_label_threshold).

  Raises:
    UserInputError: a head whose names nothing gives, or as many names as
      it has outputs.
  """
  head = None if source is None else source.head
  if head is None or "classifier" not in head.kinds:
    return None
  table = head_tables.head_table(head.layout, "classifier")
  stored = task_heads.stored_labels(head, table)
  source_type = _HF_TASK_TYPES.get(head.problem_type) or (
      "regression" if stored == 1 else "classification")
  if task_type == "multi_label" and source_type == "classification":
    source_type = "multi_label"  # the official layout cannot tell them apart
  if source_type == "regression":
    return LabelList("regression")
  names = [n.strip() for n in label_names.split(",") if n.strip()] or (
      head.labels)
  if not names:
    raise UserInputError(head.no_names(stored, "--init_checkpoint="))
  if len(names) != stored:
    raise UserInputError(
        f"--init_checkpoint={head.where}: its head has {stored} labels, its "
        f"label names are {len(names)}: {', '.join(names)}")
  return LabelList(source_type, tuple(names),
                   threshold=multi_label_threshold(threshold, source)[0]
                   if source_type == "multi_label" else None)


def check_known(label_list: LabelList, names: Iterable[str], path: str,
                init_checkpoint: str) -> None:
  """One line naming every label of `path` the source's head lacks."""
  unknown = sorted(set(names) - set(label_list.labels))
  if unknown:
    raise UserInputError(
        f"{path} has label(s) the head of --init_checkpoint="
        f"{init_checkpoint} does not know: {', '.join(unknown)} (its labels:"
        f" {', '.join(label_list.labels)}; --init_head=false trains a fresh "
        "head)")
