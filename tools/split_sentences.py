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

from absl import flags

from . import cli
from . import corpus_flags

FLAGS = flags.FLAGS
# --help lists the corpus flags with this tool's own.
flags.adopt_module_key_flags(corpus_flags)

flags.DEFINE_string("input_file", None,
                    "Input file(s): comma-separated paths or globs.")
flags.DEFINE_string(
    "output_file", None,
    "Output text file, or a folder (ending in /) for one <input name>.txt "
    "per input file.")
flags.DEFINE_integer(
    "piece_bytes", 256 * 1024,
    "Input bytes per piece, as create_pretraining_data's (the scope of "
    "--dedup_documents).")


def main(argv):
  del argv
  from albert_common.errors import UserInputError
  for name in ("input_file", "output_file"):
    if not getattr(FLAGS, name):
      raise UserInputError(f"--{name} is required")
  corpus = corpus_flags.corpus_options_from_flags()
  from data_pipeline import sentence_corpus
  stats = sentence_corpus.write_sentences(FLAGS.input_file, FLAGS.output_file,
                                          corpus, FLAGS.piece_bytes)
  print(f"wrote {stats.documents:,} documents, {stats.sentences:,} "
        f"sentences to {FLAGS.output_file} (skipped bad records "
        f"{stats.bad_records:,}, dropped short documents "
        f"{stats.short_documents:,}, duplicates "
        f"{stats.duplicate_documents:,})")


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
