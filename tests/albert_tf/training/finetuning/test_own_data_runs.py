"""run_classifier on one's own files: crafted regression and multi-label
tasks learn far above chance, with metrics recomputed here from the
predictions; a run stopped after a checkpoint and rerun ends as an
uninterrupted one; the command line's recipe, results and one-line
errors."""

import csv
import os

import numpy as np
import pytest
import tensorflow as tf

from albert_common.errors import UserInputError
from albert_tf import exports
from albert_tf.training.finetuning import runner as finetuning_runner
from albert_tf.training.finetuning.tasks import own_data
from tests.albert_tf.training.finetuning import own_data_kit as kit


@pytest.mark.slow
def test_regression_task_learns(data, tmp_path):
  out = tmp_path / "scores"
  result = own_data.run_own_data(
      kit.run_settings(out, data["config"], data["spm"]),
      kit.options(train_file=data["scores_train"], dev_file=data["scores_dev"],
                  export_dir=str(tmp_path / "scores_export")))
  assert result["labels"].task_type == "regression"
  results = result["eval"]
  assert results["pearson"] > 0.9  # chance: 0
  scores = np.array([r["score"] for r in kit.read_jsonl(
      out / "dev_predictions.jsonl")])
  truth = np.array([r["label"] for r in kit.read_jsonl(data["scores_dev"])])
  assert results["pearson"] == pytest.approx(np.corrcoef(scores, truth)[0, 1],
                                             abs=1e-6)
  assert results["mse"] == pytest.approx(np.mean((scores - truth) ** 2),
                                         abs=1e-6)
  serving = exports.load_saved_model(str(tmp_path / "scores_export")
                                     ).signatures["serving_default"]
  texts = [r["text"] for r in kit.read_jsonl(data["scores_dev"])[:8]]
  np.testing.assert_allclose(
      serving(sentences=tf.constant(texts))["score"].numpy(), scores[:8],
      atol=1e-5)


@pytest.mark.slow
def test_multi_label_task_learns_through_the_command_line(data, tmp_path,
                                                          capsys, caplog):
  """tools.run_classifier in this process: the recipe is logged, the
  results printed; micro F1 recomputed from the predictions."""
  import logging
  caplog.set_level(logging.INFO, logger="absl")
  out = tmp_path / "tags"
  export_dir = tmp_path / "tags_export"
  kit.run_tool("run_classifier", f"--train_file={data['tags_train']}",
               f"--dev_file={data['tags_dev']}",
               f"--albert_config_file={data['config_64']}",
               f"--spm_model_file={data['spm']}", f"--output_dir={out}",
               f"--export_dir={export_dir}", "--task_type=multi_label",
               "--threshold=0.4", "--do_train", "--do_eval",
               "--max_seq_length=32", "--learning_rate=2e-3",
               "--train_step=400", "--warmup_step=40",
               "--save_checkpoints_steps=200", "--iterations_per_loop=50",
               "--seed=0")
  assert "recipe of CoLA" in caplog.text
  assert "micro_f1=" in capsys.readouterr().out
  results = kit.read_json(out / "eval_results.json")
  # Chance: every label on gives micro F1 2p / (1 + p), p = 1/2: 2/3; a
  # record's three labels all right by guessing: 1/8. Measured: 0.875 and
  # 0.545.
  assert results["micro_f1"] > 0.8
  assert results["subset_accuracy"] > 0.4
  records = kit.read_jsonl(out / "dev_predictions.jsonl")
  names = ("fruit", "music", "volcano")
  chosen = np.array([[n in r["labels"] for n in names] for r in records])
  assert all(set(r["labels"]) == {n for n in names
                                  if r["probabilities"][n] > 0.4}
             for r in records)
  with open(data["tags_dev"], encoding="utf-8", newline="") as f:
    dev_rows = list(csv.DictReader(f))
  truth = np.array([[n in row["label"].split("|") for n in names]
                    for row in dev_rows])
  tp = np.sum(chosen & truth)
  micro = 2 * tp / (2 * tp + np.sum(chosen & ~truth) + np.sum(~chosen & truth))
  assert results["micro_f1"] == pytest.approx(micro)
  assert kit.read_json(out / "labels.json")["threshold"] == 0.4
  serving = exports.load_saved_model(str(export_dir)).signatures[
      "serving_default"]
  texts = [row["text"] for row in dev_rows[:8]]
  got = serving(sentences=tf.constant(texts))["labels"].numpy()
  assert [[n.decode() for n in row if n] for row in got] == [
      r["labels"] for r in records[:8]]


@pytest.mark.slow
def test_stopped_after_a_checkpoint_and_rerun_equals_uninterrupted(
    data, tmp_path, monkeypatch):
  """A run stopped right after ckpt-10 (as a kill would), then rerun with
  the same settings, ends with an uninterrupted run's weights."""
  def settings(out):
    return kit.run_settings(out, data["config"], data["spm"], train_step=20,
                            warmup_step=2, save_checkpoints_steps=10,
                            iterations_per_loop=5, train_batch_size=16,
                            do_eval=False)
  options = kit.options(train_file=data["classes_train"])
  own_data.run_own_data(settings(tmp_path / "reference"), options)

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
    own_data.run_own_data(settings(tmp_path / "killed"), options)
  assert tf.train.latest_checkpoint(str(tmp_path / "killed")).endswith(
      "ckpt-10")
  assert os.path.exists(tmp_path / "killed" / "labels.json")
  monkeypatch.undo()
  own_data.run_own_data(settings(tmp_path / "killed"), options)
  reference = tf.train.load_checkpoint(str(tmp_path / "reference"))
  resumed = tf.train.load_checkpoint(str(tmp_path / "killed"))
  names = [n for n, dtype in reference.get_variable_to_dtype_map().items()
           if n.startswith("model/") and dtype.is_floating]
  assert len(names) > 10
  for name in names:
    np.testing.assert_allclose(resumed.get_tensor(name),
                               reference.get_tensor(name), atol=1e-5,
                               err_msg=name)
  # A rerun on another training file would change the labels: refused.
  other = kit.write_csv(tmp_path / "other.csv",
                        [{"text": "a", "label": "x"}], ("text", "label"))
  with pytest.raises(UserInputError, match=r"other.csv gives labels \['x'\] "
                     r"\(classification\), but .*labels.json"):
    own_data.run_own_data(settings(tmp_path / "killed"),
                          kit.options(train_file=other))


def test_command_line_bad_input_is_one_line_and_writes_nothing(
    data, tmp_path, capsys):
  bad = tmp_path / "bad.csv"
  bad.write_text("text,label\na,x\nb,y,z\n", encoding="utf-8")
  dev = tmp_path / "dev.csv"
  dev.write_text("text,label\na,fruit\nb,never\n", encoding="utf-8")
  common = (f"--albert_config_file={data['config']}",
            f"--spm_model_file={data['spm']}", "--do_train",
            "--max_seq_length=32")
  cases = {
      "wrong field count": (
          (f"--train_file={bad}",),
          rf"^error: {bad}:3: expected 2 comma-separated fields"),
      "unseen dev label": (
          (f"--train_file={data['classes_train']}", f"--dev_file={dev}",
           "--do_eval"),
          rf"^error: {dev}:3: label 'never' is not in the training labels "
          r"\(fruit, music, volcano\)"),
      "GLUE and own data": (
          (f"--train_file={bad}", "--task_name=SST-2"),
          "^error: give --task_name / --data_dir .* not both"),
      "no file for --do_eval": (
          (f"--train_file={data['classes_train']}", "--do_eval"),
          "^error: --do_eval needs --dev_file"),
  }
  import re
  for name, (args, pattern) in cases.items():
    out = tmp_path / name.replace(" ", "_")
    status = kit.run_tool("run_classifier", *common, *args,
                          f"--output_dir={out}")
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert status == 1 and len(errors) == 1, (name, err[-2000:])
    assert re.search(pattern, errors[0]), (name, errors[0])
    assert not out.exists(), name


def test_recipe_of_the_closest_glue_task_keeps_its_epochs():
  from albert_tf.training.finetuning import own_data_settings as settings
  cases = {("regression", False, 500): "STS-B",
           ("classification", False, 19_999): "CoLA",
           ("multi_label", False, 20_000): "SST-2",
           ("classification", True, 5_000): "MRPC",
           ("classification", True, 20_000): "QNLI",
           ("classification", True, 100_000): "MNLI"}
  for (task_type, pair, n), name in cases.items():
    assert settings.closest_glue_task(task_type, pair, n) == name
  # CoLA: 5336 steps x 16 / 8551 records = 9.98 epochs; warmup 320 / 5336.
  recipe, line = settings.own_data_recipe("classification", False, 2696)
  assert recipe["train_step"] == int(np.ceil(5336 * 16 / 8551 * 2696 / 16))
  assert recipe["train_step"] == 1683
  assert recipe["warmup_step"] == int(320 / 5336 * 1683)
  assert (recipe["learning_rate"], recipe["train_batch_size"]) == (1e-5, 16)
  assert "recipe of CoLA" in line and "10.0 epochs x 2696 records / batch " \
      "16" in line
  # A batch size the user set: the same epochs in fewer, larger steps.
  recipe, _ = settings.own_data_recipe("classification", False, 2696, 64)
  assert recipe["train_step"] == int(np.ceil(5336 * 16 / 8551 * 2696 / 64))
  recipe, line = settings.multiple_choice_recipe(1000)
  assert recipe["train_step"] == int(np.ceil(12000 * 32 / 87866 * 1000 / 32))
  assert "recipe of RACE" in line
