r"""Writes a document corpus in the official format, as data creation reads it.

Each document of JSON lines (.jsonl, .jsonl.gz, .json.gz) or Parquet is cut
into sentences (--sentence_splitter, default blingfire) and written one
sentence per line, a blank line after each document: what
create_pretraining_data reads from the same input with the same flags. To
inspect the split, or to feed another tool.

  python -m tools.split_sentences \
    --input_file=wiki/AA/wiki_00 --input_format=jsonl \
    --output_file=corpus.txt

One output file per input file when --output_file is a folder (ends in "/"):

  python -m tools.split_sentences \
    --input_file=c4/en/c4-train.*.json.gz --input_format=jsonl \
    --output_file=c4_text/
"""

from data_pipeline.pretraining.data_creation_params import SentenceSplitParams

from .support import cli
from .support import settings_flags

# Every flag is a field of SentenceSplitParams (with its CorpusOptions).
settings_flags.define_flags(SentenceSplitParams, __name__)


def main(argv):
  del argv
  params, _ = settings_flags.read_settings(SentenceSplitParams)
  params.corpus.validate()
  from data_pipeline.pretraining import sentence_corpus
  stats = sentence_corpus.write_sentences(params.input_file,
                                          params.output_file, params.corpus,
                                          params.piece_bytes)
  print(f"wrote {stats.documents:,} documents, {stats.sentences:,} "
        f"sentences to {params.output_file} (skipped bad records "
        f"{stats.bad_records:,}, dropped short documents "
        f"{stats.short_documents:,}, duplicates "
        f"{stats.duplicate_documents:,})")


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
