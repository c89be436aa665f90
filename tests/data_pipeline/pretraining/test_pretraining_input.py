"""pretraining_dataset: shapes, dtypes, sharding, bad files."""

import numpy as np
import pytest
import tensorflow as tf

from albert_common.errors import UserInputError
from data_pipeline.pretraining import writer as pretraining_writer
from data_pipeline.pretraining.instance_options import InstanceOptions
from data_pipeline.pretraining.reader import pretraining_dataset
from data_pipeline.pretraining.reader import validate_tfrecord_file

SEQ = 64
PRED = 10


@pytest.fixture(scope="module")
def shards(tmp_path_factory, english_corpus, spm_model):
  base = str(tmp_path_factory.mktemp("input") / "train.tfrecord")
  stats = pretraining_writer.create_pretraining_data(
      english_corpus, base, spm_model,
      InstanceOptions(max_seq_length=SEQ, max_predictions_per_seq=PRED),
      dupe_factor=1, num_workers=1, num_output_shards=4,
      piece_bytes=32 * 1024, show_progress=False)
  return stats["outputs"], stats["instances"]


def test_shapes_dtypes_and_static_batch(shards):
  paths, _ = shards
  pattern = paths[0].rsplit("-", 3)[0] + "-*"
  dataset = pretraining_dataset(pattern, batch_size=8, max_seq_length=SEQ,
                                max_predictions_per_seq=PRED, seed=1)
  spec = dataset.element_spec
  expected = {
      "input_word_ids": (tf.int32, [8, SEQ]),
      "input_mask": (tf.int32, [8, SEQ]),
      "input_type_ids": (tf.int32, [8, SEQ]),
      "masked_lm_positions": (tf.int32, [8, PRED]),
      "masked_lm_ids": (tf.int32, [8, PRED]),
      "masked_lm_weights": (tf.float32, [8, PRED]),
      "next_sentence_labels": (tf.int32, [8]),
  }
  assert {k: (v.dtype, v.shape.as_list()) for k, v in spec.items()} == expected
  batch = next(iter(dataset))
  assert np.all(batch["input_word_ids"].numpy()[:, 0] == 2)  # [CLS]
  assert set(np.unique(batch["next_sentence_labels"])) <= {0, 1}


def test_token_boundary_on_request(shards):
  paths, _ = shards
  dataset = pretraining_dataset(paths, batch_size=2, max_seq_length=SEQ,
                                max_predictions_per_seq=PRED,
                                is_training=False,
                                include_token_boundary=True)
  batch = next(iter(dataset))
  assert batch["token_boundary"].dtype == tf.int32
  assert np.all(batch["token_boundary"].numpy()[:, 0] == 1)


def test_eval_reads_every_record_once_in_order(shards):
  paths, instances = shards
  dataset = pretraining_dataset(",".join(paths), batch_size=1,
                                max_seq_length=SEQ,
                                max_predictions_per_seq=PRED,
                                is_training=False)
  count = sum(1 for _ in dataset)
  assert count == instances


def _ids(dataset, batches):
  out = []
  for batch in dataset.take(batches):
    out.extend(batch["input_word_ids"].numpy().tolist())
  return {tuple(x) for x in out}


def test_input_context_shards_files_and_batch(shards):
  paths, instances = shards
  seen = []
  for pipeline in range(2):
    context = tf.distribute.InputContext(
        num_input_pipelines=2, input_pipeline_id=pipeline,
        num_replicas_in_sync=4)
    dataset = pretraining_dataset(paths, batch_size=16, max_seq_length=SEQ,
                                  max_predictions_per_seq=PRED,
                                  is_training=False, input_context=context)
    assert dataset.element_spec["input_word_ids"].shape.as_list() == [4, SEQ]
    seen.append(_ids(dataset, 10**6))
  # Each pipeline reads its own files: disjoint, together (nearly) all.
  assert not seen[0] & seen[1]
  assert len(seen[0]) + len(seen[1]) > 0.95 * instances


def test_more_pipelines_than_files_shards_records(shards):
  paths, _ = shards
  seen = []
  for pipeline in range(2):
    context = tf.distribute.InputContext(2, pipeline, 2)
    dataset = pretraining_dataset(paths[0], batch_size=4, max_seq_length=SEQ,
                                  max_predictions_per_seq=PRED,
                                  is_training=False, input_context=context)
    seen.append(_ids(dataset, 10**6))
  assert seen[0] and seen[1] and not seen[0] & seen[1]


def test_wrong_length_file_names_the_file(shards):
  paths, _ = shards
  with pytest.raises(UserInputError,
                     match=paths[0] + ".*max_seq_length=128.*token_boundary"):
    pretraining_dataset(paths, batch_size=4, max_seq_length=128,
                        max_predictions_per_seq=PRED)


def test_missing_feature_names_the_file(tmp_path):
  path = str(tmp_path / "partial.tfrecord")
  example = tf.train.Example(features=tf.train.Features(feature={
      "input_ids": tf.train.Feature(
          int64_list=tf.train.Int64List(value=[1] * SEQ))}))
  with tf.io.TFRecordWriter(path) as writer:
    writer.write(example.SerializeToString())
  with pytest.raises(UserInputError, match="partial.tfrecord"):
    pretraining_dataset(path, batch_size=1, max_seq_length=SEQ,
                        max_predictions_per_seq=PRED)


def test_corrupt_file_names_the_file(shards, tmp_path):
  paths, _ = shards
  data = bytearray(open(paths[0], "rb").read())
  data[20] ^= 0xFF  # Inside the first record: its CRC no longer matches.
  corrupt = tmp_path / "corrupt.tfrecord"
  corrupt.write_bytes(bytes(data))
  with pytest.raises(UserInputError, match="corrupt.tfrecord"):
    pretraining_dataset(str(corrupt), batch_size=1, max_seq_length=SEQ,
                        max_predictions_per_seq=PRED)
  text = tmp_path / "notes.tfrecord"
  text.write_text("this is not a TFRecord file at all\n")
  with pytest.raises(UserInputError, match="notes.tfrecord"):
    validate_tfrecord_file(str(text), SEQ, PRED, max_records=None)


def test_no_match_names_the_pattern(tmp_path):
  with pytest.raises(UserInputError, match="nothing-here"):
    pretraining_dataset(str(tmp_path / "nothing-here*"), batch_size=1,
                        max_seq_length=SEQ, max_predictions_per_seq=PRED)


def test_full_validation_counts_records(shards):
  paths, instances = shards
  total = sum(validate_tfrecord_file(p, SEQ, PRED, max_records=None)
              for p in paths)
  assert total == instances
