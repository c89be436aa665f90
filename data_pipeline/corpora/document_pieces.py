"""Pieces of a corpus in any input format -> documents of sentences.

`pieces_per_file` and `read_piece` are the format-aware versions of
`corpus_pieces`' (which reads the official text format and is used
unchanged for it, so its output is the same byte for byte).

Document formats (`jsonl`, `parquet`): each record is a document; its text
is cut at line breaks, blank lines (paragraph breaks) dropped, and each line
split into sentences (`sentence_splitter`). A document's key, which seeds
its random draws, is the piece's key plus the byte offset the document would
have in the piece written in the official format (sentences one per line, a
blank line after each document: what `tools.split_sentences` writes). So a
JSON-lines or Parquet file of one piece gives the bytes its official-format
rendering gives, and Parquet gives JSON lines' bytes for the same documents
in one piece.

Hygiene (all formats, off by default): documents with fewer than
`min_document_sentences` sentences (counted before tokenization) are
dropped, then, with `dedup_documents`, a document whose normalised text
(NFKC, whitespace runs as one space) has the 64-bit BLAKE2b digest of an
earlier one of the same piece. The scope of deduplication is the piece
(~`piece_bytes` of text or one Parquet row group): memory stays constant
per worker and the result does not depend on workers or Beam;
duplicates in different pieces are kept.
"""

import concurrent.futures
import hashlib
import math
from typing import List, Sequence, Tuple
import unicodedata

from absl import logging

from albert_common import file_io
from albert_common.errors import UserInputError
from data_pipeline.corpora import corpus_pieces
from data_pipeline.corpora import jsonl_corpus
from data_pipeline.corpora import parquet_corpus
from data_pipeline.corpora import sentence_splitter
from data_pipeline.corpora.corpus_options import CorpusOptions

_TEXT = CorpusOptions()


def pieces_per_file(files: Sequence[str], corpus: CorpusOptions,
                    piece_bytes: int, fs=None) -> List[int]:
  """Number of pieces of each file (at least 1).

  Text and uncompressed JSON lines: bytes / piece_bytes; gzip files: their
  decompressed bytes (read once, in threads); Parquet: row groups.

  Raises:
    UserInputError: a Parquet file without the text column, a gzip file cut
      short (without skip_bad_records).
  """
  fs = fs or file_io
  if corpus.input_format == "parquet":
    return [max(1, parquet_corpus.row_groups(p, corpus.text_field, fs))
            for p in files]
  if corpus.input_format == "text":
    return corpus_pieces.pieces_per_file(files, piece_bytes, fs)
  counts = corpus_pieces.pieces_per_file(files, piece_bytes, fs)
  compressed = [i for i, p in enumerate(files)
                if jsonl_corpus.is_compressed(p)]
  if compressed:
    with concurrent.futures.ThreadPoolExecutor(min(8, len(compressed))) as ex:
      sizes = list(ex.map(
          lambda i: jsonl_corpus.text_size(files[i], corpus.skip_bad_records,
                                           fs), compressed))
    for i, size in zip(compressed, sizes):
      counts[i] = max(1, math.ceil(size / piece_bytes))
  return counts


def rendered_bytes(sentences: Sequence[str]) -> int:
  """Bytes of a document in the official format, its blank line included."""
  return sum(len(s.encode("utf-8")) + 1 for s in sentences) + 1


def _digest(sentences: Sequence[str]) -> bytes:
  text = unicodedata.normalize("NFKC", " ".join(sentences))
  return hashlib.blake2b(" ".join(text.split()).encode("utf-8"),
                         digest_size=8).digest()


def filter_documents(documents, corpus: CorpusOptions
                     ) -> Tuple[list, int, int]:
  """(kept documents, dropped as short, dropped as duplicates).

  Args:
    documents: list of (key, list of str sentences), in piece order.
  """
  if not corpus.min_document_sentences and not corpus.dedup_documents:
    return documents, 0, 0
  kept, short, duplicate, seen = [], 0, 0, set()
  for document in documents:
    sentences = document[1]
    if len(sentences) < corpus.min_document_sentences:
      short += 1
      continue
    if corpus.dedup_documents:
      digest = _digest(sentences)
      if digest in seen:
        duplicate += 1
        continue
      seen.add(digest)
    kept.append(document)
  return kept, short, duplicate


class _BadRecords:
  """Fails on a bad record, or counts it with `skip_bad_records`."""

  def __init__(self, corpus: CorpusOptions):
    self.skip = corpus.skip_bad_records
    self.count = 0

  def __call__(self, where: str, error: str, whole: bool = False) -> None:
    message = error if whole else f"{where}: {error}"
    if not self.skip:
      if not whole:
        message += "; fix it or pass --skip_bad_records"
      raise UserInputError(message)
    self.count += 1
    if self.count <= 3:
      logging.warning("skipping a bad record: %s", message)


def _jsonl_texts(spec: corpus_pieces.PieceSpec, corpus: CorpusOptions,
                 bad: _BadRecords, fs):
  """(records read, document texts) of a JSON-lines piece."""
  texts, records = [], 0
  for record in jsonl_corpus.read_records(spec.path, spec.start, spec.end,
                                          corpus.text_field, fs):
    records += 1
    if record.error is None:
      texts.append(record.text)
    elif record.cut_short:
      bad("", record.error, whole=True)
    else:
      where = (f"{spec.path}:"
               f"{jsonl_corpus.line_number(spec.path, record.offset, fs)}"
               if not bad.skip else f"{spec.path} (text byte {record.offset})")
      bad(where, record.error)
  return records, texts


def _parquet_texts(spec: corpus_pieces.PieceSpec, corpus: CorpusOptions,
                   bad: _BadRecords, fs):
  """(rows read, document texts) of a Parquet piece (one row group)."""
  group = spec.start // (spec.end - spec.start)
  texts, rows = [], 0
  for row, text, error in parquet_corpus.read_row_group(
      spec.path, group, corpus.text_field, fs):
    rows += 1
    if error is None:
      texts.append(text)
    else:
      bad(f"{spec.path}, row group {group}, row {row}", error)
  return rows, texts


def read_piece(spec: corpus_pieces.PieceSpec,
               corpus: CorpusOptions = _TEXT,
               skip_non_utf8_lines: bool = False,
               fs=None) -> corpus_pieces.Piece:
  """The documents of one piece, split and filtered (see module doc).

  Raises:
    UserInputError: a bad line or record (file:line, or file and row
      group), unless skipped by the flags.
  """
  fs = fs or file_io
  if not corpus.is_document_format:
    piece = corpus_pieces.read_piece(spec, skip_non_utf8_lines, fs)
    kept, short, duplicate = filter_documents(piece.documents, corpus)
    return piece._replace(documents=kept, short_documents=short,
                          duplicate_documents=duplicate)
  bad = _BadRecords(corpus)
  read = _jsonl_texts if corpus.input_format == "jsonl" else _parquet_texts
  records, texts = read(spec, corpus, bad, fs)
  documents = []
  for text in texts:
    sentences = sentence_splitter.document_sentences(text, corpus.splitter)
    if sentences:
      documents.append((0, sentences))
  kept, short, duplicate = filter_documents(documents, corpus)
  offset = 0
  keyed = []
  for _, sentences in kept:
    keyed.append((spec.key + offset, sentences))
    offset += rendered_bytes(sentences)
  return corpus_pieces.Piece(spec.index, spec.key, keyed, records, 0,
                             bad.count, short, duplicate)
