"""A seeded, file-sharded record stream that can start at any position.

Why: a pretraining run on preemptible TPUs is restarted many times. Saving
a tf.data iterator works on one device only (TPUStrategy's and multi-device
MirroredStrategy's iterators cannot be checkpointed), and skipping records
by reading them costs time proportional to how far the run got. Here the
record at every position of the stream is a pure function of (files,
record counts, seed), so a run resumed at step k starts the stream at
`k * records_per_step` directly.

The stream, for one input pipeline:

  epoch e       the files in the order of a stateless permutation seeded by
                (seed, e)
  group g       `cycle_length` consecutive files of an epoch's order (the
                last group of an epoch may hold fewer); groups are numbered
                across epochs: g = e * groups_per_epoch + j
  records       each group's files are interleaved record by record, then
                shuffled with a buffer seeded by (seed, g); the stream is
                group 0's records, then group 1's, ... forever

Starting at position p finds the group holding p from the files' record
counts (`record_counts`: counted once, cached in a JSON file) and skips
into that group only, so a restart reads at most one group's records
(`cycle_length` files) whatever p is.
"""

import dataclasses
import json
from typing import Dict, List, Optional, Sequence, Tuple

from absl import logging
import numpy as np
import tensorflow as tf

from albert_common import file_io

_SEED_MIX = 1_000_003  # keeps (seed, group) pairs apart in one int64


def epoch_order(num_files: int, seed: int, epoch) -> tf.Tensor:
  """int32 [num_files]: the file order of `epoch` (works eagerly and in
  graphs, with the same result)."""
  return tf.random.experimental.stateless_shuffle(
      tf.range(num_files), seed=tf.stack(
          [tf.cast(seed, tf.int64), tf.cast(epoch, tf.int64)]))


def _groups_per_epoch(num_files: int, cycle_length: int) -> int:
  return -(-num_files // cycle_length)


def _group_files(files: tf.Tensor, group, seed: int,
                 cycle_length: int) -> tf.Tensor:
  num_files = int(files.shape[0])
  per_epoch = _groups_per_epoch(num_files, cycle_length)
  group = tf.cast(group, tf.int64)
  order = epoch_order(num_files, seed, group // per_epoch)
  start = tf.cast(group % per_epoch, tf.int32) * cycle_length
  return tf.gather(files, order[start:start + cycle_length])


def _group_records(files: tf.Tensor, group, seed: int, cycle_length: int,
                   shuffle_buffer_size: int) -> tf.data.Dataset:
  """Serialized records of one group: interleaved, then shuffled."""
  group_files = _group_files(files, group, seed, cycle_length)
  records = tf.data.Dataset.from_tensor_slices(group_files).interleave(
      tf.data.TFRecordDataset, cycle_length=cycle_length, block_length=1,
      num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  group_seed = tf.cast(seed, tf.int64) * _SEED_MIX + tf.cast(group, tf.int64)
  _avoid_zero_graph_seed()
  return records.shuffle(shuffle_buffer_size, seed=group_seed,
                         reshuffle_each_iteration=False)


# TensorFlow reduces a global seed modulo 2**31 - 1 and then compares the
# (global, op) pair with (0, 0) in Python, which a tensor op seed (ours,
# per group) cannot take inside a graph. A global seed of that class (0,
# 2**31 - 1, ... e.g. after tf.random.set_seed(0)) is read as this one, as
# albert_tf.training.seeds.set_global_seeds maps it; other seeds are left
# alone, so their streams do not change.
_TF_SEED_MODULUS = 2**31 - 1
_SEED_FOR_ZERO_CLASS = _TF_SEED_MODULUS - 1


def _avoid_zero_graph_seed() -> None:
  """In the tf.data function building a group (record_stream builds every
  group in one), a zero-class graph seed is read as _SEED_FOR_ZERO_CLASS."""
  graph = tf.compat.v1.get_default_graph()
  if (not tf.executing_eagerly() and graph.seed is not None and
      graph.seed % _TF_SEED_MODULUS == 0):
    graph.seed = _SEED_FOR_ZERO_CLASS


@dataclasses.dataclass(frozen=True)
class StreamPosition:
  """Where position `record` of the stream lies."""
  record: int
  epoch: int
  group: int          # numbered across epochs
  offset: int         # records into the group

  def describe(self) -> str:
    return (f"record {self.record:,} (epoch {self.epoch}, file group "
            f"{self.group}, +{self.offset:,} records)")


def locate(files: Sequence[str], counts: Dict[str, int], seed: int,
           cycle_length: int, record: int) -> StreamPosition:
  """The group and offset of stream position `record` (O(#files))."""
  sizes = np.array([counts[f] for f in files], dtype=np.int64)
  per_epoch = int(sizes.sum())
  if per_epoch == 0:
    raise ValueError("the input files hold no records")
  epoch, offset = divmod(int(record), per_epoch)
  order = epoch_order(len(files), seed, epoch).numpy()
  group_sizes = [int(sizes[order[i:i + cycle_length]].sum())
                 for i in range(0, len(files), cycle_length)]
  for j, size in enumerate(group_sizes):
    if offset < size:
      group = epoch * _groups_per_epoch(len(files), cycle_length) + j
      return StreamPosition(int(record), epoch, group, offset)
    offset -= size
  raise AssertionError("unreachable: offset beyond the epoch")


def record_stream(files: Sequence[str], seed: int, cycle_length: int,
                  shuffle_buffer_size: int,
                  start: Optional[StreamPosition] = None) -> tf.data.Dataset:
  """The infinite stream of serialized records, from `start` (default 0).

  Args:
    files: this pipeline's TFRecord files, in a fixed order.
    seed: the stream's seed.
    cycle_length: files per group (read at once).
    shuffle_buffer_size: records in each group's shuffle buffer.
    start: from `locate`; None starts at record 0.
  """
  files_t = tf.constant(list(files))
  cycle_length = max(1, min(cycle_length, len(files)))

  def group(g):
    return _group_records(files_t, g, seed, cycle_length, shuffle_buffer_size)

  first_group, offset = (start.group, start.offset) if start else (0, 0)
  # Every group is built inside a tf.data function (a graph), the first one
  # too, so that all get their shuffle seeds the same way.
  head = tf.data.Dataset.from_tensors(tf.constant(first_group, tf.int64))
  head = head.flat_map(group).skip(offset)
  rest = tf.data.Dataset.counter(first_group + 1).flat_map(group)
  return head.concatenate(rest)


def _count_records(files: List[str]) -> List[int]:
  counts = tf.data.Dataset.from_tensor_slices(files).map(
      lambda f: tf.data.TFRecordDataset(f).reduce(
          tf.constant(0, tf.int64), lambda n, _: n + 1),
      num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  return [int(n) for n in counts.as_numpy_iterator()]


def _stat_key(path: str) -> str:
  size, mtime_ns = file_io.stat(path)
  return f"{size}:{mtime_ns}"


def record_counts(files: Sequence[str],
                  cache_file: Optional[str] = None) -> Dict[str, int]:
  """Records per file, read from `cache_file` where the file's size and
  modification time still match, else counted (one pass over the file) and
  added to the cache."""
  cache = {}
  if cache_file and file_io.exists(cache_file):
    try:
      cache = json.loads(file_io.read_text(cache_file))
    except ValueError:
      logging.warning("ignoring unreadable record-count cache %s", cache_file)
  keys = {f: _stat_key(f) for f in files}
  missing = [f for f in files
             if cache.get(f, {}).get("stat") != keys[f]]
  if missing:
    logging.info("counting the records of %d input file(s) (once; cached "
                 "in %s)", len(missing), cache_file or "memory")
    for path, count in zip(missing, _count_records(missing)):
      cache[path] = {"stat": keys[path], "records": count}
    if cache_file:
      file_io.write_json_atomic(cache_file, cache)
  return {f: cache[f]["records"] for f in files}


def pipeline_files(files: Sequence[str], num_pipelines: int,
                   pipeline_id: int) -> Tuple[List[str], int]:
  """This pipeline's files and the record stride within their stream.

  With at least as many files as pipelines, each pipeline reads its own
  files (`files[pipeline_id::num_pipelines]`, stride 1); otherwise every
  pipeline reads the whole stream and keeps every `num_pipelines`-th record
  (stride num_pipelines).
  """
  if len(files) >= num_pipelines:
    return list(files[pipeline_id::num_pipelines]), 1
  return list(files), num_pipelines
