"""tf.data input pipeline for pretraining TFRecords (official schema).

`pretraining_dataset` reads files written by `create_pretraining_data` (ours
or the official script), shards them across input pipelines, interleaves,
shuffles, repeats, batches with static shapes (drop_remainder, as TPUs need)
and maps the official feature names to the model's inputs:

| model input | from | dtype, shape |
| --- | --- | --- |
| input_word_ids | input_ids | int32 [batch, max_seq_length] |
| input_mask | input_mask | int32 [batch, max_seq_length] |
| input_type_ids | segment_ids | int32 [batch, max_seq_length] |
| masked_lm_positions | masked_lm_positions | int32 [batch, P] |
| masked_lm_ids | masked_lm_ids | int32 [batch, P] |
| masked_lm_weights | masked_lm_weights | float32 [batch, P] |
| next_sentence_labels | next_sentence_labels | int32 [batch] (1 = swapped) |

(P = max_predictions_per_seq.)

Bad files. Every file's first record is parsed with the expected schema when
the dataset is built (`validate_tfrecord_file`); a file that is not a TFRecord,
has a corrupt first record, or lacks a feature or has one of the wrong length
(e.g. written with another max_seq_length) raises a UserInputError naming
it. Corruption further inside a file surfaces while iterating, as TF's
DataLossError; `validate_tfrecord_file(path, ..., max_records=None)` checks a
whole file and names it (run_pretraining does so when a DataLossError stops
training or evaluation, and reports the file).
"""

import random
import re
from typing import List, NamedTuple, Optional, Sequence, Union

from absl import logging
import tensorflow as tf

from albert_common import file_io
from albert_common.errors import UserInputError
from data_pipeline.pretraining import buckets as pretraining_buckets
from data_pipeline.pretraining import record_stream
from data_pipeline.pretraining import tfrecord_schema

_MODEL_INPUTS = {f.name: f.model_name for f in tfrecord_schema.FEATURES
                 if f.name != "token_boundary"}


def resolve_files(file_pattern: Union[str, Sequence[str]]) -> List[str]:
  """Files matching comma-separated paths / globs.

  Hidden files (the writer's temporaries and per-shard stats) and `.json`
  files (the stats summary) are left out.

  Raises:
    UserInputError: naming a pattern that matches no file.
  """
  return file_io.glob_files(
      file_pattern, "no input file pattern given",
      "no TFRecord file matches {pattern}",
      keep=lambda m: not (m.endswith(".json") or
                          file_io.basename(m).startswith(".") or
                          file_io.isdir(m)))


def _parse_batch(serialized, max_seq_length, max_predictions_per_seq,
                 include_token_boundary):
  spec = tfrecord_schema.name_to_features(max_seq_length,
                                          max_predictions_per_seq)
  names = dict(_MODEL_INPUTS)
  if include_token_boundary:
    names["token_boundary"] = "token_boundary"
  else:
    spec.pop("token_boundary")
  parsed = tf.io.parse_example(serialized, spec)
  out = {}
  for name, model_name in names.items():
    value = parsed[name]
    if value.dtype == tf.int64:
      value = tf.cast(value, tf.int32)
    out[model_name] = value
  out["next_sentence_labels"] = tf.squeeze(out["next_sentence_labels"], -1)
  return out


def validate_tfrecord_file(path: str, max_seq_length: int,
                           max_predictions_per_seq: int,
                           max_records: Optional[int] = 1,
                           vocab_size: Optional[int] = None) -> int:
  """Checks records of `path` against the schema; returns how many it read.

  Args:
    path: a TFRecord file.
    max_seq_length, max_predictions_per_seq: the expected lengths.
    max_records: records to check from the start; None checks all (and every
      record's CRC).
    vocab_size: if given, token ids (input_ids, masked_lm_ids) must be below
      it (the model's vocab_size).

  Raises:
    UserInputError: naming the file, if a record is corrupt, is not a
      tf.train.Example, or has a missing or wrong-length feature.
  """
  spec = tfrecord_schema.name_to_features(max_seq_length,
                                          max_predictions_per_seq)
  dataset = tf.data.TFRecordDataset(path)
  if max_records is not None:
    dataset = dataset.take(max_records)
  count = 0
  try:
    for record in dataset.batch(256):
      parsed = tf.io.parse_example(record, spec)
      count += int(record.shape[0])
      if vocab_size is not None:
        largest = int(tf.reduce_max(tf.concat(
            [tf.reshape(parsed["input_ids"], [-1]),
             tf.reshape(parsed["masked_lm_ids"], [-1])], 0)))
        if largest >= vocab_size:
          raise UserInputError(
              f"{path}: token id {largest} is not below the model's "
              f"vocab_size={vocab_size}: the records were written with a "
              "larger SentencePiece vocabulary than the ALBERT config's")
  except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as e:
    detail = re.sub(r"\{\{function_node.*?\}\}\s*|\s*\[Op:\w+\]|"
                    r"\s*name: $", "", e.message.split("\n")[0])
    raise UserInputError(
        f"{path}: not a pretraining TFRecord file with max_seq_length="
        f"{max_seq_length}, max_predictions_per_seq={max_predictions_per_seq}"
        f" (official schema): {detail}") from None
  except tf.errors.NotFoundError:
    raise UserInputError(f"no such TFRecord file: {path}") from None
  return count


def pretraining_dataset(
    file_pattern: Union[str, Sequence[str]],
    batch_size: int,
    max_seq_length: int,
    max_predictions_per_seq: int,
    is_training: bool = True,
    input_context: Optional[tf.distribute.InputContext] = None,
    seed: Optional[int] = None,
    shuffle_buffer_size: int = 10000,
    cycle_length: Optional[int] = None,
    validate: bool = True,
    include_token_boundary: bool = False,
    vocab_size: Optional[int] = None,
    start_step: int = 0,
    record_count_cache: Optional[str] = None,
    length_buckets: Sequence[int] = ()) -> tf.data.Dataset:
  """Batches of model inputs from pretraining TFRecords.

  Args:
    file_pattern: comma-separated paths / globs, or a list of them.
    batch_size: global batch size; with `input_context`, each pipeline
      yields `input_context.get_per_replica_batch_size(batch_size)`.
    max_seq_length, max_predictions_per_seq: as the files were written with.
    is_training: the endless, seeded stream of
      `data_pipeline.pretraining.record_stream` (files shuffled per epoch, read
      in groups of `cycle_length`, records shuffled within a group); otherwise
      one pass in file order.
    input_context: a tf.distribute.InputContext; files are sharded by
      `input_pipeline_id` (records instead, if there are fewer files than
      pipelines).
    seed: the training stream's seed (None: a random one).
    shuffle_buffer_size: records in the shuffle buffer (training only).
    cycle_length: files read at once; default min(#files, 8).
    start_step: training only: start the stream where a run that has done
      `start_step` steps of `batch_size` stopped (needs `seed`); costs at
      most one file group's read, whatever the step.
    record_count_cache: JSON file caching the files' record counts, which
      a start_step > 0 needs (counted once otherwise).
    validate: check each file's first record (see module docstring).
    vocab_size: with `validate`, also check that the first record's token
      ids are below it.
    include_token_boundary: also yield `token_boundary` (int32 [batch, seq],
      1 at word starts and [CLS]/[SEP]), e.g. for masking on the fly.
    length_buckets: training only: increasing lengths ending with
      max_seq_length; with more than one, each batch is trimmed to the
      bucket of its longest record, batches sorted by length within
      windows (data_pipeline.pretraining.buckets; the same records, the
      same resume).

  Returns:
    A tf.data.Dataset of dicts (see the table above), batch dimension static
    (the sequence dimension too, unless bucketed).
  """
  files = resolve_files(file_pattern)
  if validate:
    for path in files:
      validate_tfrecord_file(path, max_seq_length, max_predictions_per_seq,
                             vocab_size=vocab_size)
  share = _PipelineShare.of(batch_size, input_context)
  cycle = cycle_length or min(len(files), 8)
  bucketed = is_training and len(length_buckets) > 1
  # This pipeline's batches before the start, and those of a bucketed
  # stream's first window to skip.
  batches_done = start_step * share.records_per_step // share.batch_size
  skip = 0
  if bucketed:
    batches_done, skip = pretraining_buckets.window_start(batches_done)
  if is_training:
    seed = _stream_seed(seed, start_step)
    dataset = _training_records(
        files, share.num_pipelines, share.pipeline_id,
        start_records=batches_done * share.batch_size, start_step=start_step,
        seed=seed, cycle_length=cycle,
        shuffle_buffer_size=shuffle_buffer_size,
        record_count_cache=record_count_cache)
  else:
    dataset = _evaluation_records(files, share.num_pipelines,
                                  share.pipeline_id, cycle)
  dataset = _parsed_batches(dataset, share.batch_size, max_seq_length,
                            max_predictions_per_seq, include_token_boundary)
  if bucketed:
    dataset = pretraining_buckets.bucket_batches(
        dataset, length_buckets, seed,
        first_window=batches_done // pretraining_buckets.DEFAULT_WINDOW)
    dataset = dataset.skip(skip)
  return dataset.prefetch(tf.data.AUTOTUNE)


def _stream_seed(seed: Optional[int], start_step: int) -> int:
  """The training stream's seed: `seed`, or a random one for a fresh run."""
  if seed is not None:
    return seed
  if start_step:
    raise ValueError("resuming the data stream at a step needs a seed")
  return random.randrange(2**31)


def _parsed_batches(records: tf.data.Dataset, batch_size: int,
                    max_seq_length: int, max_predictions_per_seq: int,
                    include_token_boundary: bool) -> tf.data.Dataset:
  """Serialized records -> full batches of parsed model inputs, in order."""
  batches = records.batch(batch_size, drop_remainder=True)
  return batches.map(
      lambda batch: _parse_batch(batch, max_seq_length,
                                 max_predictions_per_seq,
                                 include_token_boundary),
      num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)


class _PipelineShare(NamedTuple):
  """This input pipeline's part of the global batch.

  Attributes:
    batch_size: the batch this pipeline yields (one replica's).
    num_pipelines, pipeline_id: how many input pipelines, and which is this.
    records_per_step: records this pipeline reads per training step (all
      its replicas' batches).
  """
  batch_size: int
  num_pipelines: int
  pipeline_id: int
  records_per_step: int

  @classmethod
  def of(cls, batch_size: int,
         input_context: Optional[tf.distribute.InputContext]
         ) -> "_PipelineShare":
    if input_context is None:
      return cls(batch_size, 1, 0, batch_size)
    per_replica = input_context.get_per_replica_batch_size(batch_size)
    num_pipelines = input_context.num_input_pipelines
    replicas_per_pipeline = (input_context.num_replicas_in_sync
                             // num_pipelines)
    return cls(per_replica, num_pipelines, input_context.input_pipeline_id,
               per_replica * replicas_per_pipeline)


def _training_records(files, num_pipelines, pipeline_id, start_records,
                      start_step, seed, cycle_length, shuffle_buffer_size,
                      record_count_cache) -> tf.data.Dataset:
  """This pipeline's endless record stream, from its `start_records`-th
  record on (the start of step `start_step`, or of its bucket window)."""
  own_files, stride = record_stream.pipeline_files(files, num_pipelines,
                                                   pipeline_id)
  start = None
  if start_records:
    counts = record_stream.record_counts(own_files, record_count_cache)
    start = record_stream.locate(own_files, counts, seed, cycle_length,
                                 start_records * stride)
    logging.info("input pipeline %d/%d resumes the data stream at step %d: "
                 "%s", pipeline_id + 1, num_pipelines, start_step,
                 start.describe())
  dataset = record_stream.record_stream(own_files, seed, cycle_length,
                                        shuffle_buffer_size, start)
  if stride > 1:
    dataset = dataset.shard(stride, pipeline_id)
  return dataset


def _evaluation_records(files, num_pipelines, pipeline_id,
                        cycle_length) -> tf.data.Dataset:
  """One pass over the files in order, split between pipelines."""
  shard_files = len(files) >= num_pipelines
  dataset = tf.data.Dataset.from_tensor_slices(files)
  if shard_files and num_pipelines > 1:
    dataset = dataset.shard(num_pipelines, pipeline_id)
  dataset = dataset.interleave(
      tf.data.TFRecordDataset, cycle_length=cycle_length,
      num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  if not shard_files and num_pipelines > 1:
    dataset = dataset.shard(num_pipelines, pipeline_id)
  return dataset
