r"""Learns a WordPiece vocabulary (vocab.txt) for ALBERT from text.

  python -m tools.train_wordpiece \
    --input='corpus/*.txt' --vocab_file=out/vocab.txt --vocab_size=21128

Writes one token a line: [PAD]=0, [UNK]=1, [CLS]=2, [SEP]=3, [MASK]=4,
then the learned tokens ("##" continuations), for --vocab_file of
create_pretraining_data, run_classifier, ... Text is normalised as the
WordPiece tokenizer will (lowercase and accent stripping unless
--nodo_lower_case; one token per CJK character). The learner is the
tokenizers package's WordPieceTrainer (data_pipeline/wordpiece_trainer.py).
"""

from absl import flags

from . import cli

FLAGS = flags.FLAGS

flags.DEFINE_list("input", None, "Text files, one sentence per line: globs "
                  "and/or a comma-separated list.")
flags.DEFINE_string("vocab_file", None, "Output vocab.txt path.")
flags.DEFINE_integer("vocab_size", 30000,
                     "Most tokens, the 5 special ones included.")
flags.DEFINE_bool("do_lower_case", True,
                  "Lowercase and strip accents (as the tokenizer will).")
flags.DEFINE_integer("min_frequency", 2,
                     "Occurrences a merged piece needs.")
flags.DEFINE_integer("limit_alphabet", 1000,
                     "Most single characters kept (raise it for Chinese).")
flags.mark_flags_as_required(["input", "vocab_file"])


def main(argv):
  del argv
  from data_pipeline import wordpiece_trainer
  stats = wordpiece_trainer.train_wordpiece(
      FLAGS.input, FLAGS.vocab_file, vocab_size=FLAGS.vocab_size,
      do_lower_case=FLAGS.do_lower_case, min_frequency=FLAGS.min_frequency,
      limit_alphabet=FLAGS.limit_alphabet)
  print(f"wrote {FLAGS.vocab_file}: {stats['vocab_size']} tokens from "
        f"{stats['lines']} lines ({stats['skipped_non_utf8']} non-UTF-8 "
        "lines skipped)")


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
