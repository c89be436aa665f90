"""A corpus in any input format -> the official text format (split_sentences).

Writes, for each document `read_piece` gives, its sentences one per line
and a blank line after it: what data creation reads from that input, so a
user can inspect the split or feed another tool. Pieces are read one at a
time (constant memory); each output is written under a hidden temporary
name and renamed when complete.
"""

from typing import List, Sequence

from albert_common import file_io
from albert_common.errors import UserInputError
from data_pipeline.corpora import corpus_pieces
from data_pipeline.corpora import document_pieces
from data_pipeline.corpora.corpus_options import CorpusOptions
from data_pipeline.pretraining.stats import PretrainingStats

_SUFFIXES = (".jsonl.gz", ".json.gz", ".jsonl", ".json", ".parquet", ".gz")


def output_name(input_path: str) -> str:
  """`c4-train.00000-of-01024.json.gz` -> `c4-train.00000-of-01024.txt`."""
  name = file_io.basename(input_path)
  for suffix in _SUFFIXES:
    if name.endswith(suffix):
      return name[:-len(suffix)] + ".txt"
  return name + ".txt"


def output_paths(files: Sequence[str], output_file: str) -> List[str]:
  """One output per input in a folder (`output_file` ends in "/" or is a
  folder), else every input into `output_file`."""
  if output_file.endswith("/") or file_io.isdir(output_file):
    names = [output_name(p) for p in files]
    if len(set(names)) < len(names):
      raise UserInputError("--output_file: two inputs have the same name "
                           f"({', '.join(names)}); write them separately")
    return [file_io.join(output_file, n) for n in names]
  return [output_file] * len(files)


def write_sentences(input_file: str, output_file: str,
                    corpus: CorpusOptions,
                    piece_bytes: int = 256 * 1024) -> PretrainingStats:
  """Writes the split corpus; returns documents / sentences / drop counts.

  Args:
    input_file: comma-separated paths or globs.
    output_file: a file, or a folder (ending in "/" or existing) for one
      `<input name>.txt` per input.
    corpus: CorpusOptions (format, field, splitter, hygiene).
    piece_bytes: as data creation's --piece_bytes (dedup is per piece).

  Raises:
    UserInputError: as data creation, for the same bad input; nothing is
      left under an output name.
  """
  corpus.validate()
  files = corpus_pieces.resolve_input_files(input_file)
  outputs = output_paths(files, output_file)
  counts = document_pieces.pieces_per_file(files, corpus, piece_bytes)
  stats = PretrainingStats()
  first = 0
  open_path, out, temp = None, None, None
  try:
    for file_index, (path, count) in enumerate(zip(files, counts)):
      if outputs[file_index] != open_path:
        _close(out, temp, open_path)
        open_path = outputs[file_index]
        file_io.makedirs(file_io.dirname(open_path))
        temp = file_io.temp_name(open_path)
        out = file_io.open_write(temp)
      for spec in corpus_pieces.file_pieces(path, file_index, first, count,
                                            piece_bytes):
        piece = document_pieces.read_piece(spec, corpus)
        for _, sentences in piece.documents:
          out.write("".join(s + "\n" for s in sentences).encode("utf-8") +
                    b"\n")
          stats.documents += 1
          stats.sentences += len(sentences)
        stats.pieces += 1
        stats.bad_records += piece.bad_records
        stats.short_documents += piece.short_documents
        stats.duplicate_documents += piece.duplicate_documents
      first += count
    _close(out, temp, open_path)
    out = None
  except BaseException:
    if out is not None:
      out.close()
      file_io.remove(temp)
    raise
  return stats


def read_sentences(input_file: str, corpus: CorpusOptions,
                   piece_bytes: int = 256 * 1024) -> List[str]:
  """Every sentence of a corpus in any input format, in order: what
  `write_sentences` would write, without the document breaks (the
  vocabulary extension's domain text, held in memory).

  Raises:
    UserInputError: as data creation, for the same bad input.
  """
  corpus.validate()
  files = corpus_pieces.resolve_input_files(input_file)
  counts = document_pieces.pieces_per_file(files, corpus, piece_bytes)
  sentences, first = [], 0
  for file_index, (path, count) in enumerate(zip(files, counts)):
    for spec in corpus_pieces.file_pieces(path, file_index, first, count,
                                          piece_bytes):
      for _, document in document_pieces.read_piece(spec, corpus).documents:
        sentences.extend(document)
    first += count
  return sentences


def _close(out, temp, path) -> None:
  if out is not None:
    out.close()
    file_io.rename(temp, path)
