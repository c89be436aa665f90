"""tools.predict --runtime=onnx|litert: the files made from the export's
SavedModel give its rows (float32: probabilities within 1e-4; int8: the
difference measured and bounded); a runtime the folder lacks is one line
naming the file and the command that makes it."""

import json
import os
import shutil

import numpy as np
import pytest

from albert_common.errors import UserInputError
from albert_tf.prediction import runner
from albert_tf.prediction.options import PredictOptions

pytestmark = pytest.mark.slow  # conversions (tf2onnx, LiteRT) of 5 exports

KINDS = ("classifier", "multi_label", "regression", "multiple_choice",
         "encoder")


@pytest.fixture(scope="module")
def converted(prediction_exports, tmp_path_factory):
  """{name: export folder holding onnx/model.onnx (and for classifier and
  multiple_choice litert/model.tflite)}; classifier_int8: dynamic int8."""
  from albert_tf.exports.litert.converter import export_tflite
  from albert_tf.exports.onnx import converter as onnx_converter
  root = tmp_path_factory.mktemp("converted")
  folders = {}
  for kind in KINDS:
    folder = str(root / kind)
    shutil.copytree(prediction_exports[kind], folder)
    folders[kind] = folder
  folders["classifier_int8"] = str(root / "classifier_int8")
  shutil.copytree(prediction_exports["classifier"],
                  folders["classifier_int8"])
  for kind in KINDS:
    saved = (os.path.join(folders[kind], "encoder") if kind == "encoder"
             else folders[kind])
    conversion = onnx_converter.OnnxConversion(saved)
    onnx_converter.export_onnx(
        saved, os.path.join(folders[kind], "onnx", "model.onnx"),
        conversion=conversion)
    if kind == "classifier":
      onnx_converter.export_onnx(
          saved, os.path.join(folders["classifier_int8"], "onnx",
                              "model.onnx"),
          quantize="dynamic_int8", conversion=conversion)
  export_tflite(folders["classifier"],
                os.path.join(folders["classifier"], "litert", "model.tflite"),
                seq_length=64, batch_size=4, length_buckets="16,32,64")
  export_tflite(folders["multiple_choice"],
                os.path.join(folders["multiple_choice"], "litert",
                             "model.tflite"),
                seq_length=64, batch_size=2, length_buckets="32,64")
  return folders


def _inputs(folder, english_corpus, kind, n=27):
  """An input file for `kind` (texts of 1-60 words: some past 64 tokens)."""
  with open(english_corpus, encoding="utf-8") as f:
    words = f.read().split()[:5000]
  rng = np.random.default_rng(len(kind))

  def text(low, high):
    start = int(rng.integers(len(words) - high))
    return " ".join(words[start:start + int(rng.integers(low, high))])
  records = []
  for i in range(n):
    record = {"id": i, "text": text(1, 60)}
    if kind == "regression":
      record["text_b"] = text(1, 20)
    if kind == "multiple_choice":
      record = {"id": i, "context": text(5, 50), "question": text(2, 8),
                "choices": [text(1, 6) for _ in range(3)]}
    records.append(record)
  path = os.path.join(folder, f"{kind}.jsonl")
  with open(path, "w", encoding="utf-8") as f:
    f.writelines(json.dumps(r) + "\n" for r in records)
  return path


def _predict(model, input_file, output_dir, kind, runtime):
  runner.predict_files(PredictOptions(
      model=model, input_file=input_file, output_dir=output_dir,
      id_column="id", rows_per_shard=10, batch_size=4, runtime=runtime,
      text_b_column="text_b" if kind == "regression" else ""))
  return [json.loads(line) for name in sorted(os.listdir(output_dir))
          if name.startswith("part")
          for line in open(os.path.join(output_dir, name), encoding="utf-8")]


def _values(kind, rows):
  """The rows' numbers, [n, k]."""
  if kind == "regression":
    return np.array([[r["value"]] for r in rows])
  if kind == "encoder":
    return np.array([r["embedding"] for r in rows])
  if kind == "multiple_choice":
    return np.array([r["probabilities"] for r in rows])
  return np.array([[r["probabilities"][k] for k in sorted(r["probabilities"])]
                   for r in rows])


CASES = [(kind, "onnx") for kind in KINDS] + [
    ("classifier", "litert"), ("multiple_choice", "litert")]


@pytest.mark.parametrize("kind,runtime", CASES)
def test_converted_rows_equal_the_savedmodels(kind, runtime, converted,
                                              english_corpus, tmp_path):
  model = converted[kind]
  path = _inputs(str(tmp_path), english_corpus, kind)
  want = _predict(model, path, str(tmp_path / "savedmodel"), kind,
                  "savedmodel")
  got = _predict(model, path, str(tmp_path / runtime), kind, runtime)
  assert [r["id"] for r in got] == [r["id"] for r in want]
  np.testing.assert_allclose(_values(kind, got), _values(kind, want),
                             atol=1e-4)
  for name in ("label", "labels", "choice", "choice_index"):
    if name in want[0]:
      assert [r[name] for r in got] == [r[name] for r in want], name


def test_int8_onnx_within_its_measured_tolerance(converted, english_corpus,
                                                 tmp_path):
  path = _inputs(str(tmp_path), english_corpus, "classifier", n=60)
  want = _predict(converted["classifier"], path, str(tmp_path / "float"),
                  "classifier", "savedmodel")
  got = _predict(converted["classifier_int8"], path, str(tmp_path / "int8"),
                 "classifier", "onnx")
  difference = np.abs(_values("classifier", got) -
                      _values("classifier", want)).max()
  agreement = np.mean([g["label"] == w["label"] for g, w in zip(got, want)])
  print(f"dynamic int8 vs SavedModel: max |probability difference| "
        f"{difference:.2e}, label agreement {agreement:.3f} on 60 rows")
  # A quantized model, not the float one: the rows differ a little.
  assert 0 < difference < 0.05 and agreement >= 0.9


def test_a_missing_runtime_file_is_one_line_naming_the_command(
    prediction_exports, english_corpus, tmp_path):
  path = _inputs(str(tmp_path), english_corpus, "classifier", n=3)
  model = prediction_exports["classifier"]
  for runtime, command in (
      ("onnx", f"python -m tools.export_onnx --saved_model={model} "
               f"--output_file={model}/onnx/model.onnx"),
      ("litert", f"python -m tools.export_tflite --saved_model={model} "
                 f"--output_file={model}/litert/model.tflite "
                 "--seq_length=64 --length_buckets=16,32,64")):
    with pytest.raises(UserInputError) as error:
      runner.predict_files(PredictOptions(
          model=model, input_file=path, runtime=runtime,
          output_dir=str(tmp_path / runtime)))
    name = "model.onnx" if runtime == "onnx" else "model.tflite"
    assert str(error.value) == (
        f"--runtime={runtime}: {model}/{runtime}/{name} does not exist; "
        f"make it with: {command}")
    assert not os.path.exists(tmp_path / runtime)
  ner = prediction_exports["ner"]  # served too (test_runtime_spans.py)
  with pytest.raises(UserInputError) as error:
    runner.predict_files(PredictOptions(
        model=ner, input_file=path, runtime="onnx",
        output_dir=str(tmp_path / "ner")))
  assert str(error.value) == (
      f"--runtime=onnx: {ner}/onnx/model.onnx does not exist; make it "
      f"with: python -m tools.export_onnx --saved_model={ner} "
      f"--output_file={ner}/onnx/model.onnx")
