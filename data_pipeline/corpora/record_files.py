"""Labelled records from a user's file: CSV, TSV, JSON lines or Parquet.

What fine-tuning on one's own data reads (`--train_file`, `--dev_file`,
`--test_file`): one record per row, columns by name.

  format   extension                 rows
  csv      .csv (.csv.gz)            Python's csv module: a header line, then
                                     rows; a quoted field may hold commas,
                                     quotes ("") and newlines
  tsv      .tsv (.tsv.gz)            a header line, fields split on tabs, no
                                     quoting (GLUE's files)
  jsonl    .jsonl .json (.gz)        one JSON object per line (a .json file
                                     holding one JSON array of objects is
                                     read too)
  parquet  .parquet                  read one row group at a time, only the
                                     columns asked for

`--input_format` overrides the extension. Every record knows where it came
from (`path:line`, or `path, row group g, row r` for Parquet), and errors
name that place. A row that cannot be a record (a wrong field count, a line
that is not a JSON object) is handed out as a `Record` with a `problem`, so
that the task decides whether to fail or to skip and count it
(`--skip_bad_records`); a missing column or an empty file fails at once.

A Parquet file written by Hugging Face `datasets` carries the datasets
`Features` in its schema metadata (key `huggingface`); a `ClassLabel` column
(integers) keeps its names from there: `RecordFile.class_names`.

All reads go through albert_common.file_io: any filesystem (`gs://`).
"""

import csv
import dataclasses
import gzip
import io
import json
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple
import zlib

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_common.settings_fields import FlatConstructible
from albert_common.settings_fields import setting

FORMATS = ("csv", "tsv", "jsonl", "parquet")
INPUT_FORMATS = ("auto",) + FORMATS
_EXTENSIONS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl",
               ".json": "jsonl", ".parquet": "parquet"}


@dataclasses.dataclass(frozen=True, kw_only=True)
class RecordFileOptions(FlatConstructible):
  """How a user's record files are read (each field is the flag of its
  name)."""

  input_format: str = setting(
      "auto", "Format of --train_file / --dev_file / --test_file: csv "
      "(Python's csv quoting), tsv (no quoting, as GLUE), jsonl (one JSON "
      "object per line; also .json), parquet (row groups); .gz of the text "
      "ones. auto: from the file's extension.", choices=INPUT_FORMATS)
  label_column: str = setting("label", "The column holding the label.")
  id_column: str = setting(
      "id", "The column holding a record's id, copied into the "
      "predictions; ignored when a file has no such column.")
  skip_bad_records: bool = setting(
      False, "Skip records that cannot be used (wrong field count, empty "
      "or unknown label, missing text, wrong number of choices) and count "
      "them in the log, instead of stopping at the first.")


@dataclasses.dataclass(frozen=True)
class Record:
  """One row of a file.

  Attributes:
    where: "path:line" (text formats) or "path, row group g, row r".
    values: column name -> value (str for csv/tsv; JSON / Arrow values
      otherwise); None when the row is bad.
    problem: why the row is bad ("" for a good one).
  """
  where: str
  values: Optional[Dict[str, Any]]
  problem: str = ""


def detect_format(path: str, input_format: str = "auto") -> str:
  """The format of `path`: `input_format` unless "auto", else its extension
  (a trailing .gz ignored).

  Raises:
    UserInputError: an unknown format or extension.
  """
  if input_format not in INPUT_FORMATS:
    raise UserInputError(f"--input_format={input_format} is not one of "
                         f"{', '.join(INPUT_FORMATS)}")
  if input_format != "auto":
    return input_format
  name = path[:-3] if path.endswith(".gz") else path
  for extension, kind in _EXTENSIONS.items():
    if name.lower().endswith(extension):
      return kind
  raise UserInputError(
      f"{path}: cannot tell the format from the extension (.csv, .tsv, "
      ".jsonl, .json, .parquet, or .gz of the text ones); pass "
      "--input_format")


class RecordFile:
  """The records of one file.

  Args:
    path: any filesystem.
    input_format: one of INPUT_FORMATS.

  Attributes:
    format: one of FORMATS.
    class_names: {column: ClassLabel names} from a Parquet file's Hugging
      Face metadata (also for a list of ClassLabel); {} otherwise.
  """

  def __init__(self, path: str, input_format: str = "auto"):
    self.path = path
    self.format = detect_format(path, input_format)
    self.class_names: Dict[str, Tuple[str, ...]] = {}
    self._text: Optional[str] = None
    self._schema_columns: Optional[Tuple[str, ...]] = None
    if not file_io.exists(path):
      raise UserInputError(f"{path} does not exist")
    if self.format == "parquet":
      self._read_parquet_schema()

  # --- columns ----------------------------------------------------------------

  def header(self) -> Optional[Tuple[str, ...]]:
    """The file's column names (csv/tsv header, Parquet schema); None for
    JSON lines, whose records each have their own keys."""
    if self.format == "parquet":
      return self._schema_columns
    if self.format == "jsonl":
      return None
    rows = self._rows()
    first = next(rows, None)
    if first is None:
      raise UserInputError(f"{self.path} is empty (expected a header line)")
    return tuple(first[1])

  # --- records ----------------------------------------------------------------

  def records(self, columns: Optional[Sequence[str]] = None
             ) -> Iterator[Record]:
    """Every record in file order; Parquet reads only `columns` (default:
    all)."""
    if self.format == "parquet":
      yield from self._parquet_records(columns)
    elif self.format == "jsonl":
      yield from self._json_records()
    else:
      rows = self._rows()
      first = next(rows, None)
      if first is None:
        raise UserInputError(f"{self.path} is empty (expected a header "
                             "line)")
      header = first[1]
      kind = "comma" if self.format == "csv" else "tab"
      for line, fields in rows:
        where = f"{self.path}:{line}"
        if len(fields) != len(header):
          yield Record(where, None, f"expected {len(header)} {kind}-"
                       f"separated fields (the header's), found "
                       f"{len(fields)}")
        else:
          yield Record(where, dict(zip(header, fields)))

  # --- text formats -----------------------------------------------------------

  def _decoded(self) -> str:
    if self._text is None:
      try:
        data = file_io.read_bytes(self.path)
        if self.path.endswith(".gz"):
          data = gzip.decompress(data)
      except OSError as e:
        raise UserInputError(f"cannot read {self.path}: {e}") from e
      except (EOFError, zlib.error) as e:
        raise UserInputError(f"{self.path}: not a complete gzip file "
                             f"({e})") from None
      try:
        self._text = data.decode("utf-8-sig")
      except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise UserInputError(f"{self.path}:{line}: not valid UTF-8") from e
    return self._text

  def _rows(self) -> Iterator[Tuple[int, List[str]]]:
    """(first line number, fields) of every non-blank row, header first."""
    text = self._decoded()
    if self.format == "tsv":
      for number, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if line:
          yield number, line.split("\t")
      return
    reader = csv.reader(io.StringIO(text, newline=""))
    previous = 0
    while True:
      try:
        row = next(reader)
      except StopIteration:
        return
      except csv.Error as e:
        raise UserInputError(f"{self.path}:{previous + 1}: not CSV: "
                             f"{e}") from None
      start, previous = previous + 1, reader.line_num
      if row:
        yield start, row

  def _json_records(self) -> Iterator[Record]:
    text = self._decoded()
    if text.lstrip().startswith("["):
      try:
        values = json.loads(text)
      except json.JSONDecodeError as e:
        raise UserInputError(f"{self.path}:{e.lineno}: not JSON: "
                             f"{e.msg}") from None
      for i, value in enumerate(values):
        where = f"{self.path}, record {i}"
        yield (Record(where, value) if isinstance(value, dict) else
               Record(where, None, "not a JSON object"))
      return
    for number, line in enumerate(text.split("\n"), start=1):
      if not line.strip():
        continue
      where = f"{self.path}:{number}"
      try:
        value = json.loads(line)
      except json.JSONDecodeError as e:
        yield Record(where, None, f"not JSON ({e.msg})")
        continue
      yield (Record(where, value) if isinstance(value, dict) else
             Record(where, None, "not a JSON object"))

  # --- Parquet ----------------------------------------------------------------

  def _open_parquet(self):
    """(ParquetFile, the raw file to close)."""
    import pyarrow
    import pyarrow.parquet as pq
    raw = file_io.open_read(self.path)
    try:
      return pq.ParquetFile(raw), raw
    except (pyarrow.ArrowException, OSError) as e:
      raw.close()
      raise UserInputError(f"{self.path}: not a readable Parquet file "
                           f"({str(e).splitlines()[0]})") from None

  def _read_parquet_schema(self) -> None:
    parquet, raw = self._open_parquet()
    try:
      schema = parquet.schema_arrow
      self._schema_columns = tuple(schema.names)
      self.class_names = class_label_names(schema.metadata or {})
    finally:
      raw.close()

  def _parquet_records(self, columns: Optional[Sequence[str]]
                      ) -> Iterator[Record]:
    import pyarrow
    names = [c for c in (columns or self._schema_columns)
             if c in self._schema_columns]
    parquet, raw = self._open_parquet()
    try:
      for group in range(parquet.num_row_groups):
        try:
          table = parquet.read_row_group(group, columns=names,
                                         use_threads=False)
        except (pyarrow.ArrowException, OSError) as e:
          raise UserInputError(
              f"{self.path}, row group {group}: cannot read it "
              f"({str(e).splitlines()[0]})") from None
        values = {name: table.column(name).to_pylist() for name in names}
        for row in range(table.num_rows):
          yield Record(f"{self.path}, row group {group}, row {row}",
                       {name: values[name][row] for name in names})
    finally:
      raw.close()


def class_label_names(metadata: Dict[bytes, bytes]
                     ) -> Dict[str, Tuple[str, ...]]:
  """{column: names} of the ClassLabel columns (and lists of ClassLabel)
  in a Parquet schema's Hugging Face metadata:
  {"info": {"features": {"label": {"names": [...], "_type": "ClassLabel"},
  "tags": {"feature": {"names": [...], "_type": "ClassLabel"}, "_type":
  "Sequence"}}}} ("List" in datasets 4)."""
  raw = metadata.get(b"huggingface")
  if not raw:
    return {}
  try:
    features = json.loads(raw)["info"]["features"]
  except (ValueError, KeyError, TypeError):
    return {}
  names = {}
  for column, feature in (features or {}).items():
    if isinstance(feature, dict) and feature.get("_type") in (
        "Sequence", "List", "LargeList"):
      feature = feature.get("feature")
    if (isinstance(feature, dict) and feature.get("_type") == "ClassLabel"
        and isinstance(feature.get("names"), list)):
      names[column] = tuple(str(n) for n in feature["names"])
  return names


def missing_column_error(where: str, column: str, flag: str,
                         available: Sequence[str]) -> UserInputError:
  """The one error of a column a file does not have, naming those it
  has."""
  return UserInputError(
      f"{where}: no column {column!r} ({flag}); the columns there: "
      f"{', '.join(available) or 'none'}")


class BadRecords:
  """Fails on a bad record, or with `skip` counts it (and logs the first
  few), as data creation's --skip_bad_records does.

  Args:
    path: the file, for the summary.
    skip: skip and count instead of raising.
  """

  LOGGED = 5

  def __init__(self, path: str, skip: bool):
    self.path = path
    self.skip = skip
    self.count = 0

  def bad(self, where: str, problem: str) -> None:
    """Raises UserInputError("<where>: <problem>") unless skipping."""
    if not self.skip:
      raise UserInputError(f"{where}: {problem} (--skip_bad_records "
                           "skips such records)")
    self.count += 1
    if self.count <= self.LOGGED:
      from absl import logging
      logging.warning("skipped %s: %s", where, problem)

  def log_summary(self) -> None:
    if self.count:
      from absl import logging
      logging.warning("%s: skipped %d bad records (--skip_bad_records)",
                      self.path, self.count)
