"""The label names of a fine-tuned model, kept with its run and its export.

Labels come from the training file (sorted, strings as given). The list is
written to the run's output directory (and into an export's assets) as
`labels.json`; a rerun, an evaluation or a prediction without training reads
it back from there, so index i means the same label everywhere.

  {"task_type": "classification", "labels": ["billing", "shipping"]}

task_type: "classification", "multi_label", "regression" (no labels) or
"token_classification" (NER tags; `scheme` names the tag scheme). A
multi-label list also keeps its decision `threshold` (on each label's
sigmoid probability), which the export applies too.
"""

import dataclasses
from typing import Iterable, Optional, Tuple

from albert_common import file_io
from albert_common.errors import UserInputError

FILE_NAME = "labels.json"
# multi_label's decision threshold when neither the user nor a source sets one.
DEFAULT_THRESHOLD = 0.5
TASK_TYPES = ("classification", "multi_label", "regression",
              "token_classification")


@dataclasses.dataclass(frozen=True)
class LabelList:
  """A task's label names, index = the model's output position.

  Attributes:
    task_type: one of TASK_TYPES.
    labels: the names (empty for regression).
    scheme: token_classification's tag scheme ("IOB2", "IOB1", "IOBES"),
      else "".
    threshold: multi_label's: a label is predicted when its probability
      is above it (None for the other task types).
  """
  task_type: str
  labels: Tuple[str, ...] = ()
  scheme: str = ""
  threshold: Optional[float] = None

  def __post_init__(self):
    if self.task_type not in TASK_TYPES:
      raise ValueError(f"task_type must be one of {TASK_TYPES}, got "
                       f"{self.task_type!r}")
    if len(set(self.labels)) != len(self.labels):
      raise ValueError(f"repeated labels in {self.labels}")

  @classmethod
  def from_training(cls, task_type: str, names: Iterable[str],
                    scheme: str = "",
                    threshold: Optional[float] = None) -> "LabelList":
    """The sorted distinct names seen in a training file."""
    return cls(task_type, tuple(sorted(set(names))), scheme, threshold)

  @property
  def num_labels(self) -> int:
    """Model outputs: one per label, one for regression."""
    return len(self.labels) if self.labels else 1

  def to_dict(self) -> dict:
    values = {"task_type": self.task_type, "labels": list(self.labels)}
    if self.scheme:
      values["scheme"] = self.scheme
    if self.threshold is not None:
      values["threshold"] = self.threshold
    return values


def path_in(folder: str) -> str:
  return file_io.join(folder, FILE_NAME)


def write(folder: str, label_list: LabelList) -> str:
  """Writes <folder>/labels.json atomically; returns its path."""
  path = path_in(folder)
  file_io.write_json_atomic(path, label_list.to_dict())
  return path


def read(folder: str) -> Optional[LabelList]:
  """<folder>/labels.json, or None when there is none.

  Raises:
    UserInputError: a file that is not a label list.
  """
  path = path_in(folder)
  if not file_io.exists(path):
    return None
  values = file_io.read_json_object(path, "label list")
  labels = values.get("labels")
  if (values.get("task_type") not in TASK_TYPES or
      not isinstance(labels, list) or
      not all(isinstance(x, str) for x in labels)):
    raise UserInputError(
        f"{path} is not a label list ({{\"task_type\": one of {TASK_TYPES}, "
        "\"labels\": [strings]}})")
  threshold = values.get("threshold")
  if threshold is not None and not isinstance(threshold, (int, float)):
    raise UserInputError(f"{path}: threshold {threshold!r} is not a number")
  try:
    return LabelList(values["task_type"], tuple(labels),
                     str(values.get("scheme", "")),
                     None if threshold is None else float(threshold))
  except ValueError as e:
    raise UserInputError(f"{path}: {e}") from e


def check_same(saved: LabelList, current: LabelList, saved_path: str,
               current_source: str) -> None:
  """UserInputError when a run's saved list and the one its data gives now
  differ (a rerun on another training file would reuse the checkpoint's
  output layer with other meanings)."""
  if saved != current:
    raise UserInputError(
        f"{current_source} gives labels {list(current.labels)} "
        f"({current.task_type}), but {saved_path} (from the run's first "
        f"training) has {list(saved.labels)} ({saved.task_type}); use a new "
        "--output_dir for a different task")
