"""A source's task head: which it is, its labels, and fitting it to a model.

A fine-tuned checkpoint of another layout holds a task head beside the
encoder (head_tables). The readers keep its arrays under their own names
(`SourceHead`); `fit_head` maps them to the head of the model being
loaded, by the rules every fine-tuning tool follows:

  - the head must be of the model's kind (a QA head is no classifier);
  - complete (every variable of the head's table), with the model's number
    of labels;
  - labels are matched by name, never by position: the Hugging Face
    `id2label`, else `--label_names` in the head's order, else a
    `labels.txt` beside the checkpoint (one name a line); the head's rows
    are put in the tool's label order.
Every misfit is one line (UserInputError).
"""

import dataclasses
import json
import re
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf.checkpoints import mapping
from albert_tf.checkpoints.task_models import head_tables

LABELS_FILE = "labels.txt"
_DEFAULT_HF_LABEL = re.compile(r"LABEL_\d+")
# transformers fills id2label with LABEL_<i> when nobody names the labels
# (PretrainedConfig): placeholders, read as no names.
HF_DEFAULT_NAMES = ("the Hugging Face config.json's id2label holds only "
                    "transformers' default names LABEL_0, LABEL_1, ..., "
                    "which stand for none")


@dataclasses.dataclass
class SourceHead:
  """A task head as the source stores it.

  Attributes:
    layout: "huggingface" or "official".
    arrays: their name -> array (only the head's names).
    architecture: a Hugging Face config.json's `architectures[0]`, or None.
    labels: label names in the head's order (Hugging Face `id2label`,
      `labels.txt`), or None when the source names none.
    problem_type: Hugging Face's ("regression",
      "single_label_classification", "multi_label_classification"), or None.
    where: the source, for messages.
    threshold: a multi-label head's decision threshold, as our run or
      export recorded it (labels.json), else None (transformers keeps none).
  """
  layout: str
  arrays: Dict[str, np.ndarray]
  where: str
  architecture: Optional[str] = None
  labels: Optional[List[str]] = None
  problem_type: Optional[str] = None
  threshold: Optional[float] = None

  @property
  def kinds(self) -> List[str]:
    """Our head kinds it can be (names, narrowed by `architecture`)."""
    kinds = head_tables.kinds_matching(self.layout, self.arrays)
    hinted = head_tables.HUGGINGFACE_ARCHITECTURES.get(self.architecture)
    if hinted in kinds:
      return [hinted]
    return kinds

  def no_names(self, count: int = 0, flag: str = "") -> str:
    """One line: the head names none of its (`count`) labels, and what
    gives them (`flag`: "--init_checkpoint=" before the source)."""
    line = (f"{flag}{self.where} names none of its head's "
            f"{f'{count} ' if count else ''}labels: give --label_names in "
            "the head's order (comma-separated)")
    if self.layout == "huggingface":
      return f"{line}; {HF_DEFAULT_NAMES}"
    return line + (", or put a labels.txt beside the checkpoint (one name "
                   "a line)")

  def describe(self) -> str:
    kinds = self.kinds
    if self.architecture:
      return f"an {self.architecture} head ({', '.join(sorted(self.arrays))})"
    if len(kinds) == 1:
      return head_tables.DESCRIPTIONS[kinds[0]]
    return f"a head of unknown kind ({', '.join(sorted(self.arrays))})"


def split_source(source: Dict[str, np.ndarray],
                 layout: str) -> Tuple[Dict[str, np.ndarray],
                                       Dict[str, np.ndarray]]:
  """(everything else, the task head's arrays) of a source's arrays."""
  names = head_tables.source_names(layout)
  head = {n: a for n, a in source.items() if n in names}
  rest = {n: a for n, a in source.items() if n not in names}
  return rest, head


def huggingface_info(config_file: str) -> Dict[str, object]:
  """architecture, labels (None for transformers' default LABEL_<i>),
  problem_type of a Hugging Face config.json ({} if it does not exist)."""
  if not file_io.exists(config_file):
    return {}
  try:
    values = json.loads(file_io.read_text(config_file))
  except ValueError as e:
    raise UserInputError(f"{config_file} is not JSON: {e}") from None
  architectures = values.get("architectures") or [None]
  labels = None
  id2label = values.get("id2label")
  if isinstance(id2label, dict) and id2label:
    try:
      order = sorted(id2label, key=int)
    except ValueError:
      raise UserInputError(f"{config_file}: id2label keys must be label "
                           f"ids, got {sorted(id2label)}") from None
    if [int(k) for k in order] != list(range(len(order))):
      raise UserInputError(f"{config_file}: id2label ids must be "
                           f"0..{len(order) - 1}, got {order}")
    labels = [str(id2label[k]) for k in order]
    if all(_DEFAULT_HF_LABEL.fullmatch(n) for n in labels):
      labels = None  # transformers' placeholders name nothing
  return dict(architecture=architectures[0], labels=labels,
              problem_type=values.get("problem_type"))


def official_labels(prefix: str) -> Optional[List[str]]:
  """The names in `labels.txt` beside the checkpoint `prefix`, or None."""
  path = file_io.join(file_io.dirname(prefix), LABELS_FILE)
  if not file_io.exists(path):
    return None
  names = [line.strip() for line in file_io.read_text(path).splitlines()
           if line.strip()]
  if len(set(names)) != len(names):
    raise UserInputError(f"{path}: a label name appears twice")
  return names


@dataclasses.dataclass(frozen=True)
class HeadRequest:
  """What the tool loading a source asks of its head.

  Attributes:
    init_head: False starts a fresh head on the source's encoder.
    labels: the tool's label names in its model's output order, when its
      head has named labels (classification, multi-label, NER); None for
      regression and label-free heads (QA, multiple choice).
    label_names: --label_names: the source head's names in its order, for a
      source that stores none (the official layout).
  """
  init_head: bool = True
  labels: Optional[Sequence[str]] = None
  label_names: Optional[Sequence[str]] = None


def source_labels(head: SourceHead,
                  request: HeadRequest) -> Optional[List[str]]:
  """The source head's label names in its order: --label_names first, then
  its own (id2label, labels.txt); None if neither."""
  if request.label_names:
    return list(request.label_names)
  return head.labels


def fit_head(head: SourceHead, kind: str, hidden_size: int, num_labels: int,
             request: HeadRequest) -> Dict[str, np.ndarray]:
  """The source head as canonical arrays of our head `kind`, rows in the
  tool's label order.

  Raises:
    UserInputError: in one line: another task's head, a partial head, a
      head of another label count, labels that do not match by name or no
      label names at all.
  """
  where = head.where
  check_kind(head, kind)
  table = head_tables.head_table(head.layout, kind)
  stored = stored_labels(head, table)
  if kind == "classifier" and head.problem_type == "regression" and (
      num_labels != 1):
    raise UserInputError(f"{where} holds a regression head (problem_type "
                         f"regression), this task is a {num_labels}-label "
                         "classification")
  if stored != num_labels:
    what = ("a regression head" if kind == "classifier" and stored == 1
            else f"a head of {stored} labels")
    need = ("a regression head (1 output)" if num_labels == 1
            and kind == "classifier" else f"{num_labels} labels")
    raise UserInputError(f"{where} holds {what}; this task needs {need} "
                         "(--init_head=false starts a fresh head)")
  shapes = head_tables.head_shapes(kind, hidden_size, num_labels)
  try:
    arrays = mapping.map_to_ours(head.arrays, table, shapes,
                                 source_name=where, layout=head.layout)
  except UserInputError as e:
    raise UserInputError(" ".join(str(e).split())) from None
  if request.labels is not None and kind in ("classifier",
                                             "token_classifier"):
    arrays = _in_label_order(arrays, kind, head, request)
  return arrays


def check_kind(head: SourceHead, kind: str) -> None:
  """One line unless `head` is a complete head of our `kind`."""
  if kind not in head.kinds:
    raise UserInputError(
        f"{head.where} holds {head.describe()}, not "
        f"{head_tables.DESCRIPTIONS[kind]}: give a task model of this tool's "
        "kind, or --init_head=false to start a fresh head on its encoder")
  table = head_tables.head_table(head.layout, kind)
  absent = [e.theirs for e in table if e.theirs not in head.arrays]
  if absent:
    raise UserInputError(
        f"{head.where} holds a partial head: "
        f"{', '.join(sorted(head.arrays))} without {', '.join(absent)}")


def stored_labels(head: SourceHead, table) -> int:
  """The label count the source head stores (its kernel's output width;
  `table`: head_tables.head_table of its layout and kind)."""
  kernel = next(e for e in table if e.ours.endswith("kernel"))
  array = head.arrays[kernel.theirs]
  return int(array.shape[0] if kernel.kind == "transpose" else
             array.shape[-1])


def _in_label_order(arrays, kind, head: SourceHead, request: HeadRequest):
  """The head's output rows permuted to request.labels' order, by name."""
  names = source_labels(head, request)
  if names is None:
    raise UserInputError(head.no_names())
  wanted = list(request.labels)
  if len(names) != len(wanted) or len(set(names)) != len(names):
    raise UserInputError(
        f"{head.where}: the head's labels {names} are not the task's "
        f"{wanted}")
  unknown = [n for n in wanted if n not in names]
  if unknown:
    raise UserInputError(
        f"{head.where}: the head does not know the label(s) "
        f"{', '.join(unknown)} (its labels: {', '.join(names)})")
  order = [names.index(n) for n in wanted]
  kernel, bias = f"{kind}/dense/kernel", f"{kind}/dense/bias"
  return {kernel: np.ascontiguousarray(arrays[kernel][:, order]),
          bias: np.ascontiguousarray(arrays[bias][order])}
