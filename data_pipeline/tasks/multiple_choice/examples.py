"""One's own multiple-choice records -> ChoiceExamples.

A record has a context (optional), a question (optional), its choices (two
or more) and a label: the index of the right choice (an integer or its
text, e.g. "2"; a label equal to one of the choices' texts is that choice).

  JSON lines / Parquet  {"context": ..., "question": ..., "choices": [...],
                        "label": 1}; column flags --context_column,
                        --question_column, --choices_column, --label_column
  SWAG's CSV            sent1, sent2, ending0..ending3, label: left at their
                        defaults and missing from a file, the context is
                        `sent1`, the question `sent2` and the choices the
                        numbered columns `ending0`, `ending1`, ...; a
                        --choices_column X missing from a file is looked for
                        as X0, X1, ... too.

The number of choices is the training file's (its first record's); a
record with another count is a bad record naming it: one UserInputError
with its file and line, or with --skip_bad_records skipped and counted.
"""

import dataclasses
import json
from typing import Dict, List, Optional, Sequence, Tuple

from albert_common.errors import UserInputError
from albert_common.settings_fields import FlatConstructible
from albert_common.settings_fields import setting
from data_pipeline.corpora import record_files
from data_pipeline.corpora.record_files import BadRecords
from data_pipeline.corpora.record_files import RecordFileOptions

# Defaults' fallbacks: SWAG's CSV columns.
SWAG_COLUMNS = {"context": "sent1", "question": "sent2", "choices": "ending"}


@dataclasses.dataclass(frozen=True, kw_only=True)
class ChoiceColumns(FlatConstructible):
  """The columns of one's own multiple-choice files (each field is the flag
  of its name)."""

  context_column: str = setting(
      "context", "The passage the questions are about; optional (left at "
      "`context` and missing: SWAG's `sent1`, else none).")
  question_column: str = setting(
      "question", "The question; optional (left at `question` and missing: "
      "SWAG's `sent2`, else none). A blank `_` in it is filled with each "
      "choice, as RACE's.")
  choices_column: str = setting(
      "choices", "A list of the choices (JSON / Parquet list, or a JSON "
      "list in a CSV field). Missing from a file: the numbered columns "
      "<name>0, <name>1, ... (left at `choices`: SWAG's ending0, ending1, "
      "...).")


@dataclasses.dataclass(frozen=True)
class ChoiceExample:
  """One question.

  Attributes:
    where: "path:line" or "path, row group g, row r".
    record_id: the id column's value as text, or None.
    context, question: str ("" when the file has none).
    choices: the choices' texts.
    label: index of the right choice, or None (a test file).
  """
  where: str
  record_id: Optional[str]
  context: str
  question: str
  choices: Tuple[str, ...]
  label: Optional[int] = None


@dataclasses.dataclass
class ChoiceFile:
  """The usable records of one file, its number of choices and the columns
  used (role -> column; "choices" may be a numbered prefix "ending#")."""
  path: str
  examples: List[ChoiceExample]
  num_choices: int
  columns: Dict[str, str]
  skipped_bad: int = 0


def _numbered(prefix: str, available: Sequence[str]) -> List[str]:
  names = []
  while f"{prefix}{len(names)}" in available:
    names.append(f"{prefix}{len(names)}")
  return names


def choice_columns(available: Sequence[str], where: str, context: str,
                   question: str, choices: str) -> Dict[str, object]:
  """The columns of a multiple-choice file's roles, as the column flags
  ask for them (the module docstring's fallbacks).

  Args:
    available: the file's columns (a header, a schema, a first record's
      keys).
    where: the file (and line) the error names.
    context, question, choices: --context_column, --question_column and
      --choices_column.

  Returns:
    role -> column: "context" and "question" where there is one,
    "choices" always (a name, or a list of numbered names).

  Raises:
    UserInputError: a column asked for that is not there.
  """
  chosen: Dict[str, object] = {}
  for role, name in (("context", context), ("question", question)):
    if name in available:
      chosen[role] = name
    elif name == role and SWAG_COLUMNS[role] in available:
      chosen[role] = SWAG_COLUMNS[role]
    elif name != role:
      raise record_files.missing_column_error(
          where, name, f"--{role}_column", available)
  numbered = _numbered(choices, available) or (
      _numbered(SWAG_COLUMNS["choices"], available) if choices == "choices"
      else [])
  if choices in available:
    chosen["choices"] = choices
  elif len(numbered) >= 2:
    chosen["choices"] = numbered
  else:
    raise record_files.missing_column_error(
        where, choices, "--choices_column (or numbered columns "
        f"{choices}0, {choices}1, ...)", available)
  return chosen


def _resolve(available: Sequence[str], where: str, files: RecordFileOptions,
             columns: ChoiceColumns, labels: str) -> Dict[str, object]:
  """role -> column name (choices: a name or a list of numbered names)."""
  chosen = choice_columns(available, where, columns.context_column,
                          columns.question_column, columns.choices_column)
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


def _choices(value, chosen) -> Tuple[str, ...]:
  """The choices' texts. Raises ValueError with the problem."""
  if isinstance(chosen, list):
    value = [value[c] for c in chosen]
  elif isinstance(value, str) and value.lstrip().startswith("["):
    try:
      value = json.loads(value)
    except json.JSONDecodeError:
      raise ValueError(f"choices {value!r} are not a JSON list") from None
  if not isinstance(value, (list, tuple)):
    raise ValueError(f"choices {value!r} are not a list")
  texts = tuple(_text(v) for v in value)
  if any(t is None for t in texts):
    raise ValueError("a choice is empty (null)")
  return texts


def _label(raw, choices: Tuple[str, ...]) -> int:
  """The index of the right choice. Raises ValueError with the problem."""
  if raw is None or (isinstance(raw, str) and not raw.strip()):
    raise ValueError("empty label")
  if isinstance(raw, str) and raw in choices and not raw.strip().isdigit():
    return choices.index(raw)
  try:
    if isinstance(raw, bool) or (isinstance(raw, float) and
                                 not raw.is_integer()):
      raise ValueError
    index = int(raw)
  except (TypeError, ValueError):
    raise ValueError(f"label {raw!r} is neither a choice's index nor its "
                     "text") from None
  if not 0 <= index < len(choices):
    raise ValueError(f"label {index} is not a choice index (0.."
                     f"{len(choices) - 1})")
  return index


def read_choice_file(path: str, files: RecordFileOptions,
                     columns: ChoiceColumns,
                     num_choices: Optional[int] = None,
                     labels: str = "required") -> ChoiceFile:
  """The usable questions of one file.

  Args:
    path: the file (any filesystem).
    files, columns: the column settings.
    num_choices: the training file's count (None: this file's first
      record's).
    labels: "required", "optional" (test files) or "no".

  Raises:
    UserInputError: a missing column (naming those there are), a file
      with no usable record, or (without --skip_bad_records) a bad record:
      wrong field count, no choices list, fewer than 2 choices or another
      count than the first record's, an empty or out-of-range label.
  """
  source = record_files.RecordFile(path, files.input_format)
  bad = BadRecords(path, files.skip_bad_records)
  header = source.header()
  where_header = path if source.format == "parquet" else f"{path}:1"
  chosen = (_resolve(header, where_header, files, columns, labels)
            if header is not None else None)
  examples = []
  for record in source.records(None if chosen is None else sorted(
      {c for v in chosen.values()
       for c in (v if isinstance(v, list) else [v])})):
    if record.problem:
      bad.bad(record.where, record.problem)
      continue
    values = record.values
    if chosen is None:  # JSON lines: the first record's keys decide.
      chosen = _resolve(sorted(values), record.where, files, columns, labels)
    try:
      choices = _choices(values.get(chosen["choices"])
                         if not isinstance(chosen["choices"], list)
                         else values, chosen["choices"])
      if len(choices) < 2:
        raise ValueError(f"{len(choices)} choice(s); at least 2 are needed")
      if num_choices is not None and len(choices) != num_choices:
        raise ValueError(f"{len(choices)} choices, but the first training "
                         f"record has {num_choices}")
      label = (_label(values.get(chosen["label"]), choices)
               if "label" in chosen else None)
    except (ValueError, KeyError) as e:
      bad.bad(record.where, str(e) if isinstance(e, ValueError) else
              f"no column {e}; the columns there: {', '.join(values)}")
      continue
    num_choices = num_choices or len(choices)
    examples.append(ChoiceExample(
        record.where,
        _text(values.get(chosen["id"])) if "id" in chosen else None,
        _text(values.get(chosen["context"])) or "" if "context" in chosen
        else "",
        _text(values.get(chosen["question"])) or "" if "question" in chosen
        else "", choices, label))
  bad.log_summary()
  if not examples:
    raise UserInputError(f"{path} has no records" + (
        f" left ({bad.count} skipped)" if bad.count else ""))
  return ChoiceFile(path, examples, num_choices,
                    {k: (f"{v[0][:-1]}#" if isinstance(v, list) else v)
                     for k, v in chosen.items()}, bad.count)
