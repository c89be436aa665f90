"""Streams a pretraining corpus as fixed pieces of documents.

Input format (official): one sentence per line, blank (or whitespace-only)
lines between documents. Each file is cut into pieces of `piece_bytes` bytes;
a document belongs to the piece its first line starts in. Pieces depend only
on the files and `piece_bytes`, never on the number of workers, so they are
the unit of work, of seeding and of shuffling in `pretraining_writer`, and
their number is known from the file sizes before anything is read.

Files are read line by line; only the documents of the pieces in flight are
in memory (a single document is never split, so it must fit).

Lines that are not valid UTF-8 raise a UserInputError naming the file and
line, or with `skip_non_utf8_lines` are skipped and counted.
"""

import glob
import math
import os
from typing import Dict, Iterator, List, NamedTuple, Sequence

from absl import logging

from albert_tf.errors import UserInputError

# Document keys are file_index * 2**40 + byte offset: files up to 1 TiB.
_MAX_FILE_BYTES = 1 << 40


class Piece(NamedTuple):
  """Documents whose first line starts in one byte range of one file.

  Attributes:
    index: int, position of the piece in the corpus (files in order).
    key: int, file_index * 2**40 + the range's first byte.
    documents: list of (document key, list of str sentences).
  """
  index: int
  key: int
  documents: List


def resolve_input_files(input_file: str) -> List[str]:
  """Files named by a comma-separated list of paths or globs, in order.

  Raises:
    UserInputError: naming the first pattern that matches no file.
  """
  patterns = [p.strip() for p in (input_file or "").split(",") if p.strip()]
  if not patterns:
    raise UserInputError("no input file given (--input_file)")
  files = []
  for pattern in patterns:
    matches = sorted(p for p in glob.glob(pattern) if os.path.isfile(p))
    if not matches:
      raise UserInputError(f"--input_file: no such file: {pattern}")
    files.extend(matches)
  return files


def pieces_per_file(files: Sequence[str], piece_bytes: int) -> List[int]:
  """Number of pieces of each file (at least 1, even for an empty file)."""
  counts = []
  for path in files:
    size = os.path.getsize(path)
    if size >= _MAX_FILE_BYTES:
      raise UserInputError(f"input file larger than 1 TiB: {path}; split it")
    counts.append(max(1, math.ceil(size / piece_bytes)))
  return counts


def iter_pieces(files: Sequence[str], piece_bytes: int,
                skip_non_utf8_lines: bool = False,
                counters: Dict[str, int] = None) -> Iterator[Piece]:
  """Yields every piece of every file in order, empty ones included.

  Args:
    files: input paths.
    piece_bytes: bytes per piece.
    skip_non_utf8_lines: skip lines that are not UTF-8 instead of failing.
    counters: optional dict; "lines", "documents" and "skipped_lines" are
      added to it.

  Raises:
    UserInputError: a line is not UTF-8 and skip_non_utf8_lines is False.
  """
  counters = {} if counters is None else counters
  for key in ("lines", "documents", "skipped_lines"):
    counters.setdefault(key, 0)
  index = 0
  for file_index, (path, num_pieces) in enumerate(
      zip(files, pieces_per_file(files, piece_bytes))):
    base = file_index * _MAX_FILE_BYTES
    current = 0  # Piece of this file being filled.
    documents = []
    sentences = None  # The open document's sentences.
    offset = 0
    with open(path, "rb") as f:
      for line_number, raw in enumerate(f, start=1):
        line_offset = offset
        offset += len(raw)
        counters["lines"] += 1
        try:
          text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
          if not skip_non_utf8_lines:
            raise UserInputError(
                f"{path}:{line_number}: not UTF-8 text ({e.reason} at byte "
                f"{line_offset + e.start}); fix the file or pass "
                "--skip_non_utf8_lines") from None
          counters["skipped_lines"] += 1
          if counters["skipped_lines"] <= 5:
            logging.warning("%s:%d: skipping a line that is not UTF-8", path,
                            line_number)
          continue
        text = text.strip()
        if not text:
          sentences = None
          continue
        if sentences is None:
          piece = line_offset // piece_bytes
          while current < piece:
            yield Piece(index, base + current * piece_bytes, documents)
            index += 1
            current += 1
            documents = []
          sentences = []
          documents.append((base + line_offset, sentences))
          counters["documents"] += 1
        sentences.append(text)
    while current < num_pieces:
      yield Piece(index, base + current * piece_bytes, documents)
      index += 1
      current += 1
      documents = []
