"""Every user path on a non-local TensorFlow filesystem, and output modes.

`ram://` (TensorFlow's in-memory filesystem) stands for Cloud Storage: no
local file API works on it. The whole pipeline runs in one process with
every input and output under `ram://`, and nothing may appear on the local
disk; checkpoint conversion reads and writes `ram://` in every layout; and
what exports, conversions and fine-tuning write locally has the modes of
ordinary files and folders (0644 / 0755 under umask 022).
"""

import json
import os
import random
import subprocess
import sys
import tempfile
import uuid

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import exports
from albert_tf.checkpoints import converter
from albert_tf.config import AlbertConfig
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.networks.albert_encoder import AlbertEncoder
from albert_tf.training import classifier_finetuning
from albert_tf.training import race_finetuning
from albert_tf.training import run_pretraining
from albert_tf.training import squad_finetuning
from albert_tf.training.finetuning import FinetuningParams
from data_pipeline import file_io
from data_pipeline import pretraining_data
from data_pipeline import pretraining_writer
from data_pipeline import race
from data_pipeline import sentencepiece_trainer
from data_pipeline import stdlib_corpus

# Minutes of multi-process or whole-pipeline runs: `make test-all` only.
pytestmark = pytest.mark.slow

VOCAB = 400
SEQ = 32
KEYWORD = "banana"


def _config(**kwargs):
  values = dict(vocab_size=VOCAB, embedding_size=16, hidden_size=32,
                num_hidden_layers=2, num_attention_heads=4,
                intermediate_size=64, max_position_embeddings=64)
  values.update(kwargs)
  return AlbertConfig(**values)


def _local_tree(root):
  """Relative paths of everything under a local folder, except Python's
  caches: __pycache__ and the code AutoGraph generates for tf.functions
  (TensorFlow writes it to the temp dir and deletes it at exit)."""
  found = set()
  for folder, dirs, files in os.walk(root):
    dirs[:] = [d for d in dirs if d != "__pycache__"]
    for name in dirs + files:
      if not name.startswith("__autograph_generated_file"):
        found.add(os.path.relpath(os.path.join(folder, name), root))
  return found


def _finetuning_params(output_dir, **kwargs):
  values = dict(output_dir=output_dir, do_train=True, do_eval=True,
                max_seq_length=SEQ, train_batch_size=8, eval_batch_size=8,
                learning_rate=1e-3, train_step=4, warmup_step=1,
                save_checkpoints_steps=2, iterations_per_loop=2, seed=1)
  values.update(kwargs)
  return FinetuningParams(**values)


def _write_sst2(data_dir, words, rng):
  """SST-2 TSVs: label 1 iff the keyword is in the sentence."""
  def rows(n):
    out = []
    for _ in range(n):
      sentence = [rng.choice(words) for _ in range(8)]
      label = rng.randint(0, 1)
      if label:
        sentence.insert(rng.randint(0, 8), KEYWORD)
      out.append((" ".join(sentence), label))
    return out
  for split, n in (("train", 48), ("dev", 16)):
    file_io.write_atomic(file_io.join(data_dir, f"{split}.tsv"),
                         "sentence\tlabel\n" + "".join(
                             f"{s}\t{line}\n" for s, line in rows(n)))
  file_io.write_atomic(file_io.join(data_dir, "test.tsv"),
                       "index\tsentence\n" + "".join(
                           f"{i}\t{s}\n" for i, (s, _) in enumerate(rows(8))))


def _write_squad(path, words, n, rng):
  """SQuAD v1.1: the answer is the word after "marker"."""
  articles = []
  for i in range(n):
    before = " ".join(rng.choice(words) for _ in range(rng.randint(2, 8)))
    after = " ".join(rng.choice(words) for _ in range(rng.randint(2, 8)))
    answer = rng.choice(words)
    context = f"{before} marker {answer} {after}."
    articles.append({"title": f"t{i}", "paragraphs": [{
        "context": context,
        "qas": [{"id": f"q{i}", "question": "which word follows the marker?",
                 "answers": [{"text": answer,
                              "answer_start": len(before) + 8}]}]}]})
  file_io.write_atomic(path, json.dumps({"version": "1.1",
                                         "data": articles}))


def _write_race(root, words, sizes, rng):
  """RACE layout; the right option is the one word in the article."""
  for split, n in sizes.items():
    for level in race.LEVELS:
      for i in range(n):
        options = rng.sample(words[:50], 4)
        answer = rng.randrange(4)
        article = [rng.choice(words) for _ in range(12)]
        article.insert(rng.randrange(12), options[answer])
        file_io.write_atomic(
            file_io.join(root, split, level, f"{i}.txt"), json.dumps({
                "id": f"{level}{i}.txt", "article": " ".join(article),
                "questions": ["which word is in the article?"],
                "options": [options], "answers": ["ABCD"[answer]]}))


def _assert_exist(patterns):
  missing = [p for p in patterns if not file_io.glob(p)]
  assert not missing, f"missing under ram://: {missing}"


def test_whole_pipeline_on_ram_filesystem(tmp_path, monkeypatch):
  # Relative paths and tempfile land in folders of their own, checked below.
  cwd, scratch = tmp_path / "cwd", tmp_path / "tmp"
  cwd.mkdir()
  scratch.mkdir()
  monkeypatch.chdir(cwd)
  monkeypatch.setenv("TMPDIR", str(scratch))
  monkeypatch.setattr(tempfile, "tempdir", str(scratch))
  before = (_local_tree(cwd), _local_tree(tempfile.gettempdir()))
  root = f"ram://pipeline-{uuid.uuid4().hex[:8]}"
  join = file_io.join

  # Corpus -> SentencePiece -> TFRecords (2 shards; a rerun reuses them).
  corpus = join(root, "corpus", "stdlib_docs.txt")
  stats = stdlib_corpus.write_stdlib_corpus(corpus, max_bytes=100_000)
  assert stats["documents"] > 50
  spm_prefix = join(root, "spm", "albert")
  sentencepiece_trainer.train_sentencepiece(
      join(root, "corpus", "*.txt"), spm_prefix, vocab_size=VOCAB,
      num_threads=2)
  spm = spm_prefix + ".model"
  records = join(root, "data", "train.tfrecord")
  options = pretraining_data.InstanceOptions(max_seq_length=SEQ,
                                             max_predictions_per_seq=5)
  made = pretraining_writer.create_pretraining_data(
      join(root, "corpus", "*.txt"), records, spm, options, dupe_factor=1,
      num_workers=1, num_output_shards=2, piece_bytes=32 * 1024,
      show_progress=False)
  assert made["instances"] > 100
  shards = file_io.glob(records + "-*")
  assert len(shards) == 2
  first = [file_io.read_bytes(p) for p in shards]
  again = pretraining_writer.create_pretraining_data(
      join(root, "corpus", "*.txt"), records, spm, options, dupe_factor=1,
      num_workers=1, num_output_shards=2, piece_bytes=32 * 1024,
      show_progress=False)
  assert again["instances"] == made["instances"]
  assert [file_io.read_bytes(p) for p in shards] == first

  # Pretraining: checkpoints at steps 0, 2, 4 and TensorBoard events.
  config_file = join(root, "albert_config.json")
  _config().to_json_file(config_file)
  run = join(root, "pretraining")
  results = run_pretraining.run_pretraining(run_pretraining.PretrainingParams(
      input_file=records + "-*", eval_file=records + "-*", output_dir=run,
      albert_config_file=config_file, train_batch_size=8, eval_batch_size=8,
      max_seq_length=SEQ, max_predictions_per_seq=5, num_train_steps=4,
      num_warmup_steps=1, save_checkpoints_steps=2, iterations_per_loop=2,
      max_eval_steps=2, seed=1))
  # The returned metrics are the ones published on ram:// (4 steps learn
  # nothing to assert on).
  assert json.loads(file_io.read_text(join(run, "eval_results.json"))) == \
      dict(results, step=4)
  assert {"mlm_accuracy", "sop_accuracy"} <= set(results)
  assert tf.train.latest_checkpoint(run) == join(run, "ckpt-4")

  # Export, then fine-tuning from it (GLUE) and from the checkpoint.
  export_dir = join(root, "export")
  exports.export_savedmodel(_config(), join(run, "ckpt-4"), spm, export_dir,
                            seq_length=SEQ)
  rng = random.Random(0)
  words = [w for w in file_io.read_text(corpus).split()
           if w.isalpha() and 3 <= len(w) <= 8][:2000]
  glue_dir = join(root, "glue", "SST-2")
  _write_sst2(glue_dir, words, rng)
  classifier_export = join(root, "sst2_export")
  glue = classifier_finetuning.run_classifier(
      _finetuning_params(join(root, "sst2"), spm_model_file=spm,
                         init_savedmodel=join(export_dir, "encoder"),
                         do_predict=True),
      "sst-2", glue_dir, export_dir=classifier_export)
  assert json.loads(file_io.read_text(join(root, "sst2",
                                           "eval_results.json"))) == \
      glue["eval"]
  # The best of the evaluations at the checkpoints (steps 2 and 4).
  assert glue["eval"]["step"] in (2, 4) and "accuracy" in glue["eval"]

  squad_dir = join(root, "squad")
  _write_squad(join(squad_dir, "train.json"), words, 24, rng)
  _write_squad(join(squad_dir, "dev.json"), words, 8, rng)
  squad = squad_finetuning.run_squad(
      _finetuning_params(join(root, "squad_run"), spm_model_file=spm,
                         albert_config_file=config_file,
                         init_checkpoint=join(run, "ckpt-4"),
                         max_seq_length=48),
      squad_finetuning.SquadOptions(
          train_file=join(squad_dir, "train.json"),
          predict_file=join(squad_dir, "dev.json"), doc_stride=16,
          max_query_length=12, n_best_size=3, max_answer_length=4))
  assert json.loads(file_io.read_text(join(root, "squad_run",
                                           "eval_results.json"))) == squad
  assert squad["step"] in (2, 4) and "f1" in squad

  race_dir = join(root, "race")
  _write_race(race_dir, words, {"train": 8, "dev": 2, "test": 2}, rng)
  race_results = race_finetuning.run_race(
      _finetuning_params(join(root, "race_run"), spm_model_file=spm,
                         albert_config_file=config_file, do_predict=True,
                         max_seq_length=48),
      race_finetuning.RaceOptions(data_dir=race_dir, max_qa_length=16))
  assert race_results["num_examples"] == 4

  after = (_local_tree(cwd), _local_tree(tempfile.gettempdir()))
  assert after == before, "files written to the local disk"
  _assert_exist([
      spm_prefix + ".model", spm_prefix + ".vocab",
      records + "-00000-of-00002", records + "-00001-of-00002",
      records + ".stats.json", join(root, "data", ".train.tfrecord-*.json"),
      join(run, "ckpt-0.index"), join(run, "ckpt-2.index"),
      join(run, "ckpt-4.index"), join(run, "checkpoint"),
      join(run, "train", "events.out.tfevents.*"),
      join(run, "eval", "events.out.tfevents.*"),
      join(run, "albert_config.json"), join(run, "eval_results.json"),
      join(export_dir, "encoder", "saved_model.pb"),
      join(export_dir, "encoder", "variables", "variables.index"),
      join(export_dir, "encoder", "assets", "albert.model"),
      join(export_dir, "preprocessor", "saved_model.pb"),
      join(root, "sst2", "eval_results.json"), join(root, "sst2", "SST-2.tsv"),
      join(root, "sst2", "ckpt-*.index"),
      join(root, "sst2", "train", "events.out.tfevents.*"),
      join(classifier_export, "saved_model.pb"),
      join(classifier_export, "assets", "labels.txt"),
      join(root, "squad_run", "eval_results.json"),
      join(root, "squad_run", "predictions.json"),
      join(root, "squad_run", "nbest_predictions.json"),
      join(root, "race_run", "eval_results.json"),
      join(root, "race_run", "dev_predictions.json"),
      join(root, "race_run", "test_results.json"),
      join(root, "race_run", "test_predictions.json")])
  # No staging folder or temporary file is left anywhere.
  leftovers = [os.path.join(folder, n)
               for folder, dirs, files in tf.io.gfile.walk(root)
               for n in dirs + files if ".tmp" in n]
  assert not leftovers


def _random_pretrainer(config, seed=0):
  model = AlbertPretrainer(AlbertEncoder(config))
  rng = np.random.default_rng(seed)
  for v in model.weights:
    v.assign(rng.normal(0.0, 0.1, v.shape).astype(np.float32))
  return model


WRITERS = ("ours", "official", "huggingface")


@pytest.mark.parametrize("output_format", WRITERS)
def test_checkpoint_conversion_on_ram_filesystem(output_format):
  config = _config()
  root = f"ram://convert-{uuid.uuid4().hex[:8]}"
  source = file_io.join(root, "ours", "ckpt")
  tf.train.Checkpoint(model=_random_pretrainer(config)).write(source)
  expected = converter.read_weights(source, config).arrays
  out = file_io.join(root, output_format, "model.ckpt")
  if output_format == "huggingface":
    out = file_io.join(root, output_format)
  converter.convert_checkpoint(config, source, out, output_format)
  # Read back (a folder for official/ours: the state file points at it).
  back = converter.read_weights(file_io.join(root, output_format), config)
  assert back.format == output_format
  assert sorted(back.arrays) == sorted(expected)
  for name, array in expected.items():
    np.testing.assert_allclose(back.arrays[name], array, rtol=0, atol=0)
  # ... and converted again, ram:// to ram://, into ours.
  converter.convert_checkpoint(config, file_io.join(root, output_format),
                               file_io.join(root, "again", "ckpt"), "ours")
  again = converter.read_weights(file_io.join(root, "again"), config)
  assert sorted(again.arrays) == sorted(expected)
  names = file_io.listdir(file_io.join(root, output_format))
  assert not [n for n in names if ".tmp" in n]


def _modes(root):
  """{relative path: mode} of every file and folder under `root`."""
  found = {".": os.stat(root).st_mode & 0o777}
  for folder, dirs, files in os.walk(root):
    for name in dirs + files:
      path = os.path.join(folder, name)
      found[os.path.relpath(path, root)] = os.stat(path).st_mode & 0o777
  return found


def _make_local_outputs(folder, spm_model):
  """Under umask 022, writes into the local `folder` what exports,
  conversions and fine-tuning write; returns {name: output folder}."""
  old = os.umask(0o022)
  try:
    config = _config(vocab_size=2000)
    source = os.path.join(folder, "pretrained", "ckpt")
    tf.train.Checkpoint(model=_random_pretrainer(config)).write(source)
    outputs = {"export": os.path.join(folder, "export")}
    exports.export_savedmodel(config, source, spm_model, outputs["export"],
                              seq_length=SEQ)
    for output_format in WRITERS:
      outputs[output_format] = os.path.join(folder, output_format)
      converter.convert_checkpoint(
          config, source, outputs[output_format] + (
              "" if output_format == "huggingface" else "/model.ckpt"),
          output_format)
    single = os.path.join(folder, "single", "weights.safetensors")
    converter.convert_checkpoint(config, source, single, "huggingface")
    outputs["single"] = os.path.dirname(single)

    data_dir = os.path.join(folder, "SST-2")
    _write_sst2(data_dir, [f"w{i}" for i in range(50)], random.Random(0))
    config_file = os.path.join(folder, "albert_config.json")
    config.to_json_file(config_file)
    outputs["finetuning"] = os.path.join(folder, "sst2")
    outputs["classifier_export"] = os.path.join(folder, "sst2_export")
    classifier_finetuning.run_classifier(
        _finetuning_params(outputs["finetuning"], spm_model_file=spm_model,
                           albert_config_file=config_file,
                           init_checkpoint=source, do_predict=True),
        "sst-2", data_dir, export_dir=outputs["classifier_export"])
  finally:
    os.umask(old)
  return outputs


@pytest.fixture(scope="module", autouse=True)
def local_outputs(tmp_path_factory, spm_model):
  """`_make_local_outputs` in a process of its own (this file run as a
  script), started before the in-process pipeline test so that both use a
  core; the modes test reads its result."""
  folder = str(tmp_path_factory.mktemp("local_outputs"))
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  process = subprocess.Popen(
      [sys.executable, os.path.abspath(__file__), folder, spm_model],
      cwd=root, env=dict(os.environ, PYTHONPATH=root,
                         TF_CPP_MIN_LOG_LEVEL="3"),
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
  yield process
  if process.poll() is None:
    process.kill()
  process.communicate()


def test_outputs_have_ordinary_modes(local_outputs):
  stdout, stderr = local_outputs.communicate(timeout=900)
  assert local_outputs.returncode == 0, stderr[-3000:]
  outputs = json.loads(stdout.strip().splitlines()[-1])
  wrong = {}
  for name, root in outputs.items():
    modes = _modes(root)
    assert len(modes) >= 2, name
    for path, mode in modes.items():
      want = 0o755 if os.path.isdir(os.path.join(root, path)) else 0o644
      if mode != want:
        wrong[f"{name}/{path}"] = oct(mode)
  assert not wrong


if __name__ == "__main__":
  # python tests/test_any_filesystem.py FOLDER SPM_MODEL (see local_outputs)
  print(json.dumps(_make_local_outputs(sys.argv[1], sys.argv[2])))
