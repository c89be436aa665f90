"""One's own TextExamples -> packed token ids with label targets.

The packing and the tf.data pipeline are GLUE's
(data_pipeline.tasks.text_pair_inputs: `[CLS] a [SEP] (b [SEP])`, the
official pair truncation, length buckets); the targets follow the label
list (data_pipeline.tasks.label_list):

  classification  int32 [N], the label's index in the list
  regression      float32 [N]
  multi_label     float32 [N, labels], 1 where the label applies
"""

from typing import Sequence

import numpy as np

from data_pipeline.tasks.label_list import LabelList
from data_pipeline.tasks.own_data.examples import TextExample
from data_pipeline.tasks.text_pair_inputs import Features
from data_pipeline.tasks.text_pair_inputs import pack_texts


def label_targets(examples: Sequence[TextExample], label_list: LabelList
                 ) -> np.ndarray:
  """The model's targets of labelled examples (module docstring); every
  label must be in the list (examples.check_known_labels)."""
  if label_list.task_type == "regression":
    return np.array([e.label for e in examples], np.float32)
  index = {name: i for i, name in enumerate(label_list.labels)}
  if label_list.task_type == "multi_label":
    targets = np.zeros((len(examples), len(index)), np.float32)
    for row, example in enumerate(examples):
      targets[row, [index[name] for name in example.label]] = 1.0
    return targets
  return np.array([index[e.label] for e in examples], np.int32)


def featurize(examples: Sequence[TextExample], label_list: LabelList,
              tokenizer, max_seq_length: int, pair: bool) -> Features:
  """Tokenized, packed examples and their targets (labels None when the
  examples have none: a test file).

  Args:
    examples: from examples.read_text_file.
    label_list: the run's labels (the targets' order).
    tokenizer: a SentencePieceTokenizer or WordPieceTokenizer.
    max_seq_length: int >= 3 (>= 5 for pairs).
    pair: two texts per example.
  """
  token_ids, lengths, a_lengths = pack_texts(
      tokenizer, [e.text_a for e in examples],
      [e.text_b or "" for e in examples] if pair else None, max_seq_length)
  labels = None
  if examples and examples[0].label is not None:
    labels = label_targets(examples, label_list)
  return Features(token_ids=token_ids, lengths=lengths,
                  segment_a_lengths=a_lengths, labels=labels,
                  guids=[e.record_id or e.where for e in examples])
