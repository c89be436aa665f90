"""Sentence and sentence-pair classification inputs, shared by the tasks.

Features follow the official ALBERT `classifier_utils`: `[CLS] a [SEP]` or
`[CLS] a [SEP] b [SEP]` (type ids 0 for `[CLS] a [SEP]`, 1 for `b [SEP]`),
pairs truncated by `truncate_seq_pair` (drop the last token of the longer
segment, `b` on ties), padded with the `<pad>` id to `max_seq_length`.
GLUE (data_pipeline.tasks.glue.features) and one's own files
(data_pipeline.tasks.own_data.features) pack their texts with `pack_texts`
and batch them with `make_dataset`.
"""

import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from albert_common.encoder_inputs import INPUT_MASK
from albert_common.encoder_inputs import INPUT_TYPE_IDS
from albert_common.encoder_inputs import INPUT_WORD_IDS
from albert_common.errors import UserInputError
from data_pipeline.tasks import length_buckets
from data_pipeline.tasks import packing as packing_lib


def truncate_seq_pair(tokens_a: List[int], tokens_b: List[int],
                      max_length: int) -> None:
  """In place: drop the last token of the longer list (b on ties) until the
  total fits (official `_truncate_seq_pair`)."""
  while len(tokens_a) + len(tokens_b) > max_length:
    if len(tokens_a) > len(tokens_b):
      tokens_a.pop()
    else:
      tokens_b.pop()


@dataclasses.dataclass
class Features:
  """Packed token ids of N examples, unpadded (padding happens in tf.data).

  Attributes:
    token_ids: int32 [sum of lengths], `[CLS] a [SEP] (b [SEP])` per example.
    lengths: int32 [N], tokens per example (<= max_seq_length).
    segment_a_lengths: int32 [N], length of `[CLS] a [SEP]`.
    labels: int32 [N] label index, float32 [N] (regression), float32
      [N, labels] (multi-label, 0 or 1), or None (test).
    guids: list of str.
  """

  token_ids: np.ndarray
  lengths: np.ndarray
  segment_a_lengths: np.ndarray
  labels: Optional[np.ndarray]
  guids: List[str]

  def __len__(self) -> int:
    return len(self.lengths)

  def padded(self, max_seq_length: int, pad_id: int = 0
            ) -> Dict[str, np.ndarray]:
    """Encoder inputs as int32 numpy arrays [N, max_seq_length]."""
    n = len(self)
    positions = np.arange(max_seq_length)[None, :]
    mask = positions < self.lengths[:, None]
    ids = np.full((n, max_seq_length), pad_id, np.int32)
    ids[mask] = self.token_ids
    type_ids = (positions >= self.segment_a_lengths[:, None]) & mask
    return {INPUT_WORD_IDS: ids, INPUT_MASK: mask.astype(np.int32),
            INPUT_TYPE_IDS: type_ids.astype(np.int32)}


def pack_texts(tokenizer, texts_a: Sequence[str],
               texts_b: Optional[Sequence[str]], max_seq_length: int
              ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
  """Tokenizes and packs texts (see module docstring), unpadded.

  Args:
    tokenizer: a SentencePieceTokenizer or WordPieceTokenizer.
    texts_a: N first segments.
    texts_b: N second segments, or None for one-segment inputs.
    max_seq_length: int >= 3 (>= 5 for pairs).

  Returns:
    (token_ids int32 [sum of lengths], lengths int32 [N], segment_a_lengths
    int32 [N]): see Features.
  """
  pair = texts_b is not None
  if max_seq_length < (5 if pair else 3):
    raise UserInputError(f"--max_seq_length={max_seq_length} is too short")
  cls_id, sep_id = tokenizer.cls_id, tokenizer.sep_id
  tokens_a = tokenizer.encode_batch(list(texts_a))
  tokens_b = (tokenizer.encode_batch([t or "" for t in texts_b])
              if pair else [[] for _ in tokens_a])
  packed, lengths, a_lengths = [], [], []
  for a, b in zip(tokens_a, tokens_b):
    if pair:
      truncate_seq_pair(a, b, max_seq_length - 3)
      ids = [cls_id] + a + [sep_id] + b + [sep_id]
    else:
      a = a[:max_seq_length - 2]
      ids = [cls_id] + a + [sep_id]
    packed.extend(ids)
    lengths.append(len(ids))
    a_lengths.append(len(a) + 2)
  return (np.array(packed, np.int32), np.array(lengths, np.int32),
          np.array(a_lengths, np.int32))


def make_dataset(features: Features, max_seq_length: int, batch_size: int,
                 is_training: bool = False, seed: Optional[int] = None,
                 pad_id: int = 0, with_labels: Optional[bool] = None,
                 buckets: Sequence[int] = (),
                 packing: Optional[packing_lib.PackingPlan] = None):
  """tf.data of encoder-input dicts (static shape [batch, max_seq_length]).

  Training: (features, labels), repeated, shuffled, full batches only.
  Otherwise: one pass in order; with labels (features, labels) if
  `with_labels`, else feature dicts only (the default for prediction).
  With more than one of `buckets` (data_pipeline.tasks.length_buckets), batches
  are [batch, bucket] instead, and evaluation batches carry EXAMPLE_INDEX.
  With `packing` (training only), batches are packed rows instead
  (data_pipeline.tasks.packing; about batch_size examples each).
  """
  import tensorflow as tf
  if with_labels is None:
    with_labels = is_training
  ragged = tf.RaggedTensor.from_row_lengths(features.token_ids,
                                            features.lengths)
  a_lengths = features.segment_a_lengths
  if with_labels:
    if features.labels is None:
      raise ValueError("features have no labels")
    dataset = tf.data.Dataset.from_tensor_slices(
        (ragged, a_lengths, features.labels))
  else:
    dataset = tf.data.Dataset.from_tensor_slices((ragged, a_lengths))
  if is_training:
    dataset = dataset.repeat().shuffle(min(len(features), 100_000),
                                       seed=seed)

  def pack(ids, a_length, *label):
    length = tf.shape(ids)[0]
    word_ids = tf.pad(ids, [[0, max_seq_length - length]],
                      constant_values=pad_id)
    positions = tf.range(max_seq_length)
    mask = tf.cast(positions < length, tf.int32)
    type_ids = tf.cast(positions >= a_length, tf.int32) * mask
    inputs = {INPUT_WORD_IDS: tf.ensure_shape(word_ids, [max_seq_length]),
              INPUT_MASK: mask, INPUT_TYPE_IDS: type_ids}
    return (inputs, label[0]) if label else inputs

  dataset = dataset.map(pack, num_parallel_calls=tf.data.AUTOTUNE)
  if packing is not None and is_training:
    return packing_lib.packed_batches(dataset, packing, pad_id).prefetch(
        tf.data.AUTOTUNE)
  dataset = length_buckets.batch(
      dataset, buckets, batch_size, drop_remainder=is_training,
      keep_order=not is_training and not with_labels)
  return dataset.prefetch(tf.data.AUTOTUNE)
