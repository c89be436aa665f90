"""create_pretraining_data: files, determinism, shards, reruns, bad input."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from albert_common.errors import UserInputError
from data_pipeline.pretraining import tfrecord_io
from data_pipeline.pretraining import tfrecord_schema
from data_pipeline.pretraining import writer as pretraining_writer
from data_pipeline.pretraining.instance_options import InstanceOptions

REPO = os.path.abspath(os.path.join(__file__, "../../../.."))
OPTIONS = InstanceOptions(max_seq_length=64, max_predictions_per_seq=10)
# Small pieces, so that a 300 KB corpus is 10 units of work.
PIECE = 32 * 1024


def _create(corpus, out, spm_model, **kwargs):
  kwargs.setdefault("dupe_factor", 2)
  kwargs.setdefault("num_workers", 1)
  kwargs.setdefault("piece_bytes", PIECE)
  return pretraining_writer.create_pretraining_data(
      corpus, out, spm_model, OPTIONS, show_progress=False, **kwargs)


def _read_bytes(paths):
  return b"".join(open(p, "rb").read() for p in paths)


@pytest.fixture(scope="module")
def single(tmp_path_factory, english_corpus, spm_model):
  out = str(tmp_path_factory.mktemp("single") / "train.tfrecord")
  return out, _create(english_corpus, out, spm_model)


def test_same_bytes_with_one_and_two_workers(single, tmp_path,
                                             english_corpus, spm_model):
  out, stats = single
  two = str(tmp_path / "two.tfrecord")
  stats_two = _create(english_corpus, two, spm_model, num_workers=2)
  assert stats_two["instances"] == stats["instances"] > 1000
  assert _read_bytes([two]) == _read_bytes([out])


def test_other_seed_other_bytes(single, tmp_path, english_corpus, spm_model):
  out, _ = single
  other = str(tmp_path / "other.tfrecord")
  _create(english_corpus, other, spm_model, random_seed=1)
  assert _read_bytes([other]) != _read_bytes([out])


def test_shards_concatenate_to_the_single_file(single, tmp_path,
                                                english_corpus, spm_model):
  out, stats = single
  base = str(tmp_path / "train.tfrecord")
  sharded = _create(english_corpus, base, spm_model, num_output_shards=3)
  names = [f"{base}-{i:05d}-of-00003" for i in range(3)]
  assert sharded["outputs"] == names
  assert all(os.path.getsize(p) > 0 for p in names)
  assert _read_bytes(names) == _read_bytes([out])
  summary = json.load(open(base + ".stats.json"))
  assert summary["instances"] == stats["instances"]
  # Nothing else is left beside them but hidden per-shard stats.
  visible = sorted(f for f in os.listdir(tmp_path) if not f.startswith("."))
  assert visible == sorted([os.path.basename(p) for p in names] +
                           ["train.tfrecord.stats.json"])


def test_comma_list_of_outputs(tmp_path, english_corpus, spm_model):
  paths = [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")]
  stats = _create(english_corpus, ",".join(paths), spm_model)
  assert stats["outputs"] == paths
  assert all(os.path.getsize(p) > 0 for p in paths)
  with pytest.raises(UserInputError, match="num_output_shards"):
    _create(english_corpus, ",".join(paths), spm_model, num_output_shards=3)


def test_rerun_skips_complete_shards(tmp_path, english_corpus, spm_model):
  base = str(tmp_path / "train.tfrecord")
  first = _create(english_corpus, base, spm_model, num_output_shards=2)
  shard0, shard1 = first["outputs"]
  mtimes = [os.stat(p).st_mtime_ns for p in first["outputs"]]
  os.remove(shard1)  # As if the first run had died before shard 1.
  second = _create(english_corpus, base, spm_model, num_output_shards=2)
  assert os.stat(shard0).st_mtime_ns == mtimes[0]
  assert os.path.exists(shard1)
  assert second["instances"] == first["instances"]
  assert second["pieces"] == first["pieces"]
  # Other settings: the shard is not reused.
  _create(english_corpus, base, spm_model, num_output_shards=2,
          random_seed=99)
  assert os.stat(shard0).st_mtime_ns != mtimes[0]


def test_official_schema_round_trip(single):
  import tensorflow as tf
  out, stats = single
  spec = {
      "input_ids": tf.io.FixedLenFeature([64], tf.int64),
      "input_mask": tf.io.FixedLenFeature([64], tf.int64),
      "segment_ids": tf.io.FixedLenFeature([64], tf.int64),
      "token_boundary": tf.io.FixedLenFeature([64], tf.int64),
      "masked_lm_positions": tf.io.FixedLenFeature([10], tf.int64),
      "masked_lm_ids": tf.io.FixedLenFeature([10], tf.int64),
      "masked_lm_weights": tf.io.FixedLenFeature([10], tf.float32),
      "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
  }
  assert tfrecord_schema.name_to_features(64, 10) == spec
  count = 0
  for record in tf.data.TFRecordDataset(out):
    example = tf.train.Example.FromString(record.numpy())
    assert sorted(example.features.feature) == sorted(spec)
    parsed = tf.io.parse_single_example(record, spec)
    assert parsed["input_ids"].shape == (64,)
    count += 1
  assert count == stats["instances"]


def test_framing_is_identical_to_tf_record_writer(tmp_path):
  import tensorflow as tf
  rng = np.random.default_rng(0)
  payloads = [rng.bytes(int(n)) for n in [0, 1, 2, 3, 5, 8, 127, 128, 4099]]
  path = str(tmp_path / "tf.tfrecord")
  with tf.io.TFRecordWriter(path) as writer:
    for p in payloads:
      writer.write(p)
  assert tfrecord_io.frame_records(payloads) == open(path, "rb").read()
  assert hex(tfrecord_io.crc32c_batch([b"123456789"])[0]) == "0xe3069283"


def test_examples_parse_like_protobuf_serialised_ones():
  import tensorflow as tf
  rng = np.random.default_rng(1)
  n = 5
  arrays = {
      "input_ids": rng.integers(0, 1 << 27, (n, 64)),
      "input_mask": rng.integers(0, 2, (n, 64)),
      "segment_ids": rng.integers(0, 2, (n, 64)),
      "token_boundary": rng.integers(0, 2, (n, 64)),
      "masked_lm_positions": rng.integers(0, 64, (n, 10)),
      "masked_lm_ids": rng.integers(0, 30000, (n, 10)),
      "masked_lm_weights": rng.random((n, 10)).astype(np.float32),
      "next_sentence_labels": rng.integers(0, 2, (n, 1)),
  }
  encoder = tfrecord_io.ExampleEncoder(
      [(f.name, f.dtype) for f in tfrecord_schema.FEATURES],
      ["input_mask", "segment_ids", "token_boundary", "next_sentence_labels"])
  for i, data in enumerate(encoder.encode(arrays)):
    ours = tf.train.Example.FromString(data)
    theirs = tf.train.Example()
    for name, values in arrays.items():
      feature = theirs.features.feature[name]
      if values.dtype == np.float32:
        feature.float_list.value.extend(values[i].tolist())
      else:
        feature.int64_list.value.extend(values[i].tolist())
    assert ours == theirs


def test_output_directory_is_refused(tmp_path, english_corpus, spm_model):
  with pytest.raises(UserInputError, match="is a directory"):
    _create(english_corpus, str(tmp_path), spm_model)


def test_skip_non_utf8_lines(tmp_path, english_corpus, spm_model):
  corpus = tmp_path / "mixed.txt"
  text = open(english_corpus, "rb").read()
  corpus.write_bytes(b"caf\xe9 au lait.\n" + text[:20000])
  with pytest.raises(UserInputError, match=r"mixed.txt:1: not UTF-8"):
    _create(str(corpus), str(tmp_path / "x.tfrecord"), spm_model)
  assert not [f for f in os.listdir(tmp_path) if "x.tfrecord" in f]
  stats = _create(str(corpus), str(tmp_path / "y.tfrecord"), spm_model,
                  skip_non_utf8_lines=True)
  assert stats["skipped_lines"] == 1 and stats["instances"] > 0


def test_worker_errors_reach_the_caller(tmp_path, english_corpus, spm_model):
  corpus = tmp_path / "late.txt"
  text = open(english_corpus, "rb").read()[:100_000]
  corpus.write_bytes(text + b"\n\nlate \xff line.\n")
  with pytest.raises(UserInputError, match=r"late.txt:\d+: not UTF-8"):
    _create(str(corpus), str(tmp_path / "z.tfrecord"), spm_model,
            num_workers=2)
  assert not [f for f in os.listdir(tmp_path) if "z.tfrecord" in f]


def _cli(*args):
  return subprocess.run(
      [sys.executable, "-m", "tools.create_pretraining_data", *args],
      cwd=REPO, capture_output=True, text=True, timeout=120,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))


def test_cli_end_to_end(tmp_path, english_corpus, spm_model):
  out = str(tmp_path / "cli.tfrecord")
  result = _cli(f"--input_file={english_corpus}", f"--output_file={out}",
                f"--spm_model_file={spm_model}", "--max_seq_length=64",
                "--max_predictions_per_seq=10", "--dupe_factor=1",
                "--num_output_shards=2", "--num_workers=2",
                "--progress=false")
  assert result.returncode == 0, result.stderr
  assert "instances" in result.stdout
  stats = json.load(open(out + ".stats.json"))
  assert stats["instances"] > 0
  assert len(stats["outputs"]) == 2


@pytest.mark.parametrize("case", ["missing", "empty", "non_utf8", "flag"])
def test_cli_bad_input(case, tmp_path, spm_model):
  corpus = tmp_path / "corpus.txt"
  args = []
  if case == "missing":
    expected = "no such file"
  elif case == "empty":
    corpus.write_text("\n   \n\n")
    expected = "empty corpus"
  elif case == "non_utf8":
    corpus.write_bytes(b"A good line.\nA bad \xff\xfe line.\n")
    expected = "corpus.txt:2: not UTF-8"
  else:
    corpus.write_text("One sentence.\nTwo sentences.\n")
    args = ["--max_seq_length=4"]
    expected = "--max_seq_length=4"
  out = tmp_path / "out" / "train.tfrecord"
  result = _cli(f"--input_file={corpus}", f"--output_file={out}",
                f"--spm_model_file={spm_model}", "--progress=false", *args)
  assert result.returncode == 1
  lines = result.stderr.strip().splitlines()
  assert lines[-1].startswith("error: ") and expected in lines[-1]
  assert "Traceback" not in result.stderr
  leftovers = list(out.parent.iterdir()) if out.parent.exists() else []
  assert leftovers == []


def test_more_shards_than_pieces_gives_empty_shards(tmp_path, english_corpus,
                                                    spm_model):
  base = str(tmp_path / "many.tfrecord")
  stats = _create(english_corpus, base, spm_model, num_output_shards=16,
                  piece_bytes=100_000)
  sizes = [os.path.getsize(p) for p in stats["outputs"]]
  assert len(sizes) == 16 and sizes.count(0) == 16 - stats["pieces"]
