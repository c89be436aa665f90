r"""Extends a model's vocabulary with pieces learned from a domain corpus.

  python -m tools.extend_vocabulary \
    --init_checkpoint=albert_base/model.ckpt-best \
    --albert_config_file=albert_base/albert_config.json \
    --spm_model_file=albert_base/30k-clean.model \
    --input_file='notes/*.txt' --new_pieces=2000 --output_dir=albert_notes

(--vocab_file=vocab.txt for a WordPiece model; --input_format=jsonl or
parquet reads documents as create_pretraining_data does.) The output folder
holds our checkpoint, albert_config.json with the new vocab_size, the
extended tokenizer, vocabulary_extension.json and data_settings.json; give it as
--init_checkpoint to run_pretraining or a fine-tuning tool, with the new
tokenizer file. Old ids are unchanged; a new piece's embedding row and MLM
bias are the mean of those of the old pieces that spell it.
"""

from albert_tf.training.pretraining.vocabulary_extension import (
  VocabularyExtensionParams,
)

from .support import cli
from .support import settings_flags

# Every flag is a field of VocabularyExtensionParams (with its CorpusOptions).
settings_flags.define_flags(VocabularyExtensionParams, __name__)


def main(argv):
  del argv
  params, _ = settings_flags.read_settings(VocabularyExtensionParams)
  params.check()  # Before TensorFlow's import.
  from albert_tf.training.pretraining import vocabulary_extension
  report = vocabulary_extension.extend_vocabulary(params)
  print(vocabulary_extension.summary_line(params.output_dir, report))


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
