"""python -m tools.run_classifier end to end on a learnable SST-2-format task,
the exported raw-text model against the Python path, and CLI errors."""

import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import exports
from albert_tf.config import AlbertConfig
from albert_tf.models.albert_classifier import AlbertClassifier
from albert_tf.networks.albert_encoder import AlbertEncoder
from albert_tf.training.finetuning.task_settings import GlueOptions
from data_pipeline.tasks.glue import examples as glue_examples
from data_pipeline.tasks.glue import features as glue_features
from data_pipeline.tokenization import sentencepiece_tokenizer as tokenization

ROOT = os.path.abspath(os.path.join(__file__, "../../../../.."))
KEYWORD = "banana"


def _cli(*args):
  env = dict(os.environ, PYTHONPATH=ROOT)
  return subprocess.run([sys.executable, "-m", "tools.run_classifier", *args],
                        cwd=ROOT, env=env, capture_output=True, text=True,
                        timeout=300)


def _keyword_rows(lines, rng):
  """SST-2 rows: label 1 iff the keyword was inserted into the sentence."""
  rows = []
  for words in lines:
    words = list(words)
    label = rng.randint(0, 1)
    if label:
      words.insert(rng.randint(0, len(words)), KEYWORD)
    rows.append((" ".join(words), str(label)))
  return rows


@pytest.fixture(scope="module")
def sst2_run(tmp_path_factory, english_corpus, spm_model):
  """A tiny random-init ALBERT fine-tuned through the CLI (300 steps)."""
  root = tmp_path_factory.mktemp("sst2")
  data_dir = root / "SST-2"
  data_dir.mkdir()
  rng = random.Random(0)
  with open(english_corpus, encoding="utf-8") as f:
    lines = [line.split()[:12] for line in f
             if len(line.split()) >= 4 and KEYWORD not in line.lower()]
  rng.shuffle(lines)
  splits = {"train": _keyword_rows(lines[:1000], rng),
            "dev": _keyword_rows(lines[1000:1200], rng)}
  for split, rows in splits.items():
    with open(data_dir / f"{split}.tsv", "w", encoding="utf-8") as f:
      f.write("sentence\tlabel\n")
      f.writelines(f"{s}\t{label}\n" for s, label in rows)
  test_rows = _keyword_rows(lines[1200:1250], rng)
  with open(data_dir / "test.tsv", "w", encoding="utf-8") as f:
    f.write("index\tsentence\n")
    f.writelines(f"{i}\t{s}\n" for i, (s, _) in enumerate(test_rows))
  config = AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=64,
                        initializer_range=0.02)
  config_file = str(root / "albert_config.json")
  config.to_json_file(config_file)
  output_dir = root / "run"
  export_dir = root / "export"
  result = _cli("--task_name=sst-2", f"--data_dir={data_dir}",
                f"--albert_config_file={config_file}",
                f"--spm_model_file={spm_model}", f"--output_dir={output_dir}",
                f"--export_dir={export_dir}", "--do_train", "--do_eval",
                "--do_predict", "--max_seq_length=32", "--train_batch_size=32",
                "--eval_batch_size=64", "--learning_rate=1e-3",
                "--train_step=300", "--warmup_step=30",
                "--save_checkpoints_steps=100", "--iterations_per_loop=50",
                "--seed=0")
  assert result.returncode == 0, result.stderr[-3000:]
  return dict(output_dir=str(output_dir), export_dir=str(export_dir),
              data_dir=str(data_dir),
              config=config, spm_model=spm_model, stdout=result.stdout,
              test=[s for s, _ in test_rows],
              test_labels=[label for _, label in test_rows])


def test_keyword_task_reaches_high_dev_accuracy(sst2_run):
  out = sst2_run["output_dir"]
  with open(os.path.join(out, "eval_results.json")) as f:
    results = json.load(f)
  assert results["accuracy"] > 0.9
  assert set(results) == {"accuracy", "loss", "step"}
  assert "accuracy=" in sst2_run["stdout"]
  with open(os.path.join(out, "best", "best_eval_results.json")) as f:
    best = json.load(f)
  assert best["step"] == results["step"]
  assert best["accuracy"] == pytest.approx(results["accuracy"])
  assert tf.train.latest_checkpoint(os.path.join(out, "best")).endswith(
      f"ckpt-{results['step']}")
  assert tf.train.latest_checkpoint(out).endswith("ckpt-300")


def test_submission_file(sst2_run):
  with open(os.path.join(sst2_run["output_dir"], "SST-2.tsv"),
            encoding="utf-8") as f:
    lines = f.read().splitlines()
  assert lines[0] == "index\tprediction"
  assert [line.split("\t")[0] for line in lines[1:]] == [
      str(i) for i in range(len(sst2_run["test"]))]
  predicted = [line.split("\t")[1] for line in lines[1:]]
  assert set(predicted) <= {"0", "1"}
  assert np.mean(np.array(predicted) == np.array(sst2_run["test_labels"])) \
      > 0.85


def test_serving_signature_equals_python_path(sst2_run):
  """Raw strings through the exported SavedModel == Python featurisation +
  the best checkpoint's weights."""
  config = sst2_run["config"]
  model = AlbertClassifier(AlbertEncoder(config), num_classes=2)
  best = tf.train.latest_checkpoint(os.path.join(sst2_run["output_dir"],
                                                 "best"))
  tf.train.Checkpoint(model=model).restore(best).expect_partial()
  texts = sst2_run["test"][:8] + ["  A  Crème brûlée " + KEYWORD + " !",
                                  "word " * 40]
  tokenizer = tokenization.SentencePieceTokenizer(sst2_run["spm_model"])
  task = glue_examples.get_task("SST-2")
  examples = [glue_examples.Example(str(i), t) for i, t in enumerate(texts)]
  features = glue_features.featurize(task, examples, tokenizer, 32)
  logits = model(features.padded(32, tokenizer.pad_id))["logits"]
  probabilities = tf.nn.softmax(logits).numpy()

  serving = exports.load_saved_model(
      sst2_run["export_dir"]).signatures["serving_default"]
  got = serving(sentences=tf.constant(texts))
  np.testing.assert_allclose(got["probabilities"], probabilities, atol=1e-5)
  assert [s.decode() for s in got["labels"].numpy()] == [
      task.labels[i] for i in probabilities.argmax(-1)]


def test_eval_only_run_uses_the_best_checkpoint(sst2_run):
  from albert_tf.training.finetuning import params as finetuning_params
  from albert_tf.training.finetuning.tasks import (
    classifier as classifier_finetuning,
  )
  out = sst2_run["output_dir"]
  with open(os.path.join(out, "best", "best_eval_results.json")) as f:
    best = json.load(f)
  params = finetuning_params.FinetuningParams.from_flat(
      output_dir=out, spm_model_file=sst2_run["spm_model"],
      albert_config_file=os.path.join(out, "albert_config.json"),
      do_eval=True, max_seq_length=32, eval_batch_size=64)
  # Rerun with the first run's --export_dir: its own export of the same
  # best checkpoint, left as it is (a rerun of a finished command works).
  saved_model = os.path.join(sst2_run["export_dir"], "saved_model.pb")
  written = os.stat(saved_model).st_mtime_ns
  result = classifier_finetuning.run_classifier(
      params, GlueOptions(task_name="SST-2", data_dir=sst2_run["data_dir"],
                          export_dir=sst2_run["export_dir"]))
  assert result["eval"]["step"] == best["step"]
  assert result["eval"]["accuracy"] == pytest.approx(best["accuracy"])
  assert os.stat(saved_model).st_mtime_ns == written
  with open(os.path.join(out, "export.json")) as f:
    assert json.load(f) == {"export_dir": sst2_run["export_dir"],
                            "checkpoint": f"ckpt-{best['step']}"}


def test_cli_errors_are_one_line(tmp_path, spm_model):
  result = _cli("--task_name=squad", f"--data_dir={tmp_path}",
                f"--spm_model_file={spm_model}", f"--output_dir={tmp_path}",
                "--do_train")
  assert result.returncode == 1
  assert result.stderr.strip().splitlines() == [
      "error: --task_name='squad' is not a GLUE task; expected one of CoLA, "
      "SST-2, MRPC, STS-B, QQP, MNLI, QNLI, RTE, WNLI"]
  result = _cli("--task_name=RTE", f"--data_dir={tmp_path / 'missing'}",
                f"--spm_model_file={spm_model}", f"--output_dir={tmp_path}",
                "--do_train")
  assert result.returncode == 1
  lines = result.stderr.strip().splitlines()
  assert len(lines) == 1 and "--data_dir=" in lines[0] and \
      "missing" in lines[0], result.stderr
