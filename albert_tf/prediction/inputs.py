"""Input records for tools.predict, streamed: memory holds one line (CSV:
one record; Parquet: one row group), whatever the file's size.

Formats as the fine-tuning tools read them (data_pipeline.corpora.
record_files: CSV with Python's quoting, TSV split on tabs, JSON lines,
Parquet row groups) plus plain text, one record a line (its column is
`text`). `.gz` files are decompressed as a stream; any filesystem
(albert_common.file_io). Blank lines are not records.

Every record is an `InputRow`: its number in the file (0-based, counting
bad records too, so a row keeps its number whatever is skipped), where it
is (`path:line`, Parquet `path, row group g, row r`), and either its texts
and id or the problem that makes it bad: not JSON, not a JSON object, a
wrong field count, bytes that are not UTF-8, no such column, no text. A
column the header (or Parquet schema) lacks fails the whole file at once,
with the fine-tuning tools' message (record_files.missing_column_error).

Multiple choice (`Columns.choices` set): text_a is the context, text_b the
question (each optional when left at its default, with SWAG's `sent1`,
`sent2` as the fine-tuning tool's fallbacks), `choices` a list (JSON /
Parquet, or a JSON list in a CSV field) or numbered columns <name>0,
<name>1, ... (left at `choices`: SWAG's ending0, ending1, ...); a record
with another number of choices than the export's is a bad row.
"""

import csv
import dataclasses
import gzip
import json
from typing import Any, Dict, Iterator, List, Optional, Tuple
import zlib

from albert_common import file_io
from albert_common.errors import UserInputError
from data_pipeline.corpora import record_files
from data_pipeline.tasks.multiple_choice import examples as choice_examples
from data_pipeline.tasks.own_data.examples import TEXT_FALLBACKS

TEXT_COLUMN = "text"  # plain text's one column


@dataclasses.dataclass(frozen=True)
class Columns:
  """The columns asked for (the tool's flags: `flags` names those of text
  and text_b, SQuAD's and multiple choice's --context_column and
  --question_column). Multiple choice: `choices` (--choices_column) and
  the export's `num_choices`."""
  text: str = "text"
  text_b: str = ""
  id: str = ""
  flags: Tuple[str, str] = ("--text_column", "--text_b_column")
  choices: str = ""
  num_choices: int = 0


@dataclasses.dataclass(frozen=True)
class InputRow:
  """One record.

  Attributes:
    row: its 0-based number among the file's records.
    where: "path:line" or "path, row group g, row r".
    text_a, text_b: its texts (text_b None without --text_b_column).
    record_id: the --id_column value as read (None without the flag).
    problem: why it is bad ("" for a good one; then the texts are None).
    choices: multiple choice: the choices' texts, else None.
  """
  row: int
  where: str
  text_a: Optional[str] = None
  text_b: Optional[str] = None
  record_id: Any = None
  problem: str = ""
  choices: Optional[Tuple[str, ...]] = None


def detect_format(path: str, input_format: str = "auto") -> str:
  """record_files.detect_format, with plain text (.txt, .txt.gz)."""
  if input_format == "text":
    return "text"
  name = path[:-3] if path.endswith(".gz") else path
  if input_format == "auto" and name.lower().endswith(".txt"):
    return "text"
  return record_files.detect_format(path, input_format)


def _lines(path: str) -> Iterator[Tuple[int, Optional[str]]]:
  """(1-based line number, text with its line ending, or None where the
  line is not UTF-8) of every line."""
  raw = file_io.open_read(path)
  stream = gzip.GzipFile(fileobj=raw, mode="rb") if path.endswith(
      ".gz") else raw
  try:
    number = 0
    while True:
      try:
        line = stream.readline()
      except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise UserInputError(f"{path}:{number + 1}: compressed file cut "
                             f"short or corrupt ({e})") from None
      if not line:
        return
      number += 1
      try:
        yield number, line.decode("utf-8-sig" if number == 1 else "utf-8")
      except UnicodeDecodeError:
        yield number, None
  finally:
    stream.close()
    raw.close()


def _text_value(value) -> Optional[str]:
  if value is None or isinstance(value, (dict, list)):
    return None
  return value if isinstance(value, str) else str(value)


def _choice_texts(values: Dict[str, Any], chosen, num_choices: int
                 ) -> Tuple[Optional[Tuple[str, ...]], str]:
  """(the choices' texts, "") or (None, the problem) of a record."""
  value = ([values[c] for c in chosen] if isinstance(chosen, list)
           else values[chosen])
  if isinstance(value, str) and value.lstrip().startswith("["):
    try:
      value = json.loads(value)
    except json.JSONDecodeError:
      return None, f"choices {value[:80]!r} are not a JSON list"
  if hasattr(value, "tolist"):  # a Parquet list read as an array
    value = value.tolist()
  if not isinstance(value, (list, tuple)):
    return None, f"choices {str(value)[:80]!r} are not a list"
  texts = tuple(_text_value(v) for v in value)
  if any(t is None for t in texts):
    return None, "a choice is empty (null)"
  if num_choices and len(texts) != num_choices:
    return None, (f"{len(texts)} choices; the export takes "
                  f"{num_choices}")
  return texts, ""


class InputFile:
  """The records of one input file, as InputRows.

  Args:
    path: the file (any filesystem).
    input_format: one of options.INPUT_FORMATS.
    columns: the columns to read.
  """

  def __init__(self, path: str, input_format: str, columns: Columns):
    self.path = path
    self.format = detect_format(path, input_format)
    self.columns = columns
    if not file_io.exists(path):
      raise UserInputError(f"{path} does not exist")
    self._chosen: Optional[Dict[str, str]] = None

  def _choose(self, available, where: str) -> Dict[str, Any]:
    """role -> column among `available` (multiple choice's `choices`: a
    name or a list of numbered names).

    Raises:
      UserInputError: a missing text column (naming those there are).
    """
    if self.columns.choices:
      return self._choose_choices(available, where)
    text = self.columns.text
    if text == "text" and "text" not in available:
      text = next((n for n in TEXT_FALLBACKS[1:] if n in available), text)
    chosen = {}
    flags = self.columns.flags
    for role, name, flag in (("text_a", text, flags[0]),
                             ("text_b", self.columns.text_b, flags[1]),
                             ("id", self.columns.id, "--id_column")):
      if name and name not in available:
        raise record_files.missing_column_error(where, name, flag,
                                                list(available))
      if name:
        chosen[role] = name
    return chosen

  def _choose_choices(self, available, where: str) -> Dict[str, Any]:
    """_choose for multiple choice: the fine-tuning tool's choice of
    columns (choice_examples.choice_columns), context as text_a and the
    question as text_b."""
    roles = choice_examples.choice_columns(
        list(available), where, self.columns.text, self.columns.text_b,
        self.columns.choices)
    as_row = {"context": "text_a", "question": "text_b", "choices": "choices"}
    chosen: Dict[str, Any] = {as_row[role]: column
                              for role, column in roles.items()}
    if self.columns.id:
      if self.columns.id not in available:
        raise record_files.missing_column_error(
            where, self.columns.id, "--id_column", list(available))
      chosen["id"] = self.columns.id
    return chosen

  def _columns(self) -> List[str]:
    """The columns read (self._chosen set)."""
    return sorted({c for v in self._chosen.values()
                   for c in (v if isinstance(v, list) else [v])})

  def _row(self, row: int, where: str, values: Dict[str, Any]) -> InputRow:
    """The InputRow of a record's values (self._chosen set)."""
    missing = [c for c in self._columns() if c not in values]
    if missing:
      return InputRow(row, where, problem=(
          f"no column {missing[0]!r}; the columns there: "
          f"{', '.join(sorted(values)) or 'none'}"))
    texts = {role: _text_value(values[self._chosen[role]])
             for role in ("text_a", "text_b") if role in self._chosen}
    for role, text in texts.items():
      if text is None:
        return InputRow(row, where, problem=(
            f"no text in column {self._chosen[role]!r}"))
    record_id = values[self._chosen["id"]] if "id" in self._chosen else None
    if not self.columns.choices:
      return InputRow(row, where, texts["text_a"], texts.get("text_b"),
                      record_id)
    choices, problem = _choice_texts(values, self._chosen["choices"],
                                     self.columns.num_choices)
    if problem:
      return InputRow(row, where, problem=problem)
    return InputRow(row, where, texts.get("text_a", ""),
                    texts.get("text_b", ""), record_id, choices=choices)

  def rows(self) -> Iterator[InputRow]:
    """Every record, in file order."""
    if self.format == "parquet":
      yield from self._parquet_rows()
    elif self.format in ("csv", "tsv"):
      yield from self._delimited_rows()
    else:
      yield from self._line_rows()

  def _line_rows(self) -> Iterator[InputRow]:
    """JSON lines and plain text."""
    if self.format == "text":
      if self.columns.id or self.columns.text_b:
        flag = "--id_column" if self.columns.id else self.columns.flags[1]
        raise UserInputError(
            f"{flag}: {self.path} is plain text (one record a line, no "
            "columns); its rows are keyed by file and row")
      self._chosen = {"text_a": TEXT_COLUMN}
    row = 0
    for number, line in _lines(self.path):
      if line is not None and not line.strip():
        continue
      where = f"{self.path}:{number}"
      if line is None:
        yield InputRow(row, where, problem="not valid UTF-8")
      elif self.format == "text":
        yield InputRow(row, where, line.rstrip("\r\n"))
      else:
        try:
          values = json.loads(line)
        except json.JSONDecodeError as e:
          yield InputRow(row, where, problem=f"not JSON ({e.msg})")
          row += 1
          continue
        if not isinstance(values, dict):
          yield InputRow(row, where, problem="not a JSON object")
        else:
          if self._chosen is None:  # the first record's keys decide
            self._chosen = self._choose(sorted(values), where)
          yield self._row(row, where, values)
      row += 1

  def _delimited_rows(self) -> Iterator[InputRow]:
    """CSV (Python's quoting; a field may span lines) and TSV."""
    bad_lines: List[int] = []

    def text_lines():
      for number, line in _lines(self.path):
        if line is None:
          bad_lines.append(number)
          line = "\n"
        yield line

    lines = text_lines()
    if self.format == "tsv":
      reader = (line.rstrip("\r\n").split("\t") for line in lines)
    else:
      reader = csv.reader(lines)
    header, line_number, row = None, 0, 0
    while True:
      start = line_number + 1
      try:
        fields = next(reader)
      except StopIteration:
        break
      except csv.Error as e:
        raise UserInputError(f"{self.path}:{start}: not CSV: {e}") from None
      line_number = reader.line_num if self.format == "csv" else start
      bad = [n for n in bad_lines if n >= start]
      del bad_lines[:]
      if not any(fields) and not bad:
        continue
      where = f"{self.path}:{start}"
      if header is None:
        if bad:
          raise UserInputError(f"{where}: the header is not valid UTF-8")
        header = fields
        self._chosen = self._choose(header, where)
        continue
      if bad:
        yield InputRow(row, f"{self.path}:{bad[0]}",
                       problem="not valid UTF-8")
      elif len(fields) != len(header):
        kind = "comma" if self.format == "csv" else "tab"
        yield InputRow(row, where, problem=(
            f"expected {len(header)} {kind}-separated fields (the "
            f"header's), found {len(fields)}"))
      else:
        yield self._row(row, where, dict(zip(header, fields)))
      row += 1
    if header is None:
      raise UserInputError(f"{self.path} is empty (expected a header line)")

  def _parquet_rows(self) -> Iterator[InputRow]:
    source = record_files.RecordFile(self.path, "parquet")
    self._chosen = self._choose(source.header(), self.path)
    for row, record in enumerate(source.records(self._columns())):
      yield self._row(row, record.where, record.values)
