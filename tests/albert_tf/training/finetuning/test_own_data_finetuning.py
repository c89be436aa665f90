"""run_classifier on one's own files: crafted classification, regression and
multi-label tasks learn far above chance, with metrics recomputed here from
the predictions; the predictions file agrees with the raw-text export and
the LiteRT file; the same dev records in every format score the same; a
run stopped after a checkpoint and rerun ends as an uninterrupted one; the
command line's recipe, results and one-line errors."""

import csv
import json
import os
import shutil

from absl import flags
from absl import logging as absl_logging
import numpy as np
import pytest
import tensorflow as tf

from albert_common.errors import UserInputError
from albert_tf import exports
from albert_tf.training.finetuning import own_data
from albert_tf.training.finetuning import runner as finetuning_runner
from albert_tf.training.finetuning.own_data_settings import OwnDataOptions
from tests.albert_tf.training.finetuning import own_data_kit as kit


def _options(**values):
  return OwnDataOptions.from_flat(**values)


def _read_jsonl(path):
  with open(path, encoding="utf-8") as f:
    return [json.loads(line) for line in f]


def _read_json(path):
  with open(path, encoding="utf-8") as f:
    return json.load(f)


@pytest.fixture(scope="module")
def data(tmp_path_factory, english_corpus, spm_model):
  """The crafted tasks' files and a tiny config."""
  root = tmp_path_factory.mktemp("own_data")
  lines = kit.corpus_lines(english_corpus, 1400)
  train, dev, test = lines[:900], lines[900:1100], lines[1100:1140]
  files = {"root": root, "spm": spm_model,
           "config": kit.tiny_config(root / "albert_config.json"),
           # Three independent sigmoids learn slower than one softmax: H=64.
           "config_64": kit.tiny_config(root / "albert_config_64.json",
                                        hidden_size=64)}
  columns = ("id", "text", "label")
  rows = {"train": kit.classification_rows(train, 1),
          "dev": kit.classification_rows(dev, 2),
          "test": kit.classification_rows(test, 3)}
  files["classes"] = rows
  for split, split_rows in rows.items():
    files[f"classes_{split}"] = kit.write_csv(root / f"tickets_{split}.csv",
                                              split_rows, columns)
  files["classes_dev_tsv"] = kit.write_tsv(root / "dev.tsv", rows["dev"],
                                           columns)
  files["classes_dev_jsonl"] = kit.write_jsonl(root / "dev.jsonl",
                                               rows["dev"])
  files["classes_dev_parquet"] = kit.write_parquet(root / "dev.parquet",
                                                   rows["dev"], columns)
  for split, split_lines, seed in (("train", train, 4), ("dev", dev, 5)):
    files[f"scores_{split}"] = kit.write_jsonl(
        root / f"reviews_{split}.jsonl", kit.regression_rows(split_lines,
                                                             seed))
    tagged = kit.multi_label_rows(split_lines, seed + 2)
    files[f"tags_{split}"] = kit.write_csv(
        root / f"tags_{split}.csv", tagged, columns,
        convert=lambda r: dict(r, label="|".join(r["label"]) or "[]"))
  return files


@pytest.fixture(scope="module")
def classes_run(data):
  """The three-class task: 300 steps from random weights, predicted and
  exported."""
  out = data["root"] / "classes_run"
  result = own_data.run_own_data(
      kit.run_settings(out, data["config"], data["spm"], do_predict=True,
                       save_checkpoints_steps=150),
      _options(train_file=data["classes_train"], dev_file=data["classes_dev"],
               test_file=data["classes_test"],
               export_dir=str(data["root"] / "classes_export")))
  return dict(result, output_dir=str(out))


def _dev_labels(data):
  return [r["label"] for r in data["classes"]["dev"]]


@pytest.mark.slow
def test_multi_class_task_learns_and_metrics_match_a_count(data,
                                                          classes_run):
  out = classes_run["output_dir"]
  results = _read_json(os.path.join(out, "eval_results.json"))
  assert results["accuracy"] > 0.85  # chance: 1/3
  assert _read_json(os.path.join(out, "labels.json")) == {
      "task_type": "classification", "labels": ["fruit", "music",
                                                "volcano"]}
  predicted = [r["label"] for r in _read_jsonl(
      os.path.join(out, "dev_predictions.jsonl"))]
  truth = _dev_labels(data)
  assert results["accuracy"] == pytest.approx(
      np.mean(np.array(predicted) == np.array(truth)))
  f1s = []
  for name in ("fruit", "music", "volcano"):
    tp = sum(p == t == name for p, t in zip(predicted, truth))
    fp = sum(p == name != t for p, t in zip(predicted, truth))
    fn = sum(t == name != p for p, t in zip(predicted, truth))
    f1s.append(2 * tp / (2 * tp + fp + fn))
    assert results[f"f1/{name}"] == pytest.approx(f1s[-1])
    assert results[f"precision/{name}"] == pytest.approx(tp / (tp + fp))
  assert results["macro_f1"] == pytest.approx(np.mean(f1s))
  assert results["mcc"] > 0.75
  assert results == pytest.approx(classes_run["eval"])


@pytest.mark.slow
def test_predictions_file_and_export_agree(data, classes_run):
  records = _read_jsonl(os.path.join(classes_run["output_dir"],
                                     "test_predictions.jsonl"))
  test_rows = data["classes"]["test"]
  assert [r["id"] for r in records] == [r["id"] for r in test_rows]
  assert np.mean([r["label"] == t["label"]
                  for r, t in zip(records, test_rows)]) > 0.8
  serving = exports.load_saved_model(
      classes_run["export_dir"]).signatures["serving_default"]
  got = serving(sentences=tf.constant([r["text"] for r in test_rows]))
  assert [s.decode() for s in got["label"].numpy()] == [
      r["label"] for r in records]
  np.testing.assert_allclose(
      got["probabilities"].numpy(),
      [[r["probabilities"][n] for n in ("fruit", "music", "volcano")]
       for r in records], atol=1e-5)
  labels_asset = os.path.join(classes_run["export_dir"], "assets",
                              "labels.json")
  assert _read_json(labels_asset)["labels"] == ["fruit", "music", "volcano"]


@pytest.mark.slow
def test_litert_file_scores_the_dev_file(data, classes_run, tmp_path):
  """What tools.export_tflite runs (export_and_report) on the own-data
  export, --eval_data = the dev CSV: the accuracy the reference runner's
  label names give, counted here."""
  from albert_tf.exports.litert import report as tflite_report
  from albert_tf.exports.litert.runner import TextRunner
  out = str(tmp_path / "tickets.tflite")
  result = tflite_report.export_and_report(
      classes_run["export_dir"], out, seq_length=kit.SEQ,
      eval_data=data["classes_dev"])
  description = result["description"]
  assert (description["kind"], description["label_list_file"]) == (
      "classifier", "labels.json")
  assert result["max_difference"] <= 1e-4
  rows = data["classes"]["dev"]
  predicted = TextRunner.from_file(out).predict_labels(
      [r["text"] for r in rows])
  accuracy = np.mean([p == r["label"] for p, r in zip(predicted, rows)])
  assert result["metrics"]["none"]["accuracy"] == pytest.approx(accuracy)
  assert accuracy == pytest.approx(classes_run["eval"]["accuracy"],
                                   abs=0.02)


@pytest.mark.slow
def test_onnx_export_scores_the_dev_file(data, classes_run, tmp_path, capsys):
  """tools.export_onnx --quantize=dynamic_int8 --eval_data=<dev CSV> prints
  each variant's accuracy and macro F1, and int8's agreement with float32,
  equal to those counted here from the ONNX files' logits; a bad
  --eval_data is one line, exit 1, and leaves nothing written."""
  from sklearn.metrics import f1_score

  from albert_tf.exports.onnx.runtime import OnnxModel
  from albert_tf.exports.text_runner import TextRunner
  out = tmp_path / "onnx" / "tickets.onnx"
  status = _run_tool("export_onnx",
                     f"--saved_model={classes_run['export_dir']}",
                     f"--output_file={out}", "--quantize=dynamic_int8",
                     f"--verify_seq_length={kit.SEQ}",
                     f"--eval_data={data['classes_dev']}")
  printed = capsys.readouterr()
  assert status == 0, printed.err[-2000:]
  rows = data["classes"]["dev"]
  description = _read_json(tmp_path / "onnx" / "tickets.json")
  packer = TextRunner(None, description, str(tmp_path / "onnx"),
                      seq_length=kit.SEQ)
  inputs = packer.classify_inputs([r["text"] for r in rows])
  names = ["fruit", "music", "volcano"]
  truth = [names.index(r["label"]) for r in rows]
  float_model = OnnxModel(_float32_of(classes_run["export_dir"]))
  predicted = {
      "float32": np.argmax(float_model(inputs)["logits"], -1),
      "dynamic_int8": np.argmax(OnnxModel(str(out))(inputs)["logits"], -1)}
  agreement = np.mean(predicted["float32"] == predicted["dynamic_int8"])
  dev = data["classes_dev"]
  assert (f"dynamic_int8 vs float32: top-class agreement {agreement:.4f} on "
          f"the {len(rows)} inputs of {dev}") in printed.out
  for variant, labels in predicted.items():
    accuracy = np.mean(labels == truth)
    macro_f1 = f1_score(truth, labels, average="macro")
    assert (f"{variant} on {dev}: accuracy={accuracy:.4f}, "
            f"macro_f1={macro_f1:.4f}") in printed.out
  assert np.mean(predicted["float32"] == truth) > 0.9  # chance: 1/3
  # A dev file the model cannot read (no text column): one line, exit 1,
  # no file left.
  bad = tmp_path / "bad.csv"
  bad.write_text("id,words,label\n1,a b,fruit\n", encoding="utf-8")
  failed = tmp_path / "failed" / "m.onnx"
  status = _run_tool("export_onnx",
                     f"--saved_model={classes_run['export_dir']}",
                     f"--output_file={failed}", f"--eval_data={bad}")
  assert status == 1
  assert capsys.readouterr().err.strip() == (
      f"error: {bad}:1: no column 'text' (--text_a_column); the columns "
      "there: id, words, label")
  assert os.listdir(failed.parent) == []
  assert _run_tool("export_onnx",
                   f"--saved_model={classes_run['export_dir']}",
                   f"--output_file={failed}",
                   f"--eval_data={tmp_path / 'missing.csv'}") == 1
  assert capsys.readouterr().err.strip() == (
      f"error: --eval_data={tmp_path / 'missing.csv'} does not exist")


def _float32_of(export_dir):
  """The export's float32 ONNX model, converted here."""
  from albert_tf.exports.onnx.converter import OnnxConversion
  return OnnxConversion(export_dir).serialized("none")


@pytest.mark.slow
def test_same_dev_records_in_every_format_score_the_same(data, classes_run,
                                                        tmp_path):
  """Evaluation-only runs (labels.json read back) of one checkpoint on the
  dev records as CSV, TSV, JSON lines and Parquet."""
  out = str(tmp_path / "run")
  shutil.copytree(classes_run["output_dir"], out)
  scores = {}
  for name in ("classes_dev", "classes_dev_tsv", "classes_dev_jsonl",
               "classes_dev_parquet"):
    result = own_data.run_own_data(
        kit.run_settings(out, data["config"], data["spm"], do_train=False),
        _options(dev_file=data[name]))
    scores[name] = result["eval"]
  for name, values in scores.items():
    assert values == pytest.approx(scores["classes_dev"]), name
  assert scores["classes_dev"]["accuracy"] == pytest.approx(
      classes_run["eval"]["accuracy"])


@pytest.mark.slow
def test_regression_task_learns(data, tmp_path):
  out = tmp_path / "scores"
  result = own_data.run_own_data(
      kit.run_settings(out, data["config"], data["spm"]),
      _options(train_file=data["scores_train"], dev_file=data["scores_dev"],
               export_dir=str(tmp_path / "scores_export")))
  assert result["labels"].task_type == "regression"
  results = result["eval"]
  assert results["pearson"] > 0.9  # chance: 0
  scores = np.array([r["score"] for r in _read_jsonl(
      out / "dev_predictions.jsonl")])
  truth = np.array([r["label"] for r in _read_jsonl(data["scores_dev"])])
  assert results["pearson"] == pytest.approx(np.corrcoef(scores, truth)[0, 1],
                                             abs=1e-6)
  assert results["mse"] == pytest.approx(np.mean((scores - truth) ** 2),
                                         abs=1e-6)
  serving = exports.load_saved_model(str(tmp_path / "scores_export")
                                     ).signatures["serving_default"]
  texts = [r["text"] for r in _read_jsonl(data["scores_dev"])[:8]]
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
  _run_tool("run_classifier", f"--train_file={data['tags_train']}",
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
  results = _read_json(out / "eval_results.json")
  # Chance: every label on gives micro F1 2p / (1 + p), p = 1/2: 2/3; a
  # record's three labels all right by guessing: 1/8. Measured: 0.875 and
  # 0.545.
  assert results["micro_f1"] > 0.8
  assert results["subset_accuracy"] > 0.4
  records = _read_jsonl(out / "dev_predictions.jsonl")
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
  assert _read_json(out / "labels.json")["threshold"] == 0.4
  serving = exports.load_saved_model(str(export_dir)).signatures[
      "serving_default"]
  texts = [row["text"] for row in dev_rows[:8]]
  got = serving(sentences=tf.constant(texts))["labels"].numpy()
  assert [[n.decode() for n in row if n] for row in got] == [
      r["labels"] for r in records[:8]]


def _run_tool(tool, *args):
  """tools.<tool>'s main in this process, as `python -m` would run it;
  returns its exit status (0, or 1 with one "error:" line on stderr)."""
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
  options = _options(train_file=data["classes_train"])
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
                          _options(train_file=other))


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
    status = _run_tool("run_classifier", *common, *args,
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
