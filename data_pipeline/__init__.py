"""Text -> tensors: tokenizers, corpora, pretraining data, task data.

  tokenization/  SentencePiece and WordPiece, Python and in-graph; offsets,
                 trainers, the word segmenter
  corpora/       text, JSON lines and Parquet corpora as documents, cut into
                 pieces; the sentence splitter; the stdlib test corpus
  pretraining/   pretraining TFRecords: instances (SOP), masking, the
                 plan / worker / writer, stats, Beam; and reading them back
  tasks/         fine-tuning data per task: examples -> features -> metrics

Imports run one way: tasks -> pretraining -> corpora -> tokenization ->
albert_common. data_pipeline never imports albert_tf
(tests/project/test_packaging.py).

May import: albert_common.
"""

from albert_common import moved_modules

moved_modules.install()
