"""Every user path on a non-local TensorFlow filesystem.

`ram://` (TensorFlow's in-memory filesystem) stands for Cloud Storage: no
local file API works on it. The whole pipeline runs in one process with
every input and output under `ram://`, and nothing may appear on the local
disk; and checkpoint conversion reads and writes `ram://` in every layout.
The modes of what is written locally: test_output_modes.py.
"""

import json
import os
import random
import re
import tempfile
import uuid

import numpy as np
import pytest
import tensorflow as tf

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf import exports
from albert_tf import saved_model_inspection as inspection
from albert_tf.checkpoints import converter
from albert_tf.training.finetuning.task_settings import GlueOptions
from albert_tf.training.finetuning.tasks import (
  classifier as classifier_finetuning,
)
from albert_tf.training.finetuning.tasks import race as race_finetuning
from albert_tf.training.finetuning.tasks import squad as squad_finetuning
from albert_tf.training.pretraining import driver as pretraining_driver
from data_pipeline.corpora import stdlib_corpus
from data_pipeline.pretraining import instance_options
from data_pipeline.pretraining import writer as pretraining_writer
from data_pipeline.tasks.race import examples as race_examples
from data_pipeline.tokenization import sentencepiece_tokenizer as tokenization
from data_pipeline.tokenization import sentencepiece_trainer
from tests.project import filesystem_kit as kit

# Minutes of multi-process or whole-pipeline runs: `make test-all` only.
pytestmark = pytest.mark.slow

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
    for level in race_examples.LEVELS:
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


def _top_level_names(uid):
  """Names directly under ram:// that belong to this run."""
  return sorted(n for n in tf.io.gfile.listdir("ram://") if uid in n)


def test_whole_pipeline_on_ram_filesystem(tmp_path, monkeypatch):
  """Inputs in a folder (ram://pipeline-<id>/...), every tool's output
  directly under the scheme (ram://<name>-<id>: a staging folder or
  temporary there must be ram://.<name>..., not a local "ram:/...")."""
  # Relative paths and tempfile land in folders of their own, checked below.
  cwd, scratch = tmp_path / "cwd", tmp_path / "tmp"
  cwd.mkdir()
  scratch.mkdir()
  monkeypatch.chdir(cwd)
  monkeypatch.setenv("TMPDIR", str(scratch))
  monkeypatch.setattr(tempfile, "tempdir", str(scratch))
  before = (_local_tree(cwd), _local_tree(tempfile.gettempdir()))
  uid = uuid.uuid4().hex[:8]
  root = f"ram://pipeline-{uid}"
  join = file_io.join

  def top(name):
    return f"ram://{name}-{uid}"

  # Corpus -> SentencePiece -> TFRecords (2 shards; a rerun reuses them).
  corpus = join(root, "corpus", "stdlib_docs.txt")
  stats = stdlib_corpus.write_stdlib_corpus(corpus, max_bytes=100_000)
  assert stats["documents"] > 50
  spm_prefix = top("spm")
  sentencepiece_trainer.train_sentencepiece(
      join(root, "corpus", "*.txt"), spm_prefix, vocab_size=kit.VOCAB,
      num_threads=2)
  spm = spm_prefix + ".model"
  assert tokenization.SentencePieceTokenizer(spm).vocab_size == kit.VOCAB
  records = top("train") + ".tfrecord"
  options = instance_options.InstanceOptions(max_seq_length=kit.SEQ,
                                             max_predictions_per_seq=5)
  made = pretraining_writer.create_pretraining_data(
      join(root, "corpus", "*.txt"), records, spm, options, dupe_factor=1,
      num_workers=1, num_output_shards=2, piece_bytes=32 * 1024,
      show_progress=False)
  assert made["instances"] > 100
  shards = file_io.glob(records + "-*")
  assert shards == [records + "-00000-of-00002", records + "-00001-of-00002"]
  assert sum(1 for p in shards for _ in tf.data.TFRecordDataset(p)) == \
      made["instances"]
  first = [file_io.read_bytes(p) for p in shards]
  again = pretraining_writer.create_pretraining_data(
      join(root, "corpus", "*.txt"), records, spm, options, dupe_factor=1,
      num_workers=1, num_output_shards=2, piece_bytes=32 * 1024,
      show_progress=False)
  assert again["instances"] == made["instances"]
  assert [file_io.read_bytes(p) for p in shards] == first

  # Pretraining: checkpoints at steps 0, 2, 4 and TensorBoard events.
  config_file = join(root, "albert_config.json")
  kit.config().to_json_file(config_file)
  run = top("pretraining")
  results = pretraining_driver.run_pretraining(
      pretraining_driver.PretrainingParams.from_flat(
      input_file=records + "-*", eval_file=records + "-*", output_dir=run,
      albert_config_file=config_file, train_batch_size=8, eval_batch_size=8,
      max_seq_length=kit.SEQ, max_predictions_per_seq=5, num_train_steps=4,
      num_warmup_steps=1, save_checkpoints_steps=2, iterations_per_loop=2,
      max_eval_steps=2, seed=1))
  # The returned metrics are the ones published on ram:// (4 steps learn
  # nothing to assert on).
  assert json.loads(file_io.read_text(join(run, "eval_results.json"))) == \
      dict(results, step=4)
  assert {"mlm_accuracy", "sop_accuracy"} <= set(results)
  assert tf.train.latest_checkpoint(run) == join(run, "ckpt-4")

  # Export, then fine-tuning from it (GLUE) and from the checkpoint.
  export_dir = top("export")
  exports.export_savedmodel(kit.config(), join(run, "ckpt-4"), spm, export_dir,
                            seq_length=kit.SEQ)
  preprocessor = exports.load_saved_model(join(export_dir, "preprocessor"))
  packed = preprocessor(tf.constant(["a few words", "more"]))
  assert packed["input_word_ids"].shape == (2, kit.SEQ)
  # --init_savedmodel takes the encoder and names the wrong half.
  inspection.check_encoder_savedmodel(join(export_dir, "encoder"))
  with pytest.raises(UserInputError, match=re.escape(
      f"--init_savedmodel={export_dir}/preprocessor is the preprocessor of "
      "an export (signatures: serving_default(sentences), two_segments("
      f"text_a, text_b)), not an encoder; pass {export_dir}/encoder")):
    inspection.check_encoder_savedmodel(join(export_dir, "preprocessor"))
  with pytest.raises(UserInputError, match=re.escape(
      f"--init_savedmodel={export_dir} is an export folder (encoder/, "
      f"preprocessor/), not a SavedModel; pass {export_dir}/encoder")):
    inspection.check_encoder_savedmodel(export_dir)
  rng = random.Random(0)
  words = [w for w in file_io.read_text(corpus).split()
           if w.isalpha() and 3 <= len(w) <= 8][:2000]
  glue_dir = join(root, "glue", "SST-2")
  kit.write_sst2(glue_dir, words, rng)
  classifier_export = top("sst2_export")
  glue = classifier_finetuning.run_classifier(
      kit.finetuning_params(top("sst2"), spm_model_file=spm,
                            init_savedmodel=join(export_dir, "encoder"),
                            do_predict=True),
      GlueOptions(task_name="sst-2", data_dir=glue_dir,
                  export_dir=classifier_export))
  assert json.loads(file_io.read_text(join(top("sst2"),
                                           "eval_results.json"))) == \
      glue["eval"]
  # The best of the evaluations at the checkpoints (steps 2 and 4).
  assert glue["eval"]["step"] in (2, 4) and "accuracy" in glue["eval"]
  # The export classifies the test sentences as the submission file.
  test_rows = [line.split("\t") for line in file_io.read_text(
      join(glue_dir, "test.tsv")).splitlines()[1:]]
  submitted = [line.split("\t")[1] for line in file_io.read_text(
      join(top("sst2"), "SST-2.tsv")).splitlines()[1:]]
  served = exports.load_saved_model(classifier_export).signatures[
      "serving_default"](sentences=tf.constant([s for _, s in test_rows]))
  assert [x.decode() for x in served["labels"].numpy()] == submitted
  with pytest.raises(UserInputError, match="is a fine-tuned classifier"):
    inspection.check_encoder_savedmodel(classifier_export)

  squad_dir = join(root, "squad")
  _write_squad(join(squad_dir, "train.json"), words, 24, rng)
  _write_squad(join(squad_dir, "dev.json"), words, 8, rng)
  squad_export = top("squad_export")
  squad = squad_finetuning.run_squad(
      kit.finetuning_params(top("squad_run"), spm_model_file=spm,
                            albert_config_file=config_file,
                            init_checkpoint=join(run, "ckpt-4"),
                            init_head=False,  # a classifier's run: its encoder
                            max_seq_length=48),
      squad_finetuning.SquadOptions(
          train_file=join(squad_dir, "train.json"),
          predict_file=join(squad_dir, "dev.json"), doc_stride=16,
          max_query_length=12, n_best_size=3, max_answer_length=4,
          export_dir=squad_export))
  assert json.loads(file_io.read_text(join(top("squad_run"),
                                           "eval_results.json"))) == squad
  assert squad["step"] in (2, 4) and "f1" in squad
  qas = [(p["qas"][0], p["context"]) for a in json.loads(file_io.read_text(
      join(squad_dir, "dev.json")))["data"] for p in a["paragraphs"]]
  served = exports.load_saved_model(squad_export).signatures[
      "serving_default"](question=tf.constant([q["question"] for q, _ in qas]),
                         context=tf.constant([c for _, c in qas]))
  predicted = json.loads(file_io.read_text(join(top("squad_run"),
                                                "predictions.json")))
  assert [a.decode() for a in served["answer"].numpy()] == [
      predicted[q["id"]] for q, _ in qas]
  with pytest.raises(UserInputError, match="is a fine-tuned SQuAD export"):
    inspection.check_encoder_savedmodel(squad_export)

  race_dir = join(root, "race")
  _write_race(race_dir, words, {"train": 8, "dev": 2, "test": 2}, rng)
  race_export = top("race_export")
  race_results = race_finetuning.run_race(
      kit.finetuning_params(top("race_run"), spm_model_file=spm,
                            albert_config_file=config_file, do_predict=True,
                            max_seq_length=48),
      race_finetuning.RaceOptions(data_dir=race_dir, max_qa_length=16,
                                  export_dir=race_export))
  assert race_results["num_examples"] == 4
  examples = race_examples.read_race_examples(race_dir, "dev")
  served = exports.load_saved_model(race_export).signatures[
      "serving_default"](article=tf.constant([e.article for e in examples]),
                         question=tf.constant([e.question for e in examples]),
                         options=tf.constant([e.options for e in examples]))
  predicted = json.loads(file_io.read_text(join(top("race_run"),
                                                "dev_predictions.json")))
  assert [a.decode() for a in served["answer"].numpy()] == [
      predicted[e.example_id]["answer"] for e in examples]
  with pytest.raises(UserInputError, match="is a fine-tuned RACE export"):
    inspection.check_encoder_savedmodel(race_export)

  after = (_local_tree(cwd), _local_tree(tempfile.gettempdir()))
  assert after == before, "files written to the local disk"
  _assert_exist([
      spm_prefix + ".model", spm_prefix + ".vocab",
      records + ".stats.json", f"ram://.train-{uid}.tfrecord-*.json",
      join(run, "ckpt-0.index"), join(run, "ckpt-2.index"),
      join(run, "ckpt-4.index"), join(run, "checkpoint"),
      join(run, "train", "events.out.tfevents.*"),
      join(run, "eval", "events.out.tfevents.*"),
      join(run, "albert_config.json"), join(run, "eval_results.json"),
      join(export_dir, "encoder", "saved_model.pb"),
      join(export_dir, "encoder", "variables", "variables.index"),
      join(export_dir, "encoder", "assets", f"spm-{uid}.model"),
      join(export_dir, "preprocessor", "saved_model.pb"),
      join(top("sst2"), "eval_results.json"),
      join(top("sst2"), "ckpt-*.index"),
      join(top("sst2"), "train", "events.out.tfevents.*"),
      join(classifier_export, "assets", "labels.txt"),
      join(top("squad_run"), "nbest_predictions.json"),
      join(top("race_run"), "eval_results.json"),
      join(top("race_run"), "test_results.json"),
      join(top("race_run"), "test_predictions.json")])
  # Every output is where it was asked for; no staging folder or temporary
  # is left anywhere.
  assert _top_level_names(uid) == sorted([
      f"pipeline-{uid}", f"spm-{uid}.model", f"spm-{uid}.vocab",
      f"train-{uid}.tfrecord-00000-of-00002",
      f"train-{uid}.tfrecord-00001-of-00002",
      f"train-{uid}.tfrecord.stats.json",
      f".train-{uid}.tfrecord-00000-of-00002.stats.json",
      f".train-{uid}.tfrecord-00001-of-00002.stats.json",
      f"pretraining-{uid}", f"export-{uid}", f"sst2-{uid}",
      f"sst2_export-{uid}", f"squad_run-{uid}", f"squad_export-{uid}",
      f"race_run-{uid}", f"race_export-{uid}"])
  leftovers = [os.path.join(folder, n)
               for top_name in _top_level_names(uid)
               for folder, dirs, files in tf.io.gfile.walk(
                   f"ram://{top_name}")
               for n in dirs + files if ".tmp" in n]
  assert not leftovers


@pytest.mark.parametrize("depth", ["folder", "top"])
@pytest.mark.parametrize("output_format", kit.WRITERS)
def test_checkpoint_conversion_on_ram_filesystem(output_format, depth):
  """In a folder (ram://convert-<id>/<format>/...) and directly under the
  scheme (ram://<format>-<id>: the prefix, or the Hugging Face folder)."""
  config = kit.config()
  uid = uuid.uuid4().hex[:8]
  root = f"ram://convert-{uid}"
  source = file_io.join(root, "ours", "ckpt")
  tf.train.Checkpoint(model=kit.random_pretrainer(config)).write(source)
  expected = converter.read_weights(source, config).arrays
  if depth == "top":
    out = back_from = f"ram://{output_format}-{uid}"
  elif output_format == "huggingface":
    out = back_from = file_io.join(root, output_format)
  else:
    out = file_io.join(root, output_format, "model.ckpt")
    # A folder: the state file points at the checkpoint.
    back_from = file_io.dirname(out)
  converter.convert_checkpoint(config, source, out, output_format)
  back = converter.read_weights(back_from, config)
  assert back.format == output_format
  assert sorted(back.arrays) == sorted(expected)
  for name, array in expected.items():
    np.testing.assert_allclose(back.arrays[name], array, rtol=0, atol=0)
  # ... and converted again, ram:// to ram://, into ours.
  converter.convert_checkpoint(config, back_from,
                               file_io.join(root, "again", "ckpt"), "ours")
  again = converter.read_weights(file_io.join(root, "again"), config)
  assert sorted(again.arrays) == sorted(expected)
  written = (file_io.listdir(file_io.dirname(out)) if depth == "folder"
             else _top_level_names(uid))
  assert written and not [n for n in written if ".tmp" in n]
  if depth == "top" and output_format != "huggingface":
    assert f"{output_format}-{uid}.index" in written
    assert "checkpoint" in file_io.listdir("ram://")
