r"""Learns a WordPiece vocabulary (`vocab.txt`) for BERT-style tokenization.

  python -m tools.train_wordpiece \
    --input='corpus/*.txt' --vocab_file=vocab/vocab.txt --vocab_size=21128

Writes one piece per line: [PAD]=0, [UNK]=1, [CLS]=2, [SEP]=3, [MASK]=4, then
the characters and their "##" forms, then the learned pieces. Words are
counted after BERT's text handling (CJK characters one per word, lowercase
and accents stripped unless --nodo_lower_case); use the same
--do_lower_case with create_pretraining_data --vocab_file. The same corpus
and --random_seed give the same file.
"""

from absl import flags

from data_pipeline import wordpiece_trainer

from . import cli

FLAGS = flags.FLAGS

flags.DEFINE_list("input", None, "Text files: globs and/or a comma-separated "
                  "list (blank lines are ignored).")
flags.DEFINE_string("vocab_file", None, "The vocab.txt to write.")
flags.DEFINE_integer("vocab_size", 30000,
                     "At most this many pieces, the special tokens included.")
flags.DEFINE_bool("do_lower_case", True,
                  "Lowercase and strip accents before counting words.")
flags.DEFINE_integer("input_sentence_size", 10_000_000,
                     "Learn from at most this many lines, reservoir-sampled "
                     "in one pass (<= 0: all lines).")
flags.DEFINE_integer("random_seed", 12345, "Seed of the sampling.")
flags.DEFINE_integer("max_unique_chars", 1000,
                     "Keep at most this many distinct characters (the most "
                     "frequent); rarer ones tokenize as [UNK].")
flags.mark_flags_as_required(["input", "vocab_file"])


def main(argv):
  del argv
  stats = wordpiece_trainer.train_wordpiece(
      FLAGS.input, FLAGS.vocab_file,
      vocab_size=FLAGS.vocab_size,
      do_lower_case=FLAGS.do_lower_case,
      input_sentence_size=FLAGS.input_sentence_size,
      random_seed=FLAGS.random_seed,
      max_unique_chars=FLAGS.max_unique_chars)
  print(f"wrote {FLAGS.vocab_file}: {stats['vocab_size']} pieces from "
        f"{stats['sampled']} of {stats['lines']} lines "
        f"({stats['skipped_non_utf8']} non-UTF-8 lines skipped)")


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
