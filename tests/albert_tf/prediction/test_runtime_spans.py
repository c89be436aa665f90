"""tools.predict --runtime=onnx|litert on NER and SQuAD (v1.1 and both
v2.0 kinds) exports: the entities and answers, with their character
offsets, equal the SavedModel runtime's row by row (tags, answer texts and
offsets exactly, scores to 1e-4), in this process and on Beam's
DirectRunner with 2 worker threads (LiteRT's interpreter, not
thread-safe, shared by both)."""

import json
import os
import shutil

import numpy as np
import pytest

from albert_common.errors import UserInputError
from albert_tf.prediction import beam_pipeline
from albert_tf.prediction import runner
from albert_tf.prediction.options import PredictOptions
from tests.albert_tf.prediction.test_predict_exports import _texts
from tests.albert_tf.prediction.test_predict_exports import _write

pytestmark = pytest.mark.slow  # conversions (tf2onnx, LiteRT) of 2 exports

TWO_THREADS = ["--direct_num_workers=2",
               "--direct_running_mode=multi_threading"]


@pytest.fixture(scope="module")
def converted(prediction_exports, tmp_path_factory):
  """{kind: a copy of the export holding onnx/model.onnx and
  litert/model.tflite} for ner and squad."""
  from albert_tf.exports.litert.converter import export_tflite
  from albert_tf.exports.onnx.converter import export_onnx
  root = tmp_path_factory.mktemp("converted_spans")
  folders = {}
  for kind in ("ner", "squad"):
    folder = folders[kind] = str(root / kind)
    shutil.copytree(prediction_exports[kind], folder)
    export_onnx(folder, os.path.join(folder, "onnx", "model.onnx"))
    export_tflite(folder, os.path.join(folder, "litert", "model.tflite"),
                  seq_length=64, batch_size=4)
  return folders


def _input_file(folder, english_corpus, kind, n=23):
  """23 rows: texts of 1-60 words (some past the export's 64 tokens:
  several windows), some with accents and CJK characters."""
  texts = _texts(english_corpus, n, seed=7)
  if kind == "ner":
    records = [{"id": f"r{i}", "text": t} for i, t in enumerate(texts)]
  else:  # a context, and a question made of another row's words
    records = [{"id": f"r{i}", "context": t, "question": texts[-1 - i][:40]}
               for i, t in enumerate(texts)]
  return _write(folder, f"{kind}.jsonl", records), texts


def _rows(folder):
  rows = [json.loads(line) for name in sorted(os.listdir(folder))
          if name.startswith("part")
          for line in open(os.path.join(folder, name), encoding="utf-8")]
  return sorted(rows, key=lambda r: int(r["id"][1:]))


def _options(model, path, output_dir, runtime, **kwargs):
  return PredictOptions(model=model, input_file=path, output_dir=output_dir,
                        id_column="id", rows_per_shard=10, batch_size=4,
                        runtime=runtime, **kwargs)


def _assert_same_rows(kind, got, want):
  """Tags, texts and offsets exactly; scores to 1e-4."""
  assert [r["id"] for r in got] == [r["id"] for r in want]
  if kind == "ner":
    spans = [[(e["label"], e["start"], e["end"], e["text"])
              for e in r["entities"]] for r in got]
    assert spans == [[(e["label"], e["start"], e["end"], e["text"])
                      for e in r["entities"]] for r in want]
    np.testing.assert_allclose(
        [e["score"] for r in got for e in r["entities"]],
        [e["score"] for r in want for e in r["entities"]], atol=1e-4)
    assert sum(map(len, spans)) > 0  # the comparison covered entities
  else:
    assert [(r["answer"], r["start"], r["end"]) for r in got] == [
        (r["answer"], r["start"], r["end"]) for r in want]
    np.testing.assert_allclose([r["score"] for r in got],
                               [r["score"] for r in want], atol=1e-4)
    assert sum(r["start"] >= 0 for r in got) > 0


CASES = [(kind, runtime) for kind in ("ner", "squad")
         for runtime in ("onnx", "litert")]


@pytest.mark.parametrize("kind,runtime", CASES)
def test_converted_spans_equal_the_savedmodels(kind, runtime, converted,
                                               english_corpus, tmp_path):
  model = converted[kind]
  path, texts = _input_file(str(tmp_path), english_corpus, kind)
  runner.predict_files(_options(model, path, str(tmp_path / "savedmodel"),
                                "savedmodel"))
  manifest = runner.predict_files(_options(model, path,
                                           str(tmp_path / runtime), runtime))
  assert manifest["kind"] == kind and manifest["rows"] == len(texts)
  want = _rows(str(tmp_path / "savedmodel"))
  got = _rows(str(tmp_path / runtime))
  _assert_same_rows(kind, got, want)
  # The offsets point into the input text.
  for row, text in zip(got, texts):
    for e in row.get("entities", ()):
      assert text[e["start"]:e["end"]] == e["text"]
    if row.get("start", -1) >= 0:
      assert text[row["start"]:row["end"]] == row["answer"]


@pytest.mark.parametrize("kind,runtime", [("ner", "onnx"),
                                          ("squad", "litert")])
def test_beam_serves_the_converted_file_as_in_process(
    kind, runtime, converted, english_corpus, tmp_path):
  model = converted[kind]
  path, _ = _input_file(str(tmp_path), english_corpus, kind)
  local = runner.predict_files(_options(model, path,
                                        str(tmp_path / "savedmodel"),
                                        "savedmodel"))
  manifest = beam_pipeline.predict_files_beam(
      _options(model, path, str(tmp_path / "beam"), runtime,
               runner="DirectRunner"), TWO_THREADS)
  assert manifest == local
  _assert_same_rows(kind, _rows(str(tmp_path / "beam")),
                    _rows(str(tmp_path / "savedmodel")))


def test_an_export_without_its_windowing_record_is_one_line(
    converted, english_corpus, tmp_path):
  model = str(tmp_path / "old")
  shutil.copytree(converted["ner"], model)
  os.remove(os.path.join(model, "onnx", "ner_settings.json"))
  path, _ = _input_file(str(tmp_path), english_corpus, "ner", n=2)
  with pytest.raises(UserInputError) as error:
    runner.predict_files(_options(model, path, str(tmp_path / "out"),
                                  "onnx"))
  assert str(error.value) == (
      f"{model}/onnx/ner_settings.json does not exist: --model={model} "
      "does not record its doc_stride (an export written before exports "
      "recorded it); export it again and make the file again, or use "
      "--runtime=savedmodel")
  assert not os.path.exists(tmp_path / "out")


@pytest.fixture(scope="module")
def squad_v2(spm_model, tmp_path_factory):
  """{name: a SQuAD v2.0 export with onnx/model.onnx}: `cls` (a span
  labeler, [CLS] null score), `beam` (the answer-class model), both at
  null_score_diff_threshold 0.0 (on these random weights some questions
  are answered, some not)."""
  import tf_keras

  from albert_tf import exports
  from albert_tf.config import AlbertConfig
  from albert_tf.exports.onnx.converter import export_onnx
  from albert_tf.models.albert_span_labeler import AlbertSpanLabeler
  from albert_tf.models.albert_squad_v2 import AlbertSquadV2
  from albert_tf.networks.albert_encoder import AlbertEncoder
  config = AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=64,
                        initializer_range=0.2)
  tf_keras.utils.set_random_seed(11)
  root = tmp_path_factory.mktemp("squad_v2")
  models = {"cls": (AlbertSpanLabeler(AlbertEncoder(config)), False),
            "beam": (AlbertSquadV2(AlbertEncoder(config), start_n_top=3,
                                   end_n_top=3, dropout_rate=0.0), True)}
  folders = {}
  for name, (model, beam) in models.items():
    folder = folders[name] = str(root / name)
    exports.export_squad(model, folder, spm_model, 64, doc_stride=16,
                         max_query_length=12, n_best_size=5,
                         max_answer_length=10, beam=beam, version_2=True,
                         threshold=0.0)
    export_onnx(folder, os.path.join(folder, "onnx", "model.onnx"))
  return folders


@pytest.mark.parametrize("name", ["cls", "beam"])
def test_squad_v2_answers_and_abstentions_equal_the_savedmodels(
    name, squad_v2, english_corpus, tmp_path):
  model = squad_v2[name]
  path, _ = _input_file(str(tmp_path), english_corpus, "squad")
  for runtime in ("savedmodel", "onnx"):
    runner.predict_files(_options(model, path, str(tmp_path / runtime),
                                  runtime))
  want = _rows(str(tmp_path / "savedmodel"))
  got = _rows(str(tmp_path / "onnx"))
  assert [(r["answer"], r["start"], r["end"]) for r in got] == [
      (r["answer"], r["start"], r["end"]) for r in want]
  for key in ("score", "no_answer_probability"):
    np.testing.assert_allclose([r[key] for r in got],
                               [r[key] for r in want], atol=1e-4)
  # Both kinds of rows compared: answers and abstentions ("", -1, -1);
  # measured: cls 22 of 23 answered, beam 14 of 23.
  answered = sum(r["start"] >= 0 for r in want)
  assert 0 < answered < len(want)
