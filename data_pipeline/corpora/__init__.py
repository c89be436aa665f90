"""Corpora as documents: the official text format, JSON lines and Parquet
(Wikipedia, C4, FineWeb), cut into pieces a worker can take.

  corpus_options    --input_format and the document hygiene settings
  corpus_pieces     byte-range pieces of text files; the filesystem layer
  document_pieces   JSON lines / Parquet documents, sentence-split
  jsonl_corpus, parquet_corpus  the two document readers
  sentence_splitter the splitter the document formats use (blingfire)
  stdlib_corpus     Python's docstrings as a corpus for demos and tests
  record_files      labelled records of CSV / TSV / JSON lines / Parquet
                    files (fine-tuning on one's own data)

May import: data_pipeline.tokenization, albert_common.
"""
