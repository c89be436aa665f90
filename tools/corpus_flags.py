"""Flags that say how the corpus is read (create_pretraining_data and
split_sentences define them by importing this module)."""

from absl import flags

from data_pipeline import corpus_options

flags.DEFINE_enum(
    "input_format", "text", corpus_options.INPUT_FORMATS,
    "text: the official format, one sentence per line, a blank line between "
    "documents. jsonl: one JSON record per line, one document each (also "
    ".jsonl.gz / .json.gz: wikiextractor --json, C4). parquet: one document "
    "per row (Hugging Face datasets shards, C4, FineWeb), read a row group "
    "at a time. In jsonl and parquet a blank line inside a document is a "
    "paragraph break.")
flags.DEFINE_string(
    "text_field", "text",
    "jsonl/parquet: the record's text field; a dotted path (meta.text) "
    "reaches a nested one.")
flags.DEFINE_enum(
    "sentence_splitter", None, corpus_options.SENTENCE_SPLITTERS,
    "jsonl/parquet: how each line of a document is cut into sentences. "
    "Default: blingfire (Microsoft's Bling Fire sentence breaker: keeps "
    "abbreviations, decimals, versions, URLs and e-mail addresses whole; "
    "splits at Chinese/Japanese full stops, closing quotes kept with their "
    "sentence). none: each line of a document is one sentence.")
flags.DEFINE_integer(
    "min_document_sentences", 0,
    "Drop documents with fewer sentences (SOP needs 2); 0 keeps all. The "
    "stats JSON counts them (short_documents).")
flags.DEFINE_bool(
    "dedup_documents", False,
    "Drop a document whose normalised text (NFKC, whitespace collapsed) "
    "hashes like an earlier one of the same input piece (~--piece_bytes of "
    "text or a Parquet row group); the stats JSON counts them "
    "(duplicate_documents).")
flags.DEFINE_bool(
    "skip_bad_records", False,
    "jsonl/parquet: skip (and count, bad_records) records that do not "
    "parse, lack --text_field or hold a non-string, and the rest of a "
    "compressed file cut short, instead of failing.")

FLAGS = flags.FLAGS


def corpus_options_from_flags() -> corpus_options.CorpusOptions:
  """The CorpusOptions of the flags, checked (UserInputError if bad)."""
  options = corpus_options.CorpusOptions(
      input_format=FLAGS.input_format, text_field=FLAGS.text_field,
      sentence_splitter=FLAGS.sentence_splitter,
      min_document_sentences=FLAGS.min_document_sentences,
      dedup_documents=FLAGS.dedup_documents,
      skip_bad_records=FLAGS.skip_bad_records)
  options.validate()
  return options
