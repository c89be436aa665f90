"""A pretraining corpus as fixed pieces of documents, each read on its own.

Input format (official): one sentence per line, blank (or whitespace-only)
lines between documents. Each file is cut into pieces of `piece_bytes` bytes;
a document belongs to the piece its first line starts in, and is read whole
by that piece even where it runs past the piece's end. Pieces depend only on
the files and `piece_bytes`, never on the number of workers, so they are the
unit of work, of seeding and of shuffling in `pretraining_writer`; their
number is known from the file sizes, and each worker reads its own pieces
(`read_piece`), so the main process never reads the text.

Files may be on any TensorFlow filesystem (`gs://`): pieces are read with
seek + read (`file_io.open_read`); local files with Python's file API, so
workers never import TensorFlow for a local corpus.

Lines that are not valid UTF-8 raise a UserInputError naming the file and
line; with `skip_non_utf8_lines` they are skipped, counted, and end the
document they are in (as a blank line would).
"""

import math
from typing import Iterator, List, NamedTuple, Optional, Sequence, Tuple

from absl import logging

from albert_common import file_io
from albert_common.errors import UserInputError

# Document keys are file_index * 2**40 + byte offset: files up to 1 TiB.
_MAX_FILE_BYTES = 1 << 40
_BACK_SCAN = 1 << 16


class PieceSpec(NamedTuple):
  """A byte range [start, end) of one input file.

  Attributes:
    index: int, position of the piece in the corpus (files in order).
    path: str, the file.
    file_index: int, position of the file in the input list.
    start, end: int, the byte range.
  """
  index: int
  path: str
  file_index: int
  start: int
  end: int

  @property
  def key(self) -> int:
    """Corpus-wide unique int (seeds the piece's shuffle)."""
    return self.file_index * _MAX_FILE_BYTES + self.start


class Piece(NamedTuple):
  """The documents of a piece.

  Attributes:
    index: int, as PieceSpec.index.
    key: int, as PieceSpec.key.
    documents: list of (document key, list of str sentences); the key is
      file_index * 2**40 + the byte offset of the document's first line.
    lines: lines (records, rows) starting in the piece's range.
    skipped_lines: those of them skipped as not UTF-8.
    bad_records: records skipped as bad (document formats).
    short_documents, duplicate_documents: documents dropped by the
      hygiene flags (`document_pieces.filter_documents`).
  """
  index: int
  key: int
  documents: List[Tuple[int, List[str]]]
  lines: int = 0
  skipped_lines: int = 0
  bad_records: int = 0
  short_documents: int = 0
  duplicate_documents: int = 0


def resolve_input_files(input_file: str, fs=None) -> List[str]:
  """Files named by a comma-separated list of paths or globs, in order.

  `fs` (here and below): the filesystem functions, `albert_common.file_io` by
  default; the Beam pipeline passes a `beam_file_io.BeamFileIO`.

  Raises:
    UserInputError: naming the first pattern that matches no file.
  """
  return file_io.glob_files(input_file, "no input file given (--input_file)",
                            "--input_file: no such file: {pattern}", fs=fs)


def pieces_per_file(files: Sequence[str], piece_bytes: int,
                    fs=None) -> List[int]:
  """Number of pieces of each file (at least 1, even for an empty file)."""
  counts = []
  for path in files:
    size = (fs or file_io).getsize(path)
    if size >= _MAX_FILE_BYTES:
      raise UserInputError(f"input file larger than 1 TiB: {path}; split it")
    counts.append(max(1, math.ceil(size / piece_bytes)))
  return counts


def file_pieces(path: str, file_index: int, first_index: int, count: int,
                piece_bytes: int) -> Iterator[PieceSpec]:
  """The `count` pieces of one file; the first has index `first_index`."""
  for k in range(count):
    yield PieceSpec(first_index + k, path, file_index, k * piece_bytes,
                    (k + 1) * piece_bytes)


def plan_pieces(files: Sequence[str], piece_bytes: int,
                fs=None) -> Iterator[PieceSpec]:
  """Every piece of every file, in order."""
  index = 0
  for file_index, (path, count) in enumerate(
      zip(files, pieces_per_file(files, piece_bytes, fs))):
    yield from file_pieces(path, file_index, index, count, piece_bytes)
    index += count


def _line_number(path: str, offset: int, fs) -> int:
  """1-based number of the line starting at byte `offset` (error path)."""
  count = 1
  with fs.open_read(path) as f:
    remaining = offset
    while remaining > 0:
      block = f.read(min(remaining, 1 << 20))
      if not block:
        break
      count += block.count(b"\n")
      remaining -= len(block)
  return count


def _decode(raw: bytes, path: str, offset: int, skip: bool,
            fs) -> Optional[str]:
  """The line as str, or None if it is not UTF-8 and `skip`."""
  try:
    text = raw.decode("utf-8")
  except UnicodeDecodeError as e:
    if skip:
      return None
    line = _line_number(path, offset, fs)
    raise UserInputError(
        f"{path}:{line}: not UTF-8 text ({e.reason} at "
        f"byte {offset + e.start}); fix the file or pass "
        "--skip_non_utf8_lines") from None
  if offset == 0:
    text = text.lstrip("\ufeff")  # A byte order mark is not text.
  return text


def _is_separator(raw: bytes, offset: int) -> bool:
  """True for a blank line or one that is not UTF-8 (both end documents)."""
  try:
    text = raw.decode("utf-8")
  except UnicodeDecodeError:
    return True
  if offset == 0:
    text = text.lstrip("\ufeff")
  return not text.strip()


def _previous_line_is_separator(f, line_start: int) -> bool:
  """Whether the line before the one starting at `line_start` ends a doc."""
  if line_start == 0:
    return True
  # Find where the previous line starts: the byte after the last "\n"
  # before its own "\n" at line_start - 1.
  end = line_start - 1
  pos = end
  chunks = []
  while pos > 0:
    step = min(_BACK_SCAN, pos)
    f.seek(pos - step)
    block = f.read(step)
    cut = block.rfind(b"\n")
    if cut >= 0:
      chunks.append(block[cut + 1:])
      pos = pos - step + cut + 1
      break
    chunks.append(block)
    pos -= step
  raw = b"".join(reversed(chunks))
  return _is_separator(raw, pos)


def _first_line_start(f, start: int, end: int) -> int:
  """Offset of the first line starting at or after `start` (>= end: none).

  Reads in blocks and gives up at `end`, so pieces inside one very long line
  cost O(piece) each.
  """
  pos = start - 1
  f.seek(pos)
  while pos < end:
    block = f.read(_BACK_SCAN)
    if not block:
      return pos  # End of file.
    cut = block.find(b"\n")
    if cut >= 0:
      return pos + cut + 1
    pos += len(block)
  return pos


def read_piece(spec: PieceSpec, skip_non_utf8_lines: bool = False,
               fs=None) -> Piece:
  """Reads the documents whose first line starts in `spec`'s byte range.

  Raises:
    UserInputError: a line in the range is not UTF-8 and
      skip_non_utf8_lines is False.
  """
  documents = []
  lines = skipped = 0
  base = spec.file_index * _MAX_FILE_BYTES
  fs = fs or file_io
  with fs.open_read(spec.path) as f:
    offset = spec.start
    if offset > 0:
      offset = _first_line_start(f, offset, spec.end)
      if offset >= spec.end:  # No line starts in the range.
        return Piece(spec.index, spec.key, [], 0, 0)
      separator_before = _previous_line_is_separator(f, offset)
      f.seek(offset)
    else:
      separator_before = True
    sentences = None  # The open document's sentences.
    for raw in f:
      line_offset = offset
      offset += len(raw)
      in_range = line_offset < spec.end
      if not in_range and sentences is None:
        break
      if in_range:
        lines += 1
      text = _decode(raw, spec.path, line_offset,
                     skip_non_utf8_lines or not in_range, fs)
      if text is None:
        if in_range:
          skipped += 1
          if skipped <= 3:
            logging.warning("%s: skipping a line that is not UTF-8 (byte %d)",
                            spec.path, line_offset)
        sentences = None
        separator_before = True
        continue
      text = text.strip()
      if not text:
        sentences = None
        separator_before = True
        continue
      if sentences is None:
        if not in_range:
          break
        if separator_before:
          sentences = []
          documents.append((base + line_offset, sentences))
      separator_before = False
      if sentences is not None:
        sentences.append(text)
  return Piece(spec.index, spec.key, documents, lines, skipped)
