"""GLUE's 9 tasks and their standard TSV files -> Examples.

Files as distributed by the GLUE benchmark (download_glue_data.py), one task
per `data_dir`:

  task    files (dev / test splits)          columns used
  CoLA    train.tsv dev.tsv: no header,      3 = sentence, 1 = label
            4 columns
          test.tsv: header                   index, sentence
  SST-2   train/dev/test.tsv                 sentence, label
  MRPC    train/dev/test.tsv                 #1 String, #2 String, Quality
  STS-B   train/dev/test.tsv                 sentence1, sentence2, score
  QQP     train/dev/test.tsv                 question1, question2,
                                               is_duplicate (test: id)
  MNLI    train.tsv dev_matched.tsv          sentence1, sentence2, gold_label
            dev_mismatched.tsv
            test_matched.tsv test_mismatched.tsv
            (+ diagnostic.tsv here or in ../diagnostic/, the AX set)
  QNLI    train/dev/test.tsv                 question, sentence, label
  RTE     train/dev/test.tsv                 sentence1, sentence2, label
  WNLI    train/dev/test.tsv                 sentence1, sentence2, label

Columns are found by header name, so the different column counts of e.g.
MNLI's train (12) and dev (16) files need no special cases. Fields are split on
tabs with no quote processing (quotes are text, as the official readers'
`quotechar=None`). Every row must have the header's number of columns (CoLA:
4); a row that does not, or a label outside the task's label set, raises
UserInputError naming the file and line (`skip_malformed=True` skips such
rows with a warning instead). Test files have no labels.

Features are made by `glue_features`, metrics and submission files by
`glue_metrics`.
"""

import dataclasses
from typing import Dict, List, Optional, Tuple

from absl import logging

from albert_common import file_io
from albert_common.errors import UserInputError


@dataclasses.dataclass(frozen=True)
class Example:
  """One GLUE example. `label` is a label name, a float (STS-B), or None
  (test sets); `guid` is the test `index` / `id`, else "split-line"."""

  guid: str
  text_a: str
  text_b: Optional[str] = None
  label: Optional[object] = None


@dataclasses.dataclass(frozen=True)
class GlueTask:
  """A GLUE task's files, columns, labels and metrics.

  Columns are header names; `headerless` maps split -> (num_columns,
  {role: column index}) for files without a header (CoLA train/dev).
  """

  name: str
  labels: Optional[Tuple[str, ...]]  # None: regression
  text_a: str
  text_b: Optional[str]
  label: str
  main_metric: str
  dev_splits: Tuple[str, ...] = ("dev",)
  test_splits: Tuple[str, ...] = ("test",)
  test_id: str = "index"
  submission: Tuple[Tuple[str, str], ...] = ()  # (split, file name)
  headerless: Tuple[Tuple[str, int, Tuple[Tuple[str, int], ...]], ...] = ()

  @property
  def is_regression(self) -> bool:
    return self.labels is None

  @property
  def num_classes(self) -> int:
    return 1 if self.is_regression else len(self.labels)

  @property
  def num_segments(self) -> int:
    return 1 if self.text_b is None else 2

  def submission_file(self, split: str) -> str:
    return dict(self.submission)[split]


_NLI = ("entailment", "not_entailment")
TASKS: Dict[str, GlueTask] = {
    "cola": GlueTask(
        "CoLA", ("0", "1"), "sentence", None, "label", "matthews_corr",
        submission=(("test", "CoLA.tsv"),),
        headerless=(("train", 4, (("text_a", 3), ("label", 1))),
                    ("dev", 4, (("text_a", 3), ("label", 1))))),
    "sst-2": GlueTask("SST-2", ("0", "1"), "sentence", None, "label",
                      "accuracy", submission=(("test", "SST-2.tsv"),)),
    "mrpc": GlueTask("MRPC", ("0", "1"), "#1 String", "#2 String", "Quality",
                     "accuracy", submission=(("test", "MRPC.tsv"),)),
    "sts-b": GlueTask("STS-B", None, "sentence1", "sentence2", "score",
                      "pearson", submission=(("test", "STS-B.tsv"),)),
    "qqp": GlueTask("QQP", ("0", "1"), "question1", "question2",
                    "is_duplicate", "accuracy", test_id="id",
                    submission=(("test", "QQP.tsv"),)),
    "mnli": GlueTask(
        "MNLI", ("contradiction", "entailment", "neutral"), "sentence1",
        "sentence2", "gold_label", "accuracy",
        dev_splits=("dev_matched", "dev_mismatched"),
        test_splits=("test_matched", "test_mismatched", "diagnostic"),
        submission=(("test_matched", "MNLI-m.tsv"),
                    ("test_mismatched", "MNLI-mm.tsv"),
                    ("diagnostic", "AX.tsv"))),
    "qnli": GlueTask("QNLI", _NLI, "question", "sentence", "label",
                     "accuracy", submission=(("test", "QNLI.tsv"),)),
    "rte": GlueTask("RTE", _NLI, "sentence1", "sentence2", "label",
                    "accuracy", submission=(("test", "RTE.tsv"),)),
    "wnli": GlueTask("WNLI", ("0", "1"), "sentence1", "sentence2", "label",
                     "accuracy", submission=(("test", "WNLI.tsv"),)),
}
_ALIASES = {"sst2": "sst-2", "stsb": "sts-b", "sts": "sts-b"}


def get_task(task_name: str) -> GlueTask:
  """The task for `--task_name` (case-insensitive; "SST-2" or "sst2")."""
  key = (task_name or "").strip().lower()
  key = _ALIASES.get(key, key)
  if key not in TASKS:
    raise UserInputError(
        f"--task_name={task_name!r} is not a GLUE task; expected one of "
        + ", ".join(t.name for t in TASKS.values()))
  return TASKS[key]


def split_path(task: GlueTask, data_dir: str, split: str) -> str:
  """The TSV file of `split` ("train", "dev", "dev_matched", "test", ...)."""
  if split == "diagnostic":
    for path in (file_io.join(data_dir, "diagnostic.tsv"),
                 file_io.join(data_dir, "..", "diagnostic", "diagnostic.tsv")):
      path = file_io.normpath(path)
      if file_io.exists(path):
        return path
  return file_io.join(data_dir, f"{split}.tsv")


def available_test_splits(task: GlueTask, data_dir: str) -> List[str]:
  """Test splits to predict; MNLI's diagnostic (AX) set only if present."""
  return [s for s in task.test_splits
          if s != "diagnostic" or
          file_io.exists(split_path(task, data_dir, s))]


def _read_rows(path: str) -> List[Tuple[int, List[str]]]:
  """(1-based line number, fields) of every non-empty line."""
  try:
    data = file_io.read_bytes(path)
  except FileNotFoundError:
    raise UserInputError(f"{path} does not exist (--data_dir should hold the "
                         "task's GLUE TSV files)") from None
  except OSError as e:
    raise UserInputError(f"cannot read {path}: {e}") from e
  try:
    text = data.decode("utf-8-sig")
  except UnicodeDecodeError as e:
    line = data[:e.start].count(b"\n") + 1
    raise UserInputError(f"{path}:{line}: not valid UTF-8") from e
  rows = []
  for number, line in enumerate(text.split("\n"), start=1):
    line = line.rstrip("\r")
    if line:
      rows.append((number, line.split("\t")))
  return rows


def read_examples(task: GlueTask, data_dir: str, split: str,
                  skip_malformed: bool = False) -> List[Example]:
  """Examples of one split; labels are None for test splits.

  Raises:
    UserInputError: missing file or column, a row with the wrong number of
      columns, or an unknown / unparsable label (file and line named).
  """
  path = split_path(task, data_dir, split)
  rows = _read_rows(path)
  is_test = split.startswith("test") or split == "diagnostic"
  headerless = {s: (n, dict(cols)) for s, n, cols in task.headerless}
  if split in headerless:
    num_columns, columns = headerless[split]
  else:
    if not rows:
      raise UserInputError(f"{path} is empty (expected a header line)")
    header = rows[0][1]
    rows = rows[1:]
    num_columns = len(header)
    columns = _header_columns(task, split, header, is_test, path)
  examples = []
  skipped = 0
  for number, fields in rows:
    try:
      if len(fields) != num_columns:
        raise UserInputError(
            f"{path}:{number}: expected {num_columns} tab-separated columns, "
            f"found {len(fields)}")
      label = None
      if not is_test:
        label = _parse_label(task, fields[columns["label"]], path, number)
      guid = (fields[columns["id"]] if "id" in columns
              else f"{split}-{number}")
      examples.append(Example(
          guid=guid, text_a=fields[columns["text_a"]],
          text_b=fields[columns["text_b"]] if "text_b" in columns else None,
          label=label))
    except UserInputError:
      if not skip_malformed:
        raise
      skipped += 1
  if skipped:
    logging.warning("%s: skipped %d malformed rows", path, skipped)
  if not examples:
    raise UserInputError(f"{path} has no examples")
  return examples


def _header_columns(task: GlueTask, split: str, header: List[str],
                    is_test: bool, path: str) -> Dict[str, int]:
  """{role: column index} of text_a, text_b and label (id for test splits).

  Raises:
    UserInputError: a column the task reads is not in the header.
  """
  wanted = {"text_a": task.text_a, "text_b": task.text_b}
  wanted["id" if is_test else "label"] = (task.test_id if is_test
                                          else task.label)
  columns = {}
  for role, name in wanted.items():
    if name is None:
      continue
    if name not in header:
      raise UserInputError(
          f"{path}:1: no column {name!r} in the header "
          f"({', '.join(header)}); is this the {task.name} {split} file?")
    columns[role] = header.index(name)
  return columns


def _parse_label(task: GlueTask, value: str, path: str, number: int):
  if task.is_regression:
    try:
      return float(value)
    except ValueError:
      raise UserInputError(f"{path}:{number}: {task.label} {value!r} is not "
                           "a number") from None
  if value not in task.labels:
    raise UserInputError(f"{path}:{number}: label {value!r} is not one of "
                         f"{list(task.labels)}")
  return value
