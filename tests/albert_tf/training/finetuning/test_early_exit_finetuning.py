"""run_classifier --early_exit: the patience auto chooses, the NumPy rule
scoring every patience, the flags' checks, and a tiny run end to end
(evaluation table, predictions with exit layers, resume)."""

import json
import os

from absl import flags
from absl import logging as absl_logging
import numpy as np
import pytest
import tensorflow as tf

from albert_common.errors import UserInputError
from albert_tf import exports
from albert_tf.training import early_exit
from albert_tf.training.early_exit import EarlyExitOptions
from albert_tf.training.finetuning import runner as finetuning_runner
from albert_tf.training.finetuning.own_data_settings import OwnDataOptions
from albert_tf.training.finetuning.tasks import own_data
from tests.albert_tf.models.test_early_exit import reference_exit
from tests.albert_tf.training.finetuning import own_data_kit as kit
from tests.data_pipeline.tasks.test_length_buckets import glue_setup  # noqa: F401 (fixture)


def _row(patience, accuracy, depth):
  return {"patience": patience, "accuracy": accuracy,
          "mean_exit_layer": depth}


def test_auto_takes_the_shallowest_patience_within_the_tolerance():
  table = [_row(0, 0.900, 12.0), _row(1, 0.880, 3.1), _row(2, 0.896, 4.0),
           _row(3, 0.905, 5.2), _row(4, 0.903, 6.0)]
  # Best 0.905 (patience 3); within 0.5 points: 0.900 and up -> patience
  # 3 (5.2 layers), 4 (6.0), 0 (12): the shallowest is 3.
  assert early_exit.choose_patience(table, "accuracy", 0.5) == 3
  # Within 1 point (0.895 and up): patience 2 joins, at 4.0 layers.
  assert early_exit.choose_patience(table, "accuracy", 1.0) == 2
  # Within 3 points: patience 1 (3.1 layers) although 2.5 points worse.
  assert early_exit.choose_patience(table, "accuracy", 3.0) == 1
  # Tolerance 0: the best metric only.
  assert early_exit.choose_patience(table, "accuracy", 0.0) == 3
  # The naive rule (the best metric whatever the depth) would say 3 for
  # every tolerance; the shallowest overall would say 1.
  # Ties in depth: the better metric, then the larger patience.
  tied = [_row(0, 0.80, 6.0), _row(1, 0.81, 3.0), _row(2, 0.82, 3.0),
          _row(3, 0.82, 3.0)]
  assert early_exit.choose_patience(tied, "accuracy", 5.0) == 3
  assert early_exit.choose_patience(tied[:3], "accuracy", 5.0) == 2


@pytest.mark.parametrize("regression,threshold", [(False, 0.0), (True, 0.3)])
def test_numpy_rule_equals_the_reference(regression, threshold):
  rng = np.random.default_rng(0)
  all_logits = rng.normal(size=(200, 6, 1 if regression else 3))
  all_logits += rng.normal(size=(200, 1, all_logits.shape[2])) * 2
  for patience in range(6):
    logits, layers = early_exit.exit_at(all_logits, patience, threshold,
                                        regression)
    want_logits, want_layers = reference_exit(all_logits, patience,
                                              threshold, regression)
    np.testing.assert_array_equal(layers, want_layers)
    np.testing.assert_array_equal(logits, want_logits)
  assert len(set(early_exit.exit_at(all_logits, 1, threshold,
                                    regression)[1])) >= 3


def test_flag_checks():
  def check(task_type, **values):
    early_exit.check(EarlyExitOptions.from_flat(**values), task_type)

  check("classification", early_exit=True)
  check("regression", early_exit=True, exit_threshold=0.2,
        exit_patience="3")
  cases = [
      ("multi_label", dict(early_exit=True),
       "--early_exit supports classification and regression, not "
       "multi_label"),
      ("classification", dict(early_exit=True, exit_patience="-1"),
       "--exit_patience must be >= 0"),
      ("classification", dict(early_exit=True, exit_patience="two"),
       "--exit_patience must be auto or an integer"),
      # str.isdigit() is true of '\u00b2' and int() refuses it.
      ("classification", dict(early_exit=True, exit_patience="\u00b2"),
       "--exit_patience must be auto or an integer >= 0, got '\u00b2'"),
      ("classification", dict(early_exit=True, exit_patience="-\u00b2"),
       "--exit_patience must be auto or an integer"),
      ("classification", dict(early_exit=True, exit_threshold=0.2),
       "--exit_threshold is for regression"),
      ("classification", dict(exit_patience="2"),
       "--exit_patience needs --early_exit"),
      # Every value alike, the defaults' included.
      ("classification", dict(exit_patience="auto"),
       "--exit_patience needs --early_exit"),
      ("classification", dict(exit_tolerance=0.5),
       "--exit_tolerance needs --early_exit"),
      ("regression", dict(exit_threshold=0.1),
       "--exit_threshold needs --early_exit"),
      ("classification", dict(early_exit=True, exit_patience="2",
                              exit_tolerance=1.0),
       "--exit_tolerance is for --exit_patience=auto"),
  ]
  for task_type, values, message in cases:
    with pytest.raises(UserInputError, match=message):
      check(task_type, **values)
  from albert_tf.config import AlbertConfig
  on = EarlyExitOptions.from_flat(early_exit=True)
  shared = AlbertConfig(vocab_size=10, num_hidden_layers=4)
  early_exit.check_model(on, "", shared)
  # Patience 3 can still exit at the 4th application; 4 never exits.
  early_exit.check_model(EarlyExitOptions.from_flat(
      early_exit=True, exit_patience="3"), "", shared)
  for patience in ("4", "12"):
    with pytest.raises(UserInputError, match=(
        f"^--exit_patience={patience} never exits: the model applies its "
        "layer num_hidden_layers=4 times, so a patience must be below 4")):
      early_exit.check_model(EarlyExitOptions.from_flat(
          early_exit=True, exit_patience=patience), "", shared)
  with pytest.raises(UserInputError, match="not --init_savedmodel"):
    early_exit.check_model(on, "exported/encoder", shared)
  for changes in (dict(share_parameters="ffn"), dict(num_hidden_groups=2)):
    config = AlbertConfig(vocab_size=10, num_hidden_layers=4, **changes)
    with pytest.raises(UserInputError, match=(
        "^--early_exit: early exit loops over one shared layer: it needs "
        "share_parameters='all' and num_hidden_groups=1")):
      early_exit.check_model(on, "", config)


def test_one_regression_threshold_everywhere():
  """The library's default is the tool's (0.0 never exited): a prediction
  drifting by 0.05 per application exits at patience 2 by default."""
  import inspect

  from albert_tf.exports.serving import classifier as serving
  from albert_tf.models.albert_early_exit_classifier import (
    AlbertEarlyExitClassifier,
  )
  from albert_tf.networks import early_exit_encoder
  unset = early_exit.threshold(EarlyExitOptions(early_exit=True))
  assert unset == 0.1
  all_logits = (np.arange(6) * 0.05).reshape(1, 6, 1)  # (N, L, 1)
  _, layers = early_exit.exit_at(all_logits, 2, regression=True)
  assert layers.tolist() == [3]
  table = early_exit.exit_table(all_logits, lambda x: {"m": 0.0}, "m",
                                regression=True)
  assert [row["mean_exit_layer"] for row in table] == [6, 2, 3, 4, 5, 6]
  for function, name in ((early_exit.exit_at, "threshold"),
                         (early_exit.exit_table, "threshold"),
                         (early_exit_encoder.early_exit, "threshold"),
                         (AlbertEarlyExitClassifier.early_exit, "threshold"),
                         (serving.export_classifier, "exit_threshold")):
    default = inspect.signature(function).parameters[name].default
    assert default == unset, function.__qualname__


def _run_tool(tool, *args):
  """tools.<tool>'s main in this process; its exit status."""
  import importlib
  module = importlib.import_module(f"tools.{tool}")
  from tools.support import cli
  flags.FLAGS.unparse_flags()
  try:
    flags.FLAGS([tool, *args])
    absl_logging.set_verbosity(absl_logging.INFO)
    cli._main_with_clean_errors(module.main)([tool])  # noqa: SLF001
    return 0
  except SystemExit as e:
    return e.code
  finally:
    flags.FLAGS.unparse_flags()


def write_files(root, english_corpus, spm_model, num_hidden_layers=4):
  """{"train" | "dev" | "test": a CSV (id, text, label), "scores": a JSONL
  of regression rows, "config": a tiny config of `num_hidden_layers`} in
  `root` (a pathlib.Path), with "root" and "spm"."""
  lines = kit.corpus_lines(english_corpus, 400)
  columns = ("id", "text", "label")
  out = {"root": root, "spm": spm_model}
  for split, part, seed in (("train", lines[:300], 1),
                            ("dev", lines[300:380], 2),
                            ("test", lines[380:], 3)):
    out[split] = kit.write_csv(root / f"{split}.csv",
                               kit.classification_rows(part, seed), columns)
  out["scores"] = kit.write_jsonl(root / "scores.jsonl",
                                  kit.regression_rows(lines[:40], 4))
  out["config"] = kit.tiny_config(root / "albert_config.json",
                                  num_hidden_layers=num_hidden_layers)
  return out


@pytest.fixture(scope="module")
def files(tmp_path_factory, english_corpus, spm_model):
  return write_files(tmp_path_factory.mktemp("early_exit"), english_corpus,
                     spm_model)


def test_command_line_bad_input_is_one_line(files, tmp_path, capsys):
  common = (f"--albert_config_file={files['config']}",
            f"--spm_model_file={files['spm']}", "--do_train",
            "--max_seq_length=32", f"--train_file={files['train']}")
  cases = {
      "negative patience": (("--early_exit", "--exit_patience=-2"),
                            "^error: --exit_patience must be >= 0"),
      "patience at depth": (("--early_exit", "--exit_patience=4"),
                            "^error: --exit_patience=4 never exits"),
      "superscript patience": (
          ("--early_exit", "--exit_patience=\u00b2"),
          "^error: --exit_patience must be auto or an integer >= 0, got "
          "'\u00b2'$"),
      "tolerance alone": (("--exit_tolerance=0.5",),
                          "^error: --exit_tolerance needs --early_exit"),
      "threshold, classification": (
          ("--early_exit", "--exit_threshold=0.3", "--task_type="
           "classification"), "^error: --exit_threshold is for regression"),
      "multi_label": (("--early_exit", "--task_type=multi_label"),
                      "^error: --early_exit supports classification and "
                      "regression, not multi_label"),
  }
  import re
  for name, (args, pattern) in cases.items():
    out = tmp_path / name.replace(" ", "_").replace(",", "")
    status = _run_tool("run_classifier", *common, *args,
                       f"--output_dir={out}")
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert status == 1 and len(errors) == 1, (name, err[-2000:])
    assert re.search(pattern, errors[0]), (name, errors[0])
    assert not out.exists(), name


def _settings(out, files, **kwargs):
  values = dict(train_step=40, warmup_step=4, save_checkpoints_steps=20,
                iterations_per_loop=10, train_batch_size=16,
                learning_rate=2e-3)
  values.update(kwargs)
  return kit.run_settings(out, files["config"], files["spm"], **values)


def _read_csv(path):
  import csv
  with open(path, encoding="utf-8", newline="") as f:
    return list(csv.DictReader(f))


def _read_jsonl(path):
  with open(path, encoding="utf-8") as f:
    return [json.loads(line) for line in f]


def test_tiny_early_exit_run_end_to_end(files, tmp_path):
  out = tmp_path / "run"
  options = OwnDataOptions.from_flat(
      train_file=files["train"], dev_file=files["dev"],
      test_file=files["test"], export_dir=str(tmp_path / "export"))
  early = EarlyExitOptions.from_flat(early_exit=True)
  result = own_data.run_own_data(_settings(out, files, do_predict=True),
                                 options, early=early)
  results = json.loads((out / "eval_results.json").read_text())
  table = results["exit_table"]
  assert [row["patience"] for row in table] == [0, 1, 2, 3]
  assert table[0]["mean_exit_layer"] == 4.0
  # auto's rule checked on the run's table without choose_patience: the
  # chosen row is within the tolerance of the best accuracy, and no row
  # within it exits earlier. The tolerance is --exit_tolerance's documented
  # default (docs/early-exit.md, docs/flags.md): 0.5 points of accuracy.
  best = max(row["accuracy"] for row in table)
  within = [row for row in table
            if row["accuracy"] >= best - 0.005 - 1e-12]
  # eval_results.json holds every number as a float (patience 2 -> 2.0).
  chosen = results["exit_patience"]
  rows = [row for row in table if row["patience"] == chosen]
  assert len(rows) == 1, (chosen, table)
  row = rows[0]
  assert row in within
  assert row["mean_exit_layer"] == min(r["mean_exit_layer"] for r in within)
  assert results["accuracy"] == pytest.approx(row["accuracy"])
  assert results["mean_exit_layer"] == pytest.approx(row["mean_exit_layer"])
  assert result["eval"]["exit_patience"] == chosen
  records = _read_jsonl(out / "test_predictions.jsonl")
  layers = [r["exit_layer"] for r in records]
  assert len(records) == 20 and all(1 <= layer <= 4 for layer in layers)
  if chosen == 0:
    assert set(layers) == {4}
  dev = _read_jsonl(out / "dev_predictions.jsonl")
  assert np.mean([r["exit_layer"] for r in dev]) == pytest.approx(
      results["mean_exit_layer"])
  # The export exits at the chosen patience: the test file's labels and
  # exit layers, from raw text.
  serving = exports.load_saved_model(result["export_dir"]).signatures
  assert "early_exit" in serving
  texts = [r["text"] for r in _read_csv(files["test"])]
  got = serving["serving_default"](sentences=tf.constant(texts))
  assert got["exit_layer"].numpy().tolist() == layers
  assert [s.decode() for s in got["label"].numpy()] == [
      r["label"] for r in records]
  full = serving["early_exit"](sentences=tf.constant(texts),
                               exit_patience=tf.constant(0))
  assert set(full["exit_layer"].numpy().tolist()) == {4}


@pytest.mark.slow
def test_stopped_and_rerun_equals_uninterrupted(files, tmp_path,
                                                monkeypatch):
  options = OwnDataOptions.from_flat(train_file=files["train"])
  early = EarlyExitOptions.from_flat(early_exit=True, exit_patience="1")

  def settings(out):
    return _settings(out, files, do_eval=False, train_step=20,
                     save_checkpoints_steps=10, iterations_per_loop=5)
  own_data.run_own_data(settings(tmp_path / "reference"), options,
                        early=early)
  save = finetuning_runner.FinetuningRunner.save_and_evaluate

  class Killed(Exception):
    pass

  def save_then_die(runner):
    result = save(runner)
    if runner.step == 10:
      raise Killed()
    return result

  monkeypatch.setattr(finetuning_runner.FinetuningRunner,
                      "save_and_evaluate", save_then_die)
  with pytest.raises(Killed):
    own_data.run_own_data(settings(tmp_path / "killed"), options,
                          early=early)
  monkeypatch.undo()
  own_data.run_own_data(settings(tmp_path / "killed"), options, early=early)
  reference = tf.train.load_checkpoint(str(tmp_path / "reference"))
  resumed = tf.train.load_checkpoint(str(tmp_path / "killed"))
  names = [n for n, dtype in reference.get_variable_to_dtype_map().items()
           if n.startswith("model/") and dtype.is_floating]
  assert any("exit_heads" in n or "head_kernel" in n for n in names), names
  for name in names:
    np.testing.assert_allclose(resumed.get_tensor(name),
                               reference.get_tensor(name), atol=1e-5,
                               err_msg=name)
  assert os.path.exists(tmp_path / "killed" / "labels.json")


@pytest.mark.slow
def test_glue_early_exit_run_packed(glue_setup, tmp_path):  # noqa: F811
  """A GLUE task (SST-2-like) with --early_exit and --pack_examples:
  the table in eval_results.json, the test split's exit layers beside its
  submission file."""
  from albert_common import settings_fields
  from albert_tf.training.finetuning.task_settings import GlueOptions
  from albert_tf.training.finetuning.tasks import classifier
  out = tmp_path / "glue"
  params = settings_fields.replace(
      glue_setup["params"], output_dir=str(out), train_step=20,
      warmup_step=2, save_checkpoints_steps=20, iterations_per_loop=10,
      do_predict=True, pack_examples=True)
  result = classifier.run_classifier(
      params, GlueOptions(task_name="SST-2", data_dir=glue_setup["data_dir"]),
      EarlyExitOptions.from_flat(early_exit=True, exit_patience="1"))
  results = json.loads((out / "eval_results.json").read_text())
  assert results["exit_patience"] == 1
  assert [row["patience"] for row in results["exit_table"]] == [0, 1]
  assert results["accuracy"] == pytest.approx(
      results["exit_table"][1]["accuracy"])
  assert result["eval"]["mean_exit_layer"] == results["mean_exit_layer"]
  layers = (out / "test_exit_layers.txt").read_text().split()
  submission = (out / "SST-2.tsv").read_text().splitlines()
  assert len(layers) == len(submission) - 1 > 50
  assert set(layers) <= {"1", "2"}
