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

from data_pipeline.tokenization import wordpiece_trainer
from data_pipeline.tokenization.wordpiece_trainer import WordPieceTrainingParams

from .support import cli
from .support import settings_flags

# Every flag is a field of WordPieceTrainingParams (name, default and help).
settings_flags.define_flags(WordPieceTrainingParams, __name__)


def main(argv):
  del argv
  params, _ = settings_flags.read_settings(WordPieceTrainingParams)
  stats = wordpiece_trainer.train_wordpiece(
      params.input, params.vocab_file,
      vocab_size=params.vocab_size,
      do_lower_case=params.do_lower_case,
      input_sentence_size=params.input_sentence_size,
      random_seed=params.random_seed,
      max_unique_chars=params.max_unique_chars)
  print(f"wrote {params.vocab_file}: {stats['vocab_size']} pieces from "
        f"{stats['sampled']} of {stats['lines']} lines "
        f"({stats['skipped_non_utf8']} non-UTF-8 lines skipped)")


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
