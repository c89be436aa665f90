"""run_classifier on one's own files, the three-class task: it learns far
above chance, with metrics recomputed here from the predictions; the
predictions file agrees with the raw-text export, the LiteRT file and the
ONNX files; the same dev records in every format score the same. The other
tasks, resumed runs and the command line: test_own_data_runs.py."""

import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import exports
from albert_tf.training.finetuning.tasks import own_data
from tests.albert_tf.training.finetuning import own_data_kit as kit


@pytest.fixture(scope="module")
def classes_run(data):
  """The three-class task: 300 steps from random weights, predicted and
  exported."""
  out = data["root"] / "classes_run"
  result = own_data.run_own_data(
      kit.run_settings(out, data["config"], data["spm"], do_predict=True,
                       save_checkpoints_steps=150),
      kit.options(train_file=data["classes_train"],
                  dev_file=data["classes_dev"],
                  test_file=data["classes_test"],
                  export_dir=str(data["root"] / "classes_export")))
  return dict(result, output_dir=str(out))


def _dev_labels(data):
  return [r["label"] for r in data["classes"]["dev"]]


@pytest.mark.slow
def test_multi_class_task_learns_and_metrics_match_a_count(data,
                                                          classes_run):
  out = classes_run["output_dir"]
  results = kit.read_json(os.path.join(out, "eval_results.json"))
  assert results["accuracy"] > 0.85  # chance: 1/3
  assert kit.read_json(os.path.join(out, "labels.json")) == {
      "task_type": "classification", "labels": ["fruit", "music",
                                                "volcano"]}
  predicted = [r["label"] for r in kit.read_jsonl(
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
  records = kit.read_jsonl(os.path.join(classes_run["output_dir"],
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
  assert kit.read_json(labels_asset)["labels"] == ["fruit", "music", "volcano"]


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
  status = kit.run_tool("export_onnx",
                        f"--saved_model={classes_run['export_dir']}",
                        f"--output_file={out}", "--quantize=dynamic_int8",
                        f"--verify_seq_length={kit.SEQ}",
                        f"--eval_data={data['classes_dev']}")
  printed = capsys.readouterr()
  assert status == 0, printed.err[-2000:]
  rows = data["classes"]["dev"]
  description = kit.read_json(tmp_path / "onnx" / "tickets.json")
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
  status = kit.run_tool("export_onnx",
                        f"--saved_model={classes_run['export_dir']}",
                        f"--output_file={failed}", f"--eval_data={bad}")
  assert status == 1
  assert capsys.readouterr().err.strip() == (
      f"error: {bad}:1: no column 'text' (--text_a_column); the columns "
      "there: id, words, label")
  assert os.listdir(failed.parent) == []
  assert kit.run_tool("export_onnx",
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
        kit.options(dev_file=data[name]))
    scores[name] = result["eval"]
  for name, values in scores.items():
    assert values == pytest.approx(scores["classes_dev"]), name
  assert scores["classes_dev"]["accuracy"] == pytest.approx(
      classes_run["eval"]["accuracy"])
