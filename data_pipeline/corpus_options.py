"""How the corpus is read: its format, the field, splitting and hygiene.

Imports only the standard library, so the CLI checks these flags before
TensorFlow's import. Made once by the CLI (or a caller), handed to
`pretraining_writer` / `beam_pipeline`, and on to every worker.
"""

import dataclasses
from typing import Optional

from albert_common.errors import UserInputError

# --input_format values. `text` is the official format: one sentence per
# line, a blank line between documents. `jsonl` (also .jsonl.gz, .json.gz)
# and `parquet` hold one document per record.
INPUT_FORMATS = ("text", "jsonl", "parquet")
DOCUMENT_FORMATS = ("jsonl", "parquet")
# --sentence_splitter values; the first is the default of the document
# formats (see sentence_splitter.py for the choice).
SENTENCE_SPLITTERS = ("blingfire", "none")


@dataclasses.dataclass(frozen=True)
class CorpusOptions:
  """Reading settings; every field is part of the output's identity.

  Attributes:
    input_format: one of INPUT_FORMATS.
    text_field: the record's text (jsonl, parquet); a dotted path reaches a
      nested field ("meta.text").
    sentence_splitter: one of SENTENCE_SPLITTERS, or None: `blingfire` for
      the document formats. The text format is never split.
    min_document_sentences: documents with fewer sentences are dropped
      (0: none dropped).
    dedup_documents: drop a document whose normalised text (NFKC, runs of
      whitespace as one space) hashes like an earlier one of its piece.
    skip_bad_records: skip (and count) records that do not parse, lack the
      field or hold a non-string, and the rest of a compressed file cut
      short, instead of failing.
  """
  input_format: str = "text"
  text_field: str = "text"
  sentence_splitter: Optional[str] = None
  min_document_sentences: int = 0
  dedup_documents: bool = False
  skip_bad_records: bool = False

  def validate(self) -> None:
    """Raises UserInputError naming the flag that is out of range."""
    if self.input_format not in INPUT_FORMATS:
      raise UserInputError(f"--input_format={self.input_format}: not one of "
                           f"{', '.join(INPUT_FORMATS)}")
    if self.sentence_splitter not in (None,) + SENTENCE_SPLITTERS:
      raise UserInputError(
          f"--sentence_splitter={self.sentence_splitter}: not one of "
          f"{', '.join(SENTENCE_SPLITTERS)}")
    if (self.input_format == "text" and
        self.sentence_splitter not in (None, "none")):
      raise UserInputError(
          f"--sentence_splitter={self.sentence_splitter} needs "
          "--input_format=jsonl or parquet (the text format has one "
          "sentence per line already)")
    if not self.text_field or any(not p for p in self.text_field.split(".")):
      raise UserInputError(f"--text_field={self.text_field!r}: give a field "
                           "name or a dotted path (meta.text)")
    if self.min_document_sentences < 0:
      raise UserInputError(f"--min_document_sentences="
                           f"{self.min_document_sentences} must be >= 0")

  @property
  def splitter(self) -> str:
    """The sentence splitter in effect (`none` for the text format)."""
    if self.input_format == "text":
      return "none"
    return self.sentence_splitter or SENTENCE_SPLITTERS[0]

  @property
  def is_document_format(self) -> bool:
    return self.input_format in DOCUMENT_FORMATS
