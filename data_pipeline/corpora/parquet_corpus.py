"""Parquet corpora (`--input_format=parquet`): one document per row.

Hugging Face `datasets` shards, C4 and FineWeb: the text is a string column
(`--text_field`; a dotted path reaches a field of a struct column). A row
group is a piece, read alone (`pyarrow.parquet.ParquetFile.read_row_group`,
only the text's column), so memory holds one row group whatever the file's
size. Files are read through `fs.open_read`, so any filesystem works.

Row groups are read without Arrow's thread pool (`use_threads=False`): one
column of one group gains little from it, and a pool thread still running
when the interpreter exits aborts the process ("terminate called without
an active exception", apache/arrow#34314), which a newcomer's test run
saw once in `tools.split_sentences`.
"""

from typing import Iterator, List, Optional, Tuple

from albert_common import file_io
from albert_common.errors import UserInputError


def _parquet_file(path: str, fs):
  """(ParquetFile, the file object to close)."""
  import pyarrow
  import pyarrow.parquet as pq
  raw = fs.open_read(path)
  try:
    return pq.ParquetFile(raw), raw
  except (pyarrow.ArrowException, OSError) as e:
    raw.close()
    raise UserInputError(f"{path}: not a readable Parquet file "
                         f"({str(e).splitlines()[0]})") from None


def _check_column(path: str, schema, field: str) -> None:
  """UserInputError unless `field` names a string column (or struct
  field)."""
  import pyarrow as pa
  names = field.split(".")
  fields = list(schema)
  arrow_type = None
  for depth, name in enumerate(names):
    by_name = {f.name: f for f in fields}
    if name not in by_name:
      where = ("columns" if depth == 0 else
               f"fields of {'.'.join(names[:depth])}")
      raise UserInputError(
          f"{path}: no column {field!r} (--text_field); its {where}: "
          f"{', '.join(by_name) or 'none'}")
    arrow_type = by_name[name].type
    fields = list(arrow_type) if pa.types.is_struct(arrow_type) else []
  if not (pa.types.is_string(arrow_type) or
          pa.types.is_large_string(arrow_type)):
    raise UserInputError(f"{path}: column {field!r} is {arrow_type}, not a "
                         "string (--text_field)")


def row_groups(path: str, field: str, fs=None) -> int:
  """Number of row groups, once the text column is checked.

  Raises:
    UserInputError: not a Parquet file, or no string column `field`
      (naming the columns it has).
  """
  fs = fs or file_io
  parquet, raw = _parquet_file(path, fs)
  try:
    _check_column(path, parquet.schema_arrow, field)
    return parquet.num_row_groups
  finally:
    raw.close()


def read_row_group(path: str, group: int, field: str,
                   fs=None) -> Iterator[Tuple[int, Optional[str],
                                              Optional[str]]]:
  """(row, text, None) or (row, None, error) of each row of one group."""
  fs = fs or file_io
  import pyarrow
  parquet, raw = _parquet_file(path, fs)
  try:
    if group >= parquet.num_row_groups:
      return
    names = field.split(".")
    try:
      table = parquet.read_row_group(group, columns=[names[0]],
                                     use_threads=False)
    except (pyarrow.ArrowException, OSError) as e:
      raise UserInputError(f"{path}, row group {group}: cannot read it "
                           f"({str(e).splitlines()[0]})") from None
    values: List = table.column(0).to_pylist()
    for row, value in enumerate(values):
      for name in names[1:]:
        value = value.get(name) if isinstance(value, dict) else None
      if isinstance(value, str):
        yield row, value, None
      else:
        yield row, None, f"field {field!r} is null, not a string"
  finally:
    raw.close()
