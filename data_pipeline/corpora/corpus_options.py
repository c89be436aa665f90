"""How the corpus is read: its format, the field, splitting and hygiene.

Imports only the standard library, so the CLI checks these flags before
TensorFlow's import. Made once by the CLI (or a caller), handed to
`pretraining_writer` / `beam_pipeline`, and on to every worker.
"""

import dataclasses
from typing import Optional

from albert_common.errors import UserInputError
from albert_common.settings_fields import FlatConstructible
from albert_common.settings_fields import setting

# --input_format values. `text` is the official format: one sentence per
# line, a blank line between documents. `jsonl` (also .jsonl.gz, .json.gz)
# and `parquet` hold one document per record.
INPUT_FORMATS = ("text", "jsonl", "parquet")
DOCUMENT_FORMATS = ("jsonl", "parquet")
# --sentence_splitter values; the first is the default of the document
# formats (see sentence_splitter.py for the choice).
SENTENCE_SPLITTERS = ("blingfire", "none")


@dataclasses.dataclass(frozen=True)
class CorpusOptions(FlatConstructible):
  """Reading settings; every field is part of the output's identity, and
  the flag of its name (create_pretraining_data, split_sentences)."""

  input_format: str = setting(
      "text", "text: the official format, one sentence per line, a blank "
      "line between documents. jsonl: one JSON record per line, one "
      "document each (also .jsonl.gz / .json.gz: wikiextractor --json, C4). "
      "parquet: one document per row (Hugging Face datasets shards, C4, "
      "FineWeb), read a row group at a time. In jsonl and parquet a blank "
      "line inside a document is a paragraph break.", choices=INPUT_FORMATS)
  text_field: str = setting(
      "text", "jsonl/parquet: the record's text field; a dotted path "
      "(meta.text) reaches a nested one.")
  sentence_splitter: Optional[str] = setting(
      None, "jsonl/parquet: how each line of a document is cut into "
      "sentences. Default: blingfire (Microsoft's Bling Fire sentence "
      "breaker: keeps abbreviations, decimals, versions, URLs and e-mail "
      "addresses whole; splits at Chinese/Japanese full stops, closing "
      "quotes kept with their sentence). none: each line of a document is "
      "one sentence. The text format is never split.",
      choices=SENTENCE_SPLITTERS)
  min_document_sentences: int = setting(
      0, "Drop documents with fewer sentences (SOP needs 2); 0 keeps all. "
      "The stats JSON counts them (short_documents).")
  dedup_documents: bool = setting(
      False, "Drop a document whose normalised text (NFKC, whitespace "
      "collapsed) hashes like an earlier one of the same input piece "
      "(~--piece_bytes of text or a Parquet row group); the stats JSON "
      "counts them (duplicate_documents).")
  skip_bad_records: bool = setting(
      False, "jsonl/parquet: skip (and count, bad_records) records that do "
      "not parse, lack --text_field or hold a non-string, and the rest of a "
      "compressed file cut short, instead of failing.")

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
