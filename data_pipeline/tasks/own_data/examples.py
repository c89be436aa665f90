"""One's own labelled texts: a record file -> TextExamples with typed labels.

Columns (TextColumns, RecordFileOptions): `--text_a_column` (default
`text`; a file without it uses `sentence`, else `sentence1` with
`sentence2` as the second text, as Hugging Face's run_glue.py), an
optional `--text_b_column`, `--label_column` and `--id_column` (used when
the file has it).

Task types (`--task_type`):
  classification  a label is a name: strings as given, integers as their
                  text, a Hugging Face ClassLabel integer as its name.
  regression      a label is a number (float).
  multi_label     a label is a set of names: a JSON / Parquet list, or a
                  CSV/TSV field split on `--label_separator` ("a|b"); an
                  explicit empty list (`[]`, also in a CSV field) means no
                  label applies, while an empty field is an empty label.
  auto            (the default) multi_label when the training labels are
                  lists, regression when they are all numbers and some is
                  not a whole number (as run_glue.py's float columns),
                  else classification.

A bad record -- a wrong field count, no text, an empty label, a regression
label that is not a number, a label training never saw -- raises one
UserInputError naming its file and line (Parquet: file, row group and row),
or with `--skip_bad_records` is skipped and counted. Records whose label is
one of `skip_labels` (OCNLI's "-": no majority label) are skipped and
counted apart; they are not errors.
"""

import dataclasses
import json
import math
from typing import Dict, List, Optional, Sequence, Tuple

from albert_common.errors import UserInputError
from albert_common.settings_fields import FlatConstructible
from albert_common.settings_fields import setting
from data_pipeline.corpora import record_files
from data_pipeline.corpora.record_files import BadRecords
from data_pipeline.corpora.record_files import RecordFileOptions
from data_pipeline.tasks.label_list import DEFAULT_THRESHOLD
from data_pipeline.tasks.label_list import LabelList

TASK_TYPES = ("auto", "classification", "regression", "multi_label")
# Text columns tried, in order, when --text_a_column's default is missing.
TEXT_FALLBACKS = ("text", "sentence", "sentence1")


@dataclasses.dataclass(frozen=True, kw_only=True)
class TextColumns(FlatConstructible):
  """The text columns of one's own classification files (each field is the
  flag of its name)."""

  text_a_column: str = setting(
      "text", "The text column. Left at `text` and missing from a file: "
      "`sentence`, else `sentence1` (with `sentence2` as --text_b_column "
      "unless that is given), as Hugging Face's run_glue.py.")
  text_b_column: str = setting(
      "", "The second text of sentence-pair tasks (empty: one text).")
  label_separator: str = setting(
      "|", "--task_type=multi_label: separates the labels in a CSV or TSV "
      "field (JSON and Parquet lists need none; `[]` is a record with no "
      "label, an empty field an error).")


@dataclasses.dataclass(frozen=True)
class TextExample:
  """One record.

  Attributes:
    where: the record's place ("path:line", "path, row group g, row r").
    record_id: its id column's value as text, or None.
    text_a, text_b: the texts (text_b None for one-text tasks).
    label: None (no label column: a test file), str (classification),
      float (regression) or a tuple of str (multi_label).
  """
  where: str
  record_id: Optional[str]
  text_a: str
  text_b: Optional[str]
  label: object = None


@dataclasses.dataclass
class TextFile:
  """What one file gave.

  Attributes:
    path, examples: the file and its usable records, in file order.
    task_type: the labels' type (resolved from "auto" for a training file).
    columns: role -> column name used ("text_a", "text_b", "label", "id").
    skipped_bad, skipped_labels: records skipped as bad (with
      --skip_bad_records) and for a label in `skip_labels`.
  """
  path: str
  examples: List[TextExample]
  task_type: str
  columns: Dict[str, str]
  skipped_bad: int = 0
  skipped_labels: int = 0

  @property
  def has_labels(self) -> bool:
    return "label" in self.columns

  @property
  def has_ids(self) -> bool:
    return "id" in self.columns


def _resolve_columns(available: Sequence[str], where: str,
                     files: RecordFileOptions, columns: TextColumns,
                     labels: str) -> Dict[str, str]:
  """role -> column among `available` (module docstring).

  labels: "required", "optional" (used if present) or "no".

  Raises:
    UserInputError: a text column, or a required label column, missing.
  """
  chosen = {}
  text_a, text_b = columns.text_a_column, columns.text_b_column
  if text_a == "text" and "text" not in available:
    for name in TEXT_FALLBACKS[1:]:
      if name in available:
        text_a = name
        break
    if text_a == "sentence1" and not text_b and "sentence2" in available:
      text_b = "sentence2"
  for role, name, flag in (("text_a", text_a, "--text_a_column"),
                           ("text_b", text_b, "--text_b_column")):
    if not name:
      continue
    if name not in available:
      raise record_files.missing_column_error(where, name, flag, available)
    chosen[role] = name
  if labels != "no":
    if files.label_column in available:
      chosen["label"] = files.label_column
    elif labels == "required":
      raise record_files.missing_column_error(
          where, files.label_column, "--label_column", available)
  if files.id_column and files.id_column in available:
    chosen["id"] = files.id_column
  return chosen


def _text(value) -> Optional[str]:
  if value is None or isinstance(value, (dict, list)):
    return None
  return value if isinstance(value, str) else str(value)


def _is_empty(raw) -> bool:
  return raw is None or (isinstance(raw, str) and not raw.strip())


def infer_task_type(raw_labels: Sequence) -> str:
  """The task type of "auto" from the training file's labels."""
  if any(isinstance(x, list) for x in raw_labels):
    return "multi_label"
  numbers = []
  for x in raw_labels:
    if isinstance(x, bool):
      return "classification"
    try:
      numbers.append(float(x))
    except (TypeError, ValueError):
      return "classification"
  if numbers and any(math.isfinite(v) and v != int(v) for v in numbers):
    return "regression"
  return "classification"


def parse_label(raw, task_type: str, class_names: Tuple[str, ...] = (),
                separator: str = "|"):
  """The typed label of a raw value (see module docstring).

  Raises:
    ValueError: the problem, in words (the caller adds where).
  """
  if _is_empty(raw) and not (task_type == "multi_label" and
                             isinstance(raw, list)):
    raise ValueError("empty label")

  def name(value) -> str:
    if isinstance(value, bool) or isinstance(value, (dict, list)):
      raise ValueError(f"label {value!r} is not a name")
    if class_names and isinstance(value, int):
      if not 0 <= value < len(class_names):
        raise ValueError(f"label {value} is outside the ClassLabel names "
                         f"(0..{len(class_names) - 1})")
      return class_names[value]
    return value if isinstance(value, str) else str(value)

  if task_type == "regression":
    try:
      if isinstance(raw, (bool, list, dict)):
        raise ValueError
      value = float(raw)
    except (TypeError, ValueError):
      raise ValueError(f"label {raw!r} is not a number "
                       "(--task_type=regression)") from None
    if not math.isfinite(value):
      raise ValueError(f"label {raw!r} is not a finite number")
    return value
  if task_type == "multi_label":
    if isinstance(raw, str) and raw.lstrip().startswith("["):
      try:
        raw = json.loads(raw)
      except json.JSONDecodeError:
        raise ValueError(f"label {raw!r} is not a JSON list") from None
    if isinstance(raw, str):
      raw = [part.strip() for part in raw.split(separator)]
      raw = [part for part in raw if part]
    if not isinstance(raw, list):
      raw = [raw]
    names = [name(value) for value in raw]
    if any(not n.strip() for n in names):
      raise ValueError(f"empty label in {raw!r}")
    return tuple(sorted(set(names)))
  if isinstance(raw, list):
    raise ValueError(f"label {raw!r} is a list; use --task_type=multi_label")
  return name(raw)


def read_text_file(path: str, files: RecordFileOptions,
                   columns: TextColumns, task_type: str,
                   labels: str = "required",
                   skip_labels: Sequence[str] = ()) -> TextFile:
  """The usable records of one file.

  Args:
    path: the file (any filesystem); its format from `files.input_format`.
    files, columns: the column settings.
    task_type: one of TASK_TYPES ("auto": inferred from these labels).
    labels: "required" (training, dev), "optional" (a test file: read if
      present) or "no".
    skip_labels: raw label values whose records are skipped and counted.

  Raises:
    UserInputError: a missing column (naming those there are), a file
      with no usable record, or (without --skip_bad_records) a bad record.
  """
  if task_type not in TASK_TYPES:
    raise UserInputError(f"--task_type={task_type} is not one of "
                         f"{', '.join(TASK_TYPES)}")
  source = record_files.RecordFile(path, files.input_format)
  bad = BadRecords(path, files.skip_bad_records)
  header = source.header()
  chosen = (_resolve_columns(header, f"{path}:1" if source.format != "parquet"
                             else path, files, columns, labels)
            if header is not None else None)
  raw_examples = []
  skipped_labels = 0
  wanted = None if chosen is None else sorted(set(chosen.values()))
  for record in source.records(wanted):
    if record.problem:
      bad.bad(record.where, record.problem)
      continue
    values = record.values
    if chosen is None:  # JSON lines: the first record's keys decide.
      chosen = _resolve_columns(sorted(values), record.where, files, columns,
                                labels)
    missing = [c for role, c in chosen.items()
               if c not in values and role != "id"]
    if missing:
      bad.bad(record.where, f"no column {missing[0]!r}; the columns there: "
              f"{', '.join(sorted(values)) or 'none'}")
      continue
    texts = [_text(values[chosen[r]]) if r in chosen else None
             for r in ("text_a", "text_b")]
    if texts[0] is None or ("text_b" in chosen and texts[1] is None):
      role = "text_a" if texts[0] is None else "text_b"
      bad.bad(record.where, f"no text in column {chosen[role]!r}")
      continue
    raw = values.get(chosen["label"]) if "label" in chosen else None
    if "label" in chosen and skip_labels and str(raw) in skip_labels:
      skipped_labels += 1
      continue
    record_id = _text(values.get(chosen["id"])) if "id" in chosen else None
    raw_examples.append((record.where, record_id, texts, raw))
  if chosen is not None and "label" in chosen and task_type == "auto":
    task_type = infer_task_type([r[3] for r in raw_examples
                                 if not _is_empty(r[3])])
  class_names = source.class_names.get((chosen or {}).get("label"), ())
  examples = []
  for where, record_id, (text_a, text_b), raw in raw_examples:
    label = None
    if chosen and "label" in chosen:
      try:
        label = parse_label(raw, task_type, class_names,
                            columns.label_separator)
      except ValueError as e:
        bad.bad(where, str(e))
        continue
    examples.append(TextExample(where, record_id, text_a, text_b, label))
  bad.log_summary()
  if not examples:
    skipped = bad.count + skipped_labels
    raise UserInputError(f"{path} has no records" + (
        f" left ({skipped} skipped)" if skipped else ""))
  return TextFile(path, examples, task_type, chosen or {}, bad.count,
                  skipped_labels)


def training_label_list(train: TextFile,
                        threshold: Optional[float] = None) -> LabelList:
  """The label list of a training file: its distinct names, sorted; a
  multi-label list's `threshold` (None: label_list.DEFAULT_THRESHOLD)."""
  if train.task_type == "regression":
    return LabelList("regression")
  if train.task_type == "multi_label":
    return LabelList.from_training(
        "multi_label", [n for e in train.examples for n in e.label],
        threshold=DEFAULT_THRESHOLD if threshold is None else threshold)
  return LabelList.from_training("classification",
                                 [e.label for e in train.examples])


def check_known_labels(data: TextFile, label_list: LabelList,
                       skip_bad_records: bool) -> TextFile:
  """`data` without the records whose label training never saw (skipped
  and counted with skip_bad_records).

  Raises:
    UserInputError: naming the record and the label, unless skipping.
  """
  if label_list.task_type != data.task_type:
    raise UserInputError(
        f"{data.path}: its labels are {data.task_type}, the model's "
        f"{label_list.task_type} (--task_type)")
  if label_list.task_type == "regression" or not data.has_labels:
    return data
  known = set(label_list.labels)
  bad = BadRecords(data.path, skip_bad_records)
  kept = []
  for example in data.examples:
    names = (example.label if isinstance(example.label, tuple)
             else (example.label,))
    unseen = [n for n in names if n not in known]
    if unseen:
      bad.bad(example.where, f"label {unseen[0]!r} is not in the training "
              f"labels ({', '.join(label_list.labels)})")
      continue
    kept.append(example)
  bad.log_summary()
  if not kept:
    raise UserInputError(f"{data.path} has no records left ({bad.count} "
                         "with labels training never saw)")
  return dataclasses.replace(data, examples=kept,
                             skipped_bad=data.skipped_bad + bad.count)
