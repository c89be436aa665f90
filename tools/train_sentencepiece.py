r"""Trains an ALBERT SentencePiece model (the official recipe by default).

  python -m tools.train_sentencepiece \
    --input='corpus/*.txt' --model_prefix=out/30k-clean --vocab_size=30000

Writes `<model_prefix>.model` and `<model_prefix>.vocab`: <pad>=0, <unk>=1,
[CLS]=2, [SEP]=3, [MASK]=4, as the released ALBERT models. The text is
normalised as `data_pipeline.tokenization.preprocess_text` does (lowercased
unless --nodo_lower_case, accents stripped unless --keep_accents) and the model
uses SentencePiece's identity normalization; use the same --do_lower_case /
--keep_accents when tokenizing with it.
"""

from absl import flags

from data_pipeline import sentencepiece_trainer

from . import cli

FLAGS = flags.FLAGS

flags.DEFINE_list("input", None, "Text files, one sentence per line: globs "
                  "and/or a comma-separated list.")
flags.DEFINE_string("model_prefix", None, "Output path without extension.")
flags.DEFINE_integer("vocab_size", 30000, "Number of pieces.")
flags.DEFINE_enum("model_type", "unigram", ["unigram", "bpe", "char", "word"],
                  "SentencePiece model type.")
flags.DEFINE_float("character_coverage", 0.99995,
                   "Fraction of characters the vocabulary covers.")
flags.DEFINE_bool("do_lower_case", True, "Lowercase the text.")
flags.DEFINE_bool("keep_accents", False, "Keep accents instead of stripping.")
flags.DEFINE_integer("input_sentence_size", 10_000_000,
                     "Train on at most this many lines, reservoir-sampled in "
                     "one pass (<= 0: all lines).")
flags.DEFINE_integer("random_seed", 12345, "Seed of the sampling.")
flags.DEFINE_integer("num_threads", 16, "Training threads.")
flags.DEFINE_list("user_defined_symbols",
                  list(sentencepiece_trainer.ALBERT_USER_DEFINED_SYMBOLS),
                  "Pieces always split out of the text (official ALBERT set).")
flags.mark_flags_as_required(["input", "model_prefix"])


def main(argv):
  del argv
  stats = sentencepiece_trainer.train_sentencepiece(
      FLAGS.input, FLAGS.model_prefix,
      vocab_size=FLAGS.vocab_size,
      model_type=FLAGS.model_type,
      character_coverage=FLAGS.character_coverage,
      do_lower_case=FLAGS.do_lower_case,
      keep_accents=FLAGS.keep_accents,
      input_sentence_size=FLAGS.input_sentence_size,
      random_seed=FLAGS.random_seed,
      num_threads=FLAGS.num_threads,
      user_defined_symbols=FLAGS.user_defined_symbols)
  print(f"wrote {FLAGS.model_prefix}.model and {FLAGS.model_prefix}.vocab: "
        f"{stats['vocab_size']} pieces from {stats['sampled']} of "
        f"{stats['lines']} lines ({stats['skipped_non_utf8']} non-UTF-8 lines "
        "skipped)")


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
