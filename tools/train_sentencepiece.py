r"""Trains an ALBERT SentencePiece model (the official recipe by default).

  python -m tools.train_sentencepiece \
    --input='corpus/*.txt' --model_prefix=out/30k-clean --vocab_size=30000

Writes `<model_prefix>.model` and `<model_prefix>.vocab`: <pad>=0, <unk>=1,
[CLS]=2, [SEP]=3, [MASK]=4, as the released ALBERT models. The text is
normalised as
`data_pipeline.tokenization.sentencepiece_tokenizer.preprocess_text` does
(lowercased unless --nodo_lower_case, accents stripped unless --keep_accents)
and the model uses SentencePiece's identity normalization; use the same
--do_lower_case /
--keep_accents when tokenizing with it.
"""

from data_pipeline.tokenization import sentencepiece_trainer
from data_pipeline.tokenization.sentencepiece_trainer import (
  SentencePieceTrainingParams,
)

from .support import cli
from .support import settings_flags

# Every flag is a field of SentencePieceTrainingParams (name, default, help).
settings_flags.define_flags(SentencePieceTrainingParams, __name__)


def main(argv):
  del argv
  params, _ = settings_flags.read_settings(SentencePieceTrainingParams)
  stats = sentencepiece_trainer.train_sentencepiece(
      params.input, params.model_prefix,
      vocab_size=params.vocab_size,
      model_type=params.model_type,
      character_coverage=params.character_coverage,
      do_lower_case=params.do_lower_case,
      keep_accents=params.keep_accents,
      input_sentence_size=params.input_sentence_size,
      random_seed=params.random_seed,
      num_threads=params.num_threads,
      user_defined_symbols=params.user_defined_symbols)
  print(f"wrote {params.model_prefix}.model and {params.model_prefix}.vocab: "
        f"{stats['vocab_size']} pieces from {stats['sampled']} of "
        f"{stats['lines']} lines ({stats['skipped_non_utf8']} non-UTF-8 lines "
        "skipped)")


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
