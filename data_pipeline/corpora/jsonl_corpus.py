"""JSON-lines corpora (`--input_format=jsonl`): one document per record.

Files ending in `.gz` (`.jsonl.gz`, `.json.gz`, C4's shards) are gzip
streams, read through `gzip` on top of `fs.open_read`, so any filesystem
works. Pieces are byte ranges of the (uncompressed) text, as for the text
format: a record belongs to the piece its line starts in. A gzip stream
cannot seek, so the planner decompresses each gzip file once to learn its
size (threads, in parallel), and a worker keeps its last stream open: pieces
of one file handed out in order are read forward, so each worker
decompresses a file about once. Records are read one line at a time: memory
holds one piece's documents, whatever the file's size.
"""

import gzip
import json
from typing import Iterator, NamedTuple, Optional, Tuple
import zlib

from albert_common import file_io
from albert_common.errors import UserInputError

_BLOCK = 1 << 20
_CUT_SHORT = (EOFError, gzip.BadGzipFile, zlib.error)


def is_compressed(path: str) -> bool:
  return path.endswith(".gz")


def _open(path: str, fs):
  """(binary stream of the text, the underlying file)."""
  raw = fs.open_read(path)
  if is_compressed(path):
    return gzip.GzipFile(fileobj=raw, mode="rb"), raw
  return raw, raw


def _cut_short_error(path: str, size: int, error: Exception):
  return UserInputError(
      f"{path}: compressed file cut short or corrupt after {size} bytes of "
      f"text ({error or 'end of stream missing'}); fetch it again or pass "
      "--skip_bad_records")


def text_size(path: str, skip_bad_records: bool, fs=None) -> int:
  """Bytes of text in the file (decompressed: a full read for gzip).

  Raises:
    UserInputError: a gzip file cut short (unless skip_bad_records: the
      size is what decompresses).
  """
  fs = fs or file_io
  if not is_compressed(path):
    return fs.getsize(path)
  size = 0
  stream, raw = _open(path, fs)
  try:
    while True:
      try:
        block = stream.read(_BLOCK)
      except _CUT_SHORT as e:
        if skip_bad_records:
          return size
        raise _cut_short_error(path, size, e) from None
      if not block:
        return size
      size += len(block)
  finally:
    stream.close()
    raw.close()


def line_number(path: str, offset: int, fs=None) -> int:
  """1-based number of the line at text byte `offset` (error path)."""
  fs = fs or file_io
  stream, raw = _open(path, fs)
  count, remaining = 1, offset
  try:
    while remaining > 0:
      try:
        block = stream.read(min(remaining, _BLOCK))
      except _CUT_SHORT:
        break
      if not block:
        break
      count += block.count(b"\n")
      remaining -= len(block)
  finally:
    stream.close()
    raw.close()
  return count


class _Cursor(NamedTuple):
  """A worker's open stream: where it stands and the last line it read."""
  path: str
  stream: object
  raw: object
  position: int
  last_line_start: int


# A worker's last stream (gzip files are read forward, never re-opened for
# the next piece of the same file).
_OPEN = {}


def _close_cursor() -> None:
  cursor = _OPEN.pop("cursor", None)
  if cursor is not None:
    cursor.stream.close()
    cursor.raw.close()


def _positioned(path: str, start: int, fs) -> Tuple[object, int]:
  """(stream, offset of the first line starting at or after `start`)."""
  cursor = _OPEN.get("cursor")
  if (cursor is not None and cursor.path == path and
      cursor.last_line_start < start <= cursor.position):
    return cursor.stream, cursor.position
  if not (cursor is not None and cursor.path == path and
          is_compressed(path) and cursor.position < start):
    _close_cursor()
    stream, raw = _open(path, fs)
    cursor = _Cursor(path, stream, raw, 0, -1)
  stream = cursor.stream
  _OPEN["cursor"] = cursor
  if start == 0:
    return stream, 0
  stream.seek(start - 1)  # gzip: decompresses forward to it.
  if stream.read(1) == b"\n":
    return stream, start
  rest = stream.readline()
  return stream, start + len(rest)


class Record(NamedTuple):
  """One line of the file: `text` the document, or `error` why not.

  `cut_short`: the error is a gzip stream cut short (a whole message that
  names the file; the file's reading ends there).
  """
  offset: int
  text: Optional[str]
  error: Optional[str]
  cut_short: bool = False


def _field(value, field: str):
  """(the dotted field's value, None) or (None, what is wrong)."""
  for name in field.split("."):
    if not isinstance(value, dict):
      kind = "null" if value is None else type(value).__name__
      return None, f"the record is a JSON {kind}, not an object with " \
                   f"field {field!r} (--text_field)"
    if name not in value:
      return None, (f"no field {field!r} (--text_field); the record has: "
                    f"{', '.join(map(str, value)) or 'no fields'}")
    value = value[name]
  if not isinstance(value, str):
    kind = "null" if value is None else type(value).__name__
    return None, f"field {field!r} is a JSON {kind}, not a string"
  return value, None


def parse_record(raw: bytes, field: str) -> Tuple[Optional[str],
                                                  Optional[str]]:
  """(document text, None) or (None, the error) of one JSON line."""
  try:
    value = json.loads(raw)
  except UnicodeDecodeError as e:
    return None, f"not UTF-8 ({e.reason} at byte {e.start})"
  except json.JSONDecodeError as e:
    return None, f"not a JSON record ({e.msg} at column {e.colno})"
  return _field(value, field)


def read_records(path: str, start: int, end: int, field: str,
                 fs=None) -> Iterator[Record]:
  """The records whose line starts in text bytes [start, end).

  A gzip stream cut short ends the records with one Record whose error
  says so (the line it cut is not returned).
  """
  fs = fs or file_io
  stream, offset = _positioned(path, start, fs)
  last = -1
  try:
    while offset < end:
      try:
        raw = stream.readline()
      except _CUT_SHORT as e:
        _close_cursor()
        yield Record(offset, None, str(_cut_short_error(path, offset, e)),
                     True)
        return
      if not raw:
        break
      last = offset
      offset += len(raw)
      if not raw.strip():
        continue  # Blank lines between records are not records.
      if is_compressed(path) and not raw.endswith(b"\n"):
        # The last line of a stream: make sure it was not cut.
        try:
          stream.read(1)
        except _CUT_SHORT as e:
          _close_cursor()
          yield Record(last, None, str(_cut_short_error(path, last, e)),
                     True)
          return
      text, error = parse_record(raw, field)
      yield Record(last, text, error)
  finally:
    if "cursor" in _OPEN and _OPEN["cursor"].stream is stream:
      _OPEN["cursor"] = _OPEN["cursor"]._replace(position=offset,
                                                  last_line_start=last)
    if not is_compressed(path):
      _close_cursor()
