"""create_pretraining_data on Apache Beam: the local path's bytes and errors."""

import json
import os
import subprocess
import sys
import uuid

from apache_beam.io import filesystem as beam_filesystem
import pytest
import tensorflow as tf

from albert_common import file_io
from albert_common.errors import UserInputError
from data_pipeline.pretraining import writer as pretraining_writer
from data_pipeline.pretraining.beam import pipeline as beam_pipeline
from data_pipeline.pretraining.instance_options import InstanceOptions

REPO = os.path.abspath(os.path.join(__file__, "../../../.."))
OPTIONS = InstanceOptions(max_seq_length=64, max_predictions_per_seq=10)
# 300 KB in 32 KB pieces: 10 units of work over 3 shards.
SETTINGS = dict(dupe_factor=2, num_output_shards=3, piece_bytes=32 * 1024,
                random_seed=7)
TWO_PROCESSES = ["--direct_num_workers=2",
                 "--direct_running_mode=multi_processing"]
TIMINGS = ("seconds", "instances_per_second")


def _files(folder):
  """{name: bytes} of every file in `folder`, hidden ones included."""
  return {name: open(os.path.join(folder, name), "rb").read()
          for name in sorted(os.listdir(folder))}


def _without_timings(stats):
  return {k: v for k, v in stats.items() if k not in TIMINGS + ("outputs",)}


@pytest.fixture(scope="module")
def local_run(tmp_path_factory, english_corpus, spm_model):
  out = tmp_path_factory.mktemp("local") / "train.tfrecord"
  stats = pretraining_writer.create_pretraining_data(
      english_corpus, str(out), spm_model, OPTIONS, num_workers=1,
      show_progress=False, **SETTINGS)
  return out.parent, stats


def test_two_worker_direct_runner_writes_the_local_bytes(
    local_run, tmp_path, english_corpus, spm_model, monkeypatch):
  monkeypatch.setenv("PYTHONPATH", REPO)  # For the worker processes.
  local_dir, local_stats = local_run
  out = tmp_path / "train.tfrecord"
  stats = beam_pipeline.create_pretraining_data_beam(
      english_corpus, str(out), spm_model, OPTIONS, runner="DirectRunner",
      pipeline_args=TWO_PROCESSES, **SETTINGS)
  assert stats["pieces"] == 10 and stats["instances"] > 1000
  assert stats["instances"] == local_stats["instances"]
  ours, theirs = _files(tmp_path), _files(local_dir)
  # Same names (shards, hidden sidecars, stats JSON): no scratch left.
  assert sorted(ours) == sorted(theirs) == [
      ".train.tfrecord-0000%d-of-00003.stats.json" % i for i in range(3)] + [
          "train.tfrecord-0000%d-of-00003" % i for i in range(3)] + [
              "train.tfrecord.stats.json"]
  for i in range(3):
    name = f"train.tfrecord-{i:05d}-of-00003"
    assert len(ours[name]) > 100_000
    assert ours[name] == theirs[name], name
    assert ours[f".{name}.stats.json"] == theirs[f".{name}.stats.json"]
  written = json.loads(ours["train.tfrecord.stats.json"])
  assert _without_timings(written) == _without_timings(local_stats)
  assert [os.path.basename(p) for p in written["outputs"]] == [
      os.path.basename(p) for p in local_stats["outputs"]]


def test_rerun_reuses_the_local_paths_complete_shards(
    local_run, tmp_path, english_corpus, spm_model):
  local_dir, local_stats = local_run
  for name, data in _files(local_dir).items():
    (tmp_path / name).write_bytes(data)
  os.utime(tmp_path / "train.tfrecord-00000-of-00003", (0, 0))
  os.remove(tmp_path / "train.tfrecord-00001-of-00003")
  # Left by a launcher that was killed: removed, as the local path's temps.
  stale = tmp_path / ".train.tfrecord-00000-of-00003.beam-0123456789ab"
  stale.mkdir()
  (stale / "piece-000000001-0a1b2c3d").write_bytes(b"partial")
  (tmp_path / ".train.tfrecord-00001-of-00003.tmp-beam-x-y").write_bytes(b"")
  # Shards 0 and 2 are complete (same fingerprints as the local path's):
  # only shard 1 is made again, here with the in-process DirectRunner.
  stats = beam_pipeline.create_pretraining_data_beam(
      english_corpus, str(tmp_path / "train.tfrecord"), spm_model, OPTIONS,
      runner="DirectRunner", **SETTINGS)
  assert os.stat(tmp_path / "train.tfrecord-00000-of-00003").st_mtime == 0
  assert _files(tmp_path) == {
      **_files(local_dir),
      "train.tfrecord.stats.json": _files(tmp_path)[
          "train.tfrecord.stats.json"]}
  assert _without_timings(stats) == _without_timings(local_stats)


def test_beam_flags_are_checked(english_corpus, spm_model, tmp_path):
  options = beam_pipeline.pipeline_options(
      ["--direct_num_workers=2", "--project", "p"], "DirectRunner", 3)
  assert options.get_all_options()["direct_num_workers"] == 2
  assert options.get_all_options()["project"] == "p"
  assert options.get_all_options()["num_workers"] == 3
  with pytest.raises(UserInputError, match=r"unknown flag\(s\) --projekt"):
    beam_pipeline.pipeline_options(["--projekt=p"], "DirectRunner")
  with pytest.raises(UserInputError, match="--runner=Dataflow: not one of"):
    beam_pipeline.pipeline_options([], "Dataflow")
  # The runner's own checks, before any file is touched.
  with pytest.raises(UserInputError,
                     match="--runner=DataflowRunner: .*project"):
    beam_pipeline.create_pretraining_data_beam(
        english_corpus, str(tmp_path / "out" / "x.tfrecord"), spm_model,
        OPTIONS, runner="DataflowRunner")
  assert not (tmp_path / "out").exists()


def _cli(*args):
  return subprocess.run(
      [sys.executable, "-m", "tools.create_pretraining_data", *args],
      cwd=REPO, capture_output=True, text=True, timeout=180,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))


@pytest.mark.slow
@pytest.mark.parametrize("case", ["non_utf8", "glob", "vocab"])
def test_bad_input_gives_the_local_paths_error(case, tmp_path, english_corpus,
                                               spm_model):
  corpus = tmp_path / "corpus.txt"
  args = []
  if case == "non_utf8":
    # Late in the file: the first pieces succeed and leave scratch files.
    text = open(english_corpus, "rb").read()[:100_000]
    text = text[:text.rindex(b"\n") + 1]
    corpus.write_bytes(text + b"\n\nlate \xff line.\n")
    expected = "corpus.txt:%d: not UTF-8" % (text.count(b"\n") + 3)
  elif case == "glob":
    corpus = tmp_path / "missing" / "*.txt"
    expected = f"--input_file: no such file: {corpus}"
  else:
    corpus.write_bytes(open(english_corpus, "rb").read()[:20_000])
    config = tmp_path / "albert_config.json"
    config.write_text(json.dumps({"vocab_size": 1000, "hidden_size": 32,
                                  "num_attention_heads": 4}))
    args = [f"--albert_config_file={config}"]
    expected = "has 2000 pieces, more than vocab_size=1000"
  errors = []
  for name, runner_args in (("local", ["--num_workers=2"]),
                            ("beam", ["--runner=DirectRunner"] +
                             TWO_PROCESSES)):
    out = tmp_path / name / "train.tfrecord"
    result = _cli(f"--input_file={corpus}", f"--output_file={out}",
                  f"--spm_model_file={spm_model}", "--max_seq_length=64",
                  "--max_predictions_per_seq=10", "--dupe_factor=1",
                  "--num_output_shards=2", "--piece_bytes=16384",
                  "--progress=false", *args, *runner_args)
    assert result.returncode == 1, result.stderr[-2000:]
    errors.append(result.stderr.strip().splitlines()[-1])
    leftovers = os.listdir(out.parent) if out.parent.exists() else []
    if name == "beam":  # Nothing is published unless every piece succeeded.
      assert leftovers == [], leftovers
    else:  # Shards completed before the error stay (a rerun reuses them).
      assert all(f.startswith("train.tfrecord-0000") or
                 f.endswith("-of-00002.stats.json") for f in leftovers)
  assert errors[0] == errors[1]
  assert errors[0].startswith("error: ") and expected in errors[0], errors[0]


class RamBeamFileSystem(beam_filesystem.FileSystem):
  """TensorFlow's ram:// as an Apache Beam filesystem (as gs:// would be
  with apache-beam[gcp]: flat names, no folders), for the in-process
  DirectRunner. Beam finds it by its scheme once this module is loaded."""

  @classmethod
  def scheme(cls):
    return "ram"

  def join(self, basepath, *paths):
    return file_io.join(basepath, *paths)

  def split(self, path):
    return file_io.dirname(path), file_io.basename(path)

  def mkdirs(self, path):
    pass  # As on object stores: a name's folders need not be made.

  def has_dirs(self):
    return False

  def _list(self, dir_or_prefix):
    for folder, _, names in tf.io.gfile.walk(file_io.dirname(dir_or_prefix)):
      for name in names:
        path = file_io.join(folder, name)
        if path.startswith(dir_or_prefix):
          try:
            yield self.metadata(path)
          except tf.errors.NotFoundError:
            # TensorFlow's ram:// lists children by bare name prefix: a file
            # "ram://x/eval_results.json" shows up in folder "ram://x/eval"
            # as "_results.json", which does not exist. (gs:// has no such
            # phantoms.) Other tests' ram:// files are listed here too.
            continue

  def create(self, path, mime_type=None, compression_type=None):
    return tf.io.gfile.GFile(path, "wb")

  def open(self, path, mime_type=None, compression_type=None):
    return tf.io.gfile.GFile(path, "rb")

  def copy(self, source_file_names, destination_file_names):
    for source, target in zip(source_file_names, destination_file_names):
      tf.io.gfile.copy(source, target, overwrite=True)

  def rename(self, source_file_names, destination_file_names):
    for source, target in zip(source_file_names, destination_file_names):
      tf.io.gfile.rename(source, target, overwrite=True)

  def exists(self, path):
    return file_io.exists(path)

  def size(self, path):
    return tf.io.gfile.stat(path).length

  def last_updated(self, path):
    return tf.io.gfile.stat(path).mtime_nsec / 1e9

  def checksum(self, path):
    return str(self.size(path))

  def metadata(self, path):
    return beam_filesystem.FileMetadata(path, self.size(path),
                                        self.last_updated(path))

  def delete(self, paths):
    for path in paths:
      if tf.io.gfile.isdir(path):
        tf.io.gfile.rmtree(path)
      elif tf.io.gfile.exists(path):
        tf.io.gfile.remove(path)


def test_output_directly_under_the_scheme(local_run, english_corpus,
                                          spm_model):
  """--output_file=ram://<name> (a file in a bucket's root on gs://): the
  scratch folder and temporaries are ram://.<name>..., and go; the shards
  are the local path's bytes."""
  local_dir, local_stats = local_run
  uid = uuid.uuid4().hex[:8]
  name = f"beam-{uid}.tfrecord"
  stats = beam_pipeline.create_pretraining_data_beam(
      english_corpus, f"ram://{name}", spm_model, OPTIONS,
      runner="DirectRunner", **SETTINGS)
  assert _without_timings(stats) == _without_timings(local_stats)
  written = sorted(n for n in tf.io.gfile.listdir("ram://") if uid in n)
  assert written == [f".{name}-0000{i}-of-00003.stats.json"
                     for i in range(3)] + [
                         f"{name}-0000{i}-of-00003" for i in range(3)] + [
                             f"{name}.stats.json"]
  theirs = _files(local_dir)
  for i in range(3):
    shard = file_io.read_bytes(f"ram://{name}-{i:05d}-of-00003")
    assert shard == theirs[f"train.tfrecord-{i:05d}-of-00003"]


@pytest.mark.parametrize("kind", ["sentencepiece", "wordpiece"])
def test_extended_tokenizer_writes_the_local_bytes(
    kind, tmp_path, english_corpus, spm_model):
  """A tokenizer of tools.extend_vocabulary (40 clinical pieces appended to
  the stdlib SentencePiece model or to a WordPiece vocab.txt learned on the
  corpus's first 60 KB) on the clinical corpus: the in-process DirectRunner
  writes the local path's bytes, and the records hold new ids."""
  from data_pipeline.tokenization import wordpiece_trainer
  from tests.albert_tf.training.pretraining import domain_text
  (tmp_path / "vocab").mkdir()
  sentences = domain_text.clinical_sentences(300)
  corpus = domain_text.write_corpus(str(tmp_path / "domain.txt"), sentences)
  if kind == "sentencepiece":
    spm, size = domain_text.extended_tokenizer(
        str(tmp_path / "vocab"), sentences, 40, spm_model_file=spm_model)
    vocab = None
  else:
    old, head = str(tmp_path / "vocab.txt"), tmp_path / "head.txt"
    text = open(english_corpus, "rb").read()[:60_000]
    head.write_bytes(text[:text.rindex(b"\n\n") + 1])  # whole documents
    wordpiece_trainer.train_wordpiece(str(head), old, vocab_size=600)
    vocab, size = domain_text.extended_tokenizer(
        str(tmp_path / "vocab"), sentences, 40, vocab_file=old)
    spm = None
  settings = dict(dupe_factor=2, num_output_shards=2, piece_bytes=4096,
                  random_seed=3, vocab_file=vocab)
  local = pretraining_writer.create_pretraining_data(
      corpus, str(tmp_path / "local" / "d.tfrecord"), spm, OPTIONS,
      num_workers=1, show_progress=False, **settings)
  beam = beam_pipeline.create_pretraining_data_beam(
      corpus, str(tmp_path / "beam" / "d.tfrecord"), spm, OPTIONS,
      runner="DirectRunner", **settings)
  assert local["pieces"] > 2 and local["instances"] > 100, local
  assert _without_timings(beam) == _without_timings(local)
  ours, theirs = _files(tmp_path / "beam"), _files(tmp_path / "local")
  assert sorted(ours) == sorted(theirs)
  for name in ours:  # shards and their sidecars (the run's JSON has timings)
    if name != "d.tfrecord.stats.json":
      assert ours[name] == theirs[name], name
  ids = set()
  for record in tf.data.TFRecordDataset(local["outputs"]):
    example = tf.train.Example.FromString(record.numpy())
    ids.update(example.features.feature["input_ids"].int64_list.value)
  assert max(ids) >= size, (max(ids), size)  # the new pieces are used
