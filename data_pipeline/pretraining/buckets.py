"""Length buckets for pretraining batches: windows of batches sorted by length.

Pretraining records are padded to max_seq_length, and a corpus of
Wikipedia-length documents leaves about two fifths of the positions at 512
as padding (BENCHMARKS.md, "Pretraining padding"). `bucket_batches` takes
the seeded batches of the record stream `window` at a time
(window x batch records), sorts the records by length bucket (stably),
cuts them back into `window` batches, trims each batch to the bucket of its
longest record, and shuffles the batches' order within the window with a
seed of (seed, window index). So:

  - a window holds exactly the records the unbucketed stream's `window`
    batches hold, and every batch keeps `batch` records: the loss and its
    normalisation are those of the unbucketed run;
  - a batch is padded to a bucket, never beyond: its shape is [batch, b]
    for b in the buckets; the last bucket is max_seq_length;
  - the order is a function of the seed and the window index only, so
    resuming at batch k reads the record stream from window k // window
    (data_pipeline.pretraining.record_stream's exact resume) and skips k %
    window batches (`window_start`).

Each batch's sequence features (input_word_ids, input_mask, input_type_ids,
token_boundary) are trimmed; the masked-LM features keep their
max_predictions_per_seq, since masked positions lie within the tokens.
"""

from typing import Dict, Sequence, Tuple

import tensorflow as tf

# Batches sorted together: more packs the buckets tighter (at most one
# batch per bucket boundary straddles two buckets) and holds more records.
DEFAULT_WINDOW = 16
SEQUENCE_FEATURES = ("input_word_ids", "input_mask", "input_type_ids",
                     "token_boundary")


def window_start(batches_done: int, window: int = DEFAULT_WINDOW
                 ) -> Tuple[int, int]:
  """(batches before the window holding batch `batches_done`, batches of
  that window to skip): where a resumed bucketed stream starts."""
  skip = batches_done % window
  return batches_done - skip, skip


def bucket_batches(batches: tf.data.Dataset, buckets: Sequence[int],
                   seed: int, window: int = DEFAULT_WINDOW,
                   first_window: int = 0) -> tf.data.Dataset:
  """Batches trimmed to length buckets, sorted within windows.

  Args:
    batches: parsed pretraining batches (data_pipeline.pretraining.reader):
      dicts of [batch, max_seq_length] sequence features and [batch, P] /
      [batch] others, static batch size.
    buckets: increasing lengths, the last one max_seq_length.
    seed: the training stream's seed.
    window: batches sorted together.
    first_window: the index of the first window (a resumed stream's).

  Returns:
    A dataset of the same dicts, sequence features [batch, b] for b in
    `buckets` (static batch size, dynamic length).
  """
  boundaries = tf.constant(buckets, tf.int32)
  windows = batches.batch(window, drop_remainder=True)
  windows = windows.enumerate(start=first_window)
  windows = windows.map(
      lambda index, group: _sort_window(group, index, boundaries, seed),
      num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  return windows.unbatch().map(_trim, num_parallel_calls=tf.data.AUTOTUNE,
                               deterministic=True)


def _sort_window(group: Dict[str, tf.Tensor], index: tf.Tensor,
                 boundaries: tf.Tensor, seed: int) -> Dict[str, tf.Tensor]:
  """One window: records sorted by bucket into its batches, batches
  shuffled; adds `bucket_length` int32 [window]."""
  mask = group["input_mask"]  # [window, batch, seq]
  window, batch = mask.shape[0], mask.shape[1]
  lengths = tf.reshape(tf.reduce_sum(mask, -1), [window * batch])
  bucket = tf.searchsorted(boundaries, lengths, side="left")  # [w * b]
  order = tf.argsort(bucket, stable=True)
  batch_bucket = tf.reduce_max(
      tf.reshape(tf.gather(bucket, order), [window, batch]), axis=1)
  shuffle_seed = tf.stack([tf.constant(seed % 2**31, tf.int64),
                           tf.cast(index, tf.int64)])
  batch_order = tf.argsort(tf.random.stateless_uniform(
      [window], seed=shuffle_seed))
  out = {}
  for name, value in group.items():
    rest = value.shape[2:]
    records = tf.gather(tf.reshape(value, [window * batch] + rest), order)
    out[name] = tf.gather(tf.reshape(records, [window, batch] + rest),
                          batch_order)
  out["bucket_length"] = tf.gather(boundaries,
                                   tf.gather(batch_bucket, batch_order))
  return out


def _trim(batch: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
  """The batch's sequence features cut to its bucket_length (dropped)."""
  batch = dict(batch)
  length = batch.pop("bucket_length")
  for name in SEQUENCE_FEATURES:
    if name in batch:
      batch[name] = batch[name][:, :length]
  return batch
