r"""Creates ALBERT pretraining TFRecords (SOP + n-gram masking) from text.

Input: one sentence per line, a blank line between documents (the official
format, --input_format=text), or documents as JSON lines (--input_format=jsonl,
also .jsonl.gz / .json.gz) or Parquet (--input_format=parquet), split into
sentences (--sentence_splitter). The official google-research/albert flags
keep their meaning; added: --num_workers, --num_output_shards,
--single_segment_random_document, --skip_non_utf8_lines, --piece_bytes,
--albert_config_file, --runner, --word_segmenter, and the corpus flags
(tools/corpus_flags.py: --input_format, --text_field, --sentence_splitter,
--min_document_sentences, --dedup_documents, --skip_bad_records). See
data_pipeline/pretraining_writer.py for sharding, shuffling and determinism
(shard_files.py for output names and resume),
data_pipeline/sop_instances.py and mlm_masking.py for the algorithm,
data_pipeline/beam_pipeline.py for the Beam pipeline.

  python -m tools.create_pretraining_data \
    --input_file=corpus/*.txt \
    --output_file=data/train.tfrecord --num_output_shards=64 \
    --spm_model_file=30k-clean.model \
    --max_seq_length=512 --max_predictions_per_seq=20 \
    --dupe_factor=10 --random_seed=12345

A WordPiece vocabulary (the released Chinese ALBERTs; the official flags):

  python -m tools.create_pretraining_data \
    --input_file=zh_corpus/*.txt --output_file=data/zh.tfrecord \
    --vocab_file=albert_base_zh/vocab_chinese.txt \
    --albert_config_file=albert_base_zh/albert_config.json \
    --max_seq_length=512 --max_predictions_per_seq=51

Add --word_segmenter=jieba to mask whole Chinese words (jieba's
segmentation) instead of single characters; the ids do not change.

Wikipedia from wikiextractor --json, C4 or FineWeb:

  python -m tools.create_pretraining_data \
    --input_file=c4/en/c4-train.*.json.gz --input_format=jsonl \
    --output_file=data/train.tfrecord --num_output_shards=64 \
    --spm_model_file=30k-clean.model --min_document_sentences=2

The same job on Apache Beam (same output bytes; see the README for Dataflow,
Flink and Spark): add --runner and Beam's own pipeline options, e.g.

  python -m tools.create_pretraining_data ... \
    --runner=DirectRunner --direct_num_workers=2 \
    --direct_running_mode=multi_processing
  python -m tools.create_pretraining_data ... \
    --input_file=gs://bucket/corpus/*.txt \
    --output_file=gs://bucket/data/train.tfrecord --num_output_shards=1024 \
    --runner=DataflowRunner --project=my-project --region=us-central1 \
    --temp_location=gs://bucket/tmp --sdk_container_image=IMAGE
"""

import sys

from absl import app
from absl import flags
from absl import logging

from albert_common.errors import UserInputError

from . import cli
from . import corpus_flags

FLAGS = flags.FLAGS
# --help lists the corpus flags with this tool's own.
flags.adopt_module_key_flags(corpus_flags)

flags.DEFINE_string("input_file", None,
                    "Input text file(s): comma-separated paths or globs.")
flags.DEFINE_string(
    "output_file", None,
    "Output TFRecord path, or comma-separated paths (one shard each).")
flags.DEFINE_string(
    "vocab_file", None,
    "WordPiece vocab.txt ([PAD] [UNK] [CLS] [SEP] [MASK]; e.g. the Chinese "
    "ALBERTs' vocab_chinese.txt), used when --spm_model_file is not given "
    "(official precedence).")
flags.DEFINE_string("spm_model_file", None,
                    "SentencePiece model (<pad> <unk> [CLS] [SEP] [MASK]); "
                    "given with --vocab_file, this one is used.")
flags.DEFINE_string(
    "word_segmenter", "none",
    "none: the official rule, every Chinese character a word of its own. "
    "jieba: Chinese words segmented with jieba (as albert_zh and HFL's "
    "Chinese BERT-wwm), so whole-word and n-gram masking mask a "
    "multi-character word whole or not at all; ids stay one per character. "
    "Needs --vocab_file (WordPiece).")
flags.DEFINE_bool("do_lower_case", True, "Lowercase the input text.")
flags.DEFINE_bool("do_whole_word_mask", True,
                  "Mask whole words (SentencePiece start pieces; WordPiece: "
                  "a piece and its ## continuations), not pieces.")
flags.DEFINE_bool("favor_shorter_ngram", True,
                  "P(n) proportional to 1/n; if False, the reverse.")
flags.DEFINE_integer("ngram", 3, "Longest masked n-gram, in words.")
flags.DEFINE_bool(
    "random_next_sentence", False,
    "Official meaning: NSP instead of SOP, B from a random document with "
    "probability 0.5.")
flags.DEFINE_bool(
    "single_segment_random_document", False,
    "Official behaviour for a one-sentence chunk: B from a random document, "
    "labelled 1 (an NSP negative in SOP data, google-research/albert #234). "
    "Default: split the sentence at a random word start instead.")
flags.DEFINE_integer("max_seq_length", 512, "Maximum sequence length.")
flags.DEFINE_integer("max_predictions_per_seq", 20,
                     "Maximum masked LM predictions per sequence.")
flags.DEFINE_integer("random_seed", 12345, "Random seed for data generation.")
flags.DEFINE_integer("dupe_factor", 40,
                     "Times each document is used (with different masks).")
flags.DEFINE_float("masked_lm_prob", 0.15, "Masked LM probability.")
flags.DEFINE_float("short_seq_prob", 0.1,
                   "Probability of a shorter target length for a document.")
flags.DEFINE_integer("num_workers", None,
                     "Worker processes (default: all cores). The output does "
                     "not depend on it.")
flags.DEFINE_integer(
    "num_output_shards", None,
    "Shards for a single --output_file: <output_file>-00000-of-0000N ...")
flags.DEFINE_bool("skip_non_utf8_lines", False,
                  "Skip (and count) input lines that are not UTF-8 instead "
                  "of failing.")
flags.DEFINE_integer(
    "piece_bytes", 256 * 1024,
    "Input bytes per unit of work, seeding and shuffling. Changing it "
    "changes the output.")
flags.DEFINE_bool("progress", True, "Show a progress bar.")
flags.DEFINE_string(
    "albert_config_file", None,
    "Optional ALBERT config the records are for: a vocabulary larger than "
    "its vocab_size is refused before any work.")
flags.DEFINE_string(
    "runner", None,
    "Apache Beam runner: DirectRunner, DataflowRunner, FlinkRunner, "
    "SparkRunner, PortableRunner, PrismRunner. Default: the local path "
    "(--num_workers processes). With a runner, flags not defined here are "
    "Beam pipeline options (--project, --region, --temp_location, "
    "--flink_master, --direct_num_workers, --direct_running_mode, ...), and "
    "--num_workers is Beam's (Dataflow: workers at start).")
# Official flags kept so existing commands run unchanged.
flags.DEFINE_string("input_file_mode", "r",
                    "Accepted for compatibility; input is read as UTF-8.")
flags.DEFINE_bool("parallel", False,
                  "Accepted for compatibility; see --num_workers.")
flags.DEFINE_bool("do_permutation", False,
                  "Official permutation LM option; not supported (must be "
                  "False).")


def _parse_flags(argv):
  """absl's parsing; with --runner, unknown flags stay in argv for Beam."""
  if not any(a in ("--runner", "-runner") or
             a.startswith(("--runner=", "-runner=")) for a in argv[1:]):
    return app.parse_flags_with_usage(argv)
  try:
    return FLAGS(argv, known_only=True)
  except flags.Error as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(1)


def main(argv):
  # Imported here so that `--help` stays fast.
  from data_pipeline import instance_options
  from data_pipeline import pretraining_stats
  from data_pipeline import pretraining_writer
  from data_pipeline import shard_files
  for name in ("input_file", "output_file"):
    if not getattr(FLAGS, name):
      raise UserInputError(f"--{name} is required")
  if not (FLAGS.spm_model_file or FLAGS.vocab_file):
    raise UserInputError("give --spm_model_file (SentencePiece) or "
                         "--vocab_file (WordPiece vocab.txt)")
  if FLAGS.do_permutation:
    raise UserInputError("--do_permutation is not supported")
  corpus = corpus_flags.corpus_options_from_flags()
  logging.set_verbosity(logging.INFO)
  options = instance_options.InstanceOptions(
      max_seq_length=FLAGS.max_seq_length,
      max_predictions_per_seq=FLAGS.max_predictions_per_seq,
      masked_lm_prob=FLAGS.masked_lm_prob,
      short_seq_prob=FLAGS.short_seq_prob,
      ngram=FLAGS.ngram,
      favor_shorter_ngram=FLAGS.favor_shorter_ngram,
      do_whole_word_mask=FLAGS.do_whole_word_mask,
      random_next_sentence=FLAGS.random_next_sentence,
      single_segment_random_document=FLAGS.single_segment_random_document)
  common = dict(
      input_file=FLAGS.input_file,
      output_file=FLAGS.output_file,
      spm_model_file=FLAGS.spm_model_file,
      vocab_file=FLAGS.vocab_file,
      word_segmenter=FLAGS.word_segmenter,
      options=options,
      do_lower_case=FLAGS.do_lower_case,
      dupe_factor=FLAGS.dupe_factor,
      random_seed=FLAGS.random_seed,
      num_workers=FLAGS.num_workers,
      num_output_shards=FLAGS.num_output_shards,
      piece_bytes=FLAGS.piece_bytes,
      skip_non_utf8_lines=FLAGS.skip_non_utf8_lines,
      albert_config_file=FLAGS.albert_config_file,
      corpus=corpus)
  if FLAGS.runner:
    from data_pipeline import beam_pipeline
    stats = beam_pipeline.create_pretraining_data_beam(
        runner=FLAGS.runner, pipeline_args=argv[1:], **common)
  else:
    stats = pretraining_writer.create_pretraining_data(
        show_progress=FLAGS.progress, **common)
  summary = pretraining_stats.PretrainingStats.from_dict(stats).summary()
  json_path = shard_files.stats_path(FLAGS.output_file,
                                     FLAGS.num_output_shards)
  print(summary)
  print(f"wrote {stats['instances']:,} instances to "
        f"{len(stats['outputs'])} file(s); stats: {json_path}")


def run():
  cli.run(main, flags_parser=_parse_flags)


if __name__ == "__main__":
  run()
