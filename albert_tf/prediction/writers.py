"""One output shard, serialized and published atomically.

A shard is built in memory (a bounded number of rows) and written with
`file_io.write_atomic` (a hidden temporary name, then a rename), so a shard
under its final name is always whole and a reader never sees half of one.

  jsonl    one JSON object a line (UTF-8, not ASCII-escaped)
  parquet  one table; nested predictions (`probabilities` by label name,
           `entities`, `embedding`) as Arrow structs and lists
  csv      a header line, then rows; nested predictions as JSON text
"""

import csv
import io
import json
from typing import Any, Dict, Sequence

from albert_common import file_io

EXTENSIONS = {"jsonl": ".jsonl", "parquet": ".parquet", "csv": ".csv"}


def serialize(rows: Sequence[Dict[str, Any]], output_format: str) -> bytes:
  """The bytes of a shard holding `rows`."""
  if output_format == "jsonl":
    return "".join(json.dumps(row, ensure_ascii=False) + "\n"
                   for row in rows).encode("utf-8")
  if output_format == "csv":
    if not rows:
      return b""
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    columns = list(rows[0])
    writer.writerow(columns)
    for row in rows:
      writer.writerow([json.dumps(row[c], ensure_ascii=False)
                       if isinstance(row[c], (dict, list)) else row[c]
                       for c in columns])
    return text.getvalue().encode("utf-8")
  if output_format == "parquet":
    import pyarrow as pa
    import pyarrow.parquet as pq
    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(list(rows)), buffer)
    return buffer.getvalue()
  raise ValueError(f"unknown output format {output_format!r}")


def write_shard(path: str, rows: Sequence[Dict[str, Any]],
                output_format: str) -> None:
  """Publishes the shard at `path` whole (temporary name, rename)."""
  file_io.write_atomic(path, serialize(rows, output_format))


def write_rejects(path: str, rejects: Sequence[Dict[str, Any]]) -> None:
  """The bad rows of a shard (file, row, where, problem), JSON lines."""
  file_io.write_atomic(path, serialize(rejects, "jsonl"))
