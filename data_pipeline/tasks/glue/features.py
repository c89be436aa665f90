"""GLUE Examples -> packed token ids -> tf.data of encoder inputs.

The packing (`[CLS] a [SEP] (b [SEP])`, the official pair truncation) and
the datasets are data_pipeline.tasks.text_pair_inputs', shared with one's
own files; here the GLUE labels become indices.
"""

from typing import Sequence

import numpy as np

from data_pipeline.tasks.glue.examples import Example
from data_pipeline.tasks.glue.examples import GlueTask
from data_pipeline.tasks.text_pair_inputs import Features
from data_pipeline.tasks.text_pair_inputs import make_dataset
from data_pipeline.tasks.text_pair_inputs import pack_texts
from data_pipeline.tasks.text_pair_inputs import truncate_seq_pair

__all__ = ["Features", "featurize", "make_dataset", "truncate_seq_pair"]


def featurize(task: GlueTask, examples: Sequence[Example], tokenizer,
              max_seq_length: int) -> Features:
  """Tokenizes and packs examples (text_pair_inputs.pack_texts).

  Args:
    task: GlueTask (labels to indices).
    examples: from read_examples.
    tokenizer: a SentencePieceTokenizer or WordPieceTokenizer.
    max_seq_length: int >= 3 (>= 5 for pairs).
  """
  pair = task.num_segments == 2
  token_ids, lengths, a_lengths = pack_texts(
      tokenizer, [e.text_a for e in examples],
      [e.text_b or "" for e in examples] if pair else None, max_seq_length)
  labels = None
  if examples and examples[0].label is not None:
    if task.is_regression:
      labels = np.array([e.label for e in examples], np.float32)
    else:
      index = {name: i for i, name in enumerate(task.labels)}
      labels = np.array([index[e.label] for e in examples], np.int32)
  return Features(token_ids=token_ids, lengths=lengths,
                  segment_a_lengths=a_lengths, labels=labels,
                  guids=[e.guid for e in examples])
