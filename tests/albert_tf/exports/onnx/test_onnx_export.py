"""tools.export_onnx: the token-ids signature in onnxruntime equals the
SavedModel (dynamic batch and sequence), dynamic int8 keeps the top class,
the shared layer is stored once, every bad input is one line."""

import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
import tensorflow as tf

from albert_common.errors import UserInputError
from albert_tf import exports
from albert_tf.config import AlbertConfig
from albert_tf.exports import serving_kinds
from albert_tf.exports.onnx import converter
from albert_tf.exports.onnx import report
from albert_tf.exports.onnx.runtime import OnnxModel
from albert_tf.models.albert_multiple_choice import AlbertMultipleChoice
from albert_tf.models.albert_squad_v2 import AlbertSquadV2
from albert_tf.models.albert_token_classifier import AlbertTokenClassifier
from albert_tf.networks.albert_encoder import AlbertEncoder
from data_pipeline.tasks import label_list

ROOT = os.path.abspath(os.path.join(__file__, "../../../../.."))
SEQ = 32
# A word table large enough that the weights, not the names of the ops,
# make the file, as in real models (ALBERT-base: 46.94 MB of ONNX for
# 46.73 MB of float32 weights).
CONFIG = AlbertConfig(vocab_size=16000, embedding_size=32, hidden_size=64,
                      num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=128, max_position_embeddings=SEQ)


def _randomize(model, seed):
  """Every weight random, LayerNorm and biases included (a 1 or a 0 there
  would be folded away by the converter and test nothing)."""
  rng = np.random.default_rng(seed)
  for v in model.weights:
    v.assign(rng.normal(0.0, 0.1, size=v.shape).astype(np.float32))


@pytest.fixture(scope="module")
def encoder_export(tmp_path_factory, spm_model):
  """<export>/encoder and <export>/preprocessor of CONFIG."""
  root = tmp_path_factory.mktemp("onnx_encoder")
  encoder = AlbertEncoder(CONFIG)
  _randomize(encoder, 0)
  checkpoint = tf.train.Checkpoint(encoder=encoder).write(
      str(root / "ckpt" / "ckpt"))
  exports.export_savedmodel(CONFIG, checkpoint, spm_model,
                            str(root / "export"), seq_length=SEQ)
  return str(root / "export")


@pytest.fixture(scope="module")
def encoder_onnx(encoder_export):
  return converter.OnnxConversion(os.path.join(encoder_export, "encoder"))


@pytest.mark.slow  # two more conversions; a hygiene check
def test_conversion_keeps_the_callers_environment(encoder_export,
                                                  monkeypatch):
  """tf2onnx's log setting must not leak TF_CPP_MIN_LOG_LEVEL=2 into the
  environment that later subprocesses inherit."""
  monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "3")
  converter.OnnxConversion(os.path.join(encoder_export, "encoder"))
  assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "3"
  monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL")
  converter.OnnxConversion(os.path.join(encoder_export, "encoder"))
  assert "TF_CPP_MIN_LOG_LEVEL" not in os.environ


def _inputs(spec, batch, seq, seed):
  shape = (batch, *spec.input_shape[1:-1], seq)
  return serving_kinds.sample_inputs(spec.input_names, shape, 2000, n=batch,
                                     seed=seed)


def _equal_to_saved_model(conversion, shapes):
  model = OnnxModel(conversion.serialized())
  for seed, (batch, seq) in enumerate(shapes):
    inputs = _inputs(conversion.spec, batch, seq, seed)
    got = model(inputs)
    want = conversion.saved_model_outputs(inputs)
    assert sorted(got) == sorted(want) == list(conversion.spec.output_names)
    for name in got:
      assert got[name].shape == want[name].shape, name
      if got[name].dtype.kind == "f":
        np.testing.assert_allclose(got[name], want[name], atol=1e-4, rtol=0,
                                   err_msg=name)
      else:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


SHAPES = [(1, SEQ), (3, 11)]  # two batch sizes, two sequence lengths


def test_encoder_equals_the_saved_model(encoder_onnx):
  assert encoder_onnx.spec.kind == "encoder"
  axes = [[d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]
          for v in encoder_onnx.model.graph.input]
  assert axes == [["batch", "sequence"]] * 3
  outputs = {v.name: [d.dim_param or d.dim_value
                      for d in v.type.tensor_type.shape.dim]
             for v in encoder_onnx.model.graph.output}
  assert outputs == {"pooled_output": ["batch", 64],
                     "sequence_output": ["batch", "sequence", 64]}
  _equal_to_saved_model(encoder_onnx, SHAPES + [(3, SEQ), (1, 11)])


def test_the_shared_layer_is_stored_once(encoder_onnx, spm_model, tmp_path):
  size = len(encoder_onnx.serialized())
  weights = encoder_onnx.weight_bytes
  assert 0.95 * weights < size < 1.10 * weights, (size, weights)
  # The layer's kernels appear once among the initializers, not per layer
  # (2 layers here): the query, key, value and output kernels and the
  # pooler's, [H, H] each; one intermediate kernel.
  shapes = [tuple(i.dims) for i in encoder_onnx.model.graph.initializer]
  assert shapes.count((64, 64)) == 5 and shapes.count((64, 128)) == 1


@pytest.mark.slow
def test_fine_tuned_classifier_and_its_int8_variant(keyword_classifier,
                                                    tmp_path):
  """The float32 file equals the SavedModel; int8 keeps the top class of
  the float model on >= 98% of the crafted dev set (which float solves)."""
  from albert_tf.exports.litert.runner import TextRunner
  conversion = converter.OnnxConversion(keyword_classifier["export"])
  assert conversion.spec.kind == "classifier"
  _equal_to_saved_model(conversion, SHAPES + [(3, SEQ), (1, 11)])
  described = converter.export_onnx(
      keyword_classifier["export"], str(tmp_path / "glue_int8.onnx"),
      quantize="dynamic_int8", conversion=conversion)
  assert described["size_bytes"] < 0.6 * len(conversion.serialized())
  packer = TextRunner.__new__(TextRunner)  # its packing, no model
  from data_pipeline.tokenization.sentencepiece_tokenizer import (
    SentencePieceTokenizer,
  )
  with open(tmp_path / "glue_int8.json") as f:
    description = json.load(f)
  packer.tokenizer = SentencePieceTokenizer(
      str(tmp_path / description["vocab_file"]))
  packer.seq_length, packer.labels = SEQ, ["0", "1", "2"]
  texts, labels = keyword_classifier["texts"](300, seed=11)
  inputs = packer.classify_inputs(texts)
  float_logits = OnnxModel(conversion.serialized())(inputs)["logits"]
  int8_logits = OnnxModel(str(tmp_path / "glue_int8.onnx"))(inputs)["logits"]
  assert np.mean(np.argmax(float_logits, -1) == labels) >= 0.9
  agreement = np.mean(np.argmax(float_logits, -1) ==
                      np.argmax(int8_logits, -1))
  assert agreement >= 0.98, agreement
  assert sorted(os.listdir(tmp_path)) == sorted([
      "glue_int8.onnx", "glue_int8.json", "labels.txt",
      "length_buckets.json", description["vocab_file"]])


@pytest.mark.slow
def test_squad_beam_race_and_ner_exports(spm_model, tmp_path):
  """The v2.0 answer-class model (p_mask in, its beam out), RACE ([batch,
  4, sequence] inputs) and NER (a tag per position) convert and agree
  too."""
  beam = AlbertSquadV2(AlbertEncoder(CONFIG), start_n_top=3, end_n_top=3)
  _randomize(beam, 3)
  race = AlbertMultipleChoice(AlbertEncoder(CONFIG))
  _randomize(race, 4)
  ner = AlbertTokenClassifier(AlbertEncoder(CONFIG), 5)
  _randomize(ner, 5)
  tags = label_list.LabelList("token_classification", (
      "B-LOC", "B-PER", "I-LOC", "I-PER", "O"), "IOB2")
  saved = {
      "squad_beam": exports.export_squad(
          beam, str(tmp_path / "squad"), spm_model, SEQ, doc_stride=8,
          max_query_length=8, n_best_size=5, max_answer_length=6,
          beam=True, version_2=True),
      "race": exports.export_race(race, str(tmp_path / "race"), spm_model,
                                  SEQ, max_qa_length=10),
      "token_classification": exports.export_ner(
          ner, str(tmp_path / "ner"), tags, SEQ, doc_stride=8,
          spm_model_file=spm_model)}
  for kind, path in saved.items():
    conversion = converter.OnnxConversion(path)
    assert conversion.spec.kind == kind
    _equal_to_saved_model(conversion, SHAPES)


def test_report_lines(encoder_export, tmp_path):
  result = report.export_and_report(
      os.path.join(encoder_export, "encoder"), str(tmp_path / "e.onnx"),
      verify_seq_length=SEQ, quantize="dynamic_int8")
  assert result["max_difference"] <= 1e-4
  assert 0.5 <= result["agreement"] <= 1.0
  lines = result["lines"]
  assert lines[0].startswith(f"wrote {tmp_path / 'e.onnx'}: encoder, "
                             "opset 17, dynamic int8")
  assert "vs SavedModel: max |difference|" in lines[1]
  assert lines[1].endswith("(ok 0.0001)")
  assert lines[2].startswith("dynamic_int8 vs float32: top-class agreement")
  model = onnx.load(str(tmp_path / "e.onnx"))
  assert any(n.op_type == "MatMulInteger" or n.op_type.startswith(
      "DynamicQuantize") for n in model.graph.node)


def test_bad_inputs_are_one_line(encoder_export, tmp_path):
  out = str(tmp_path / "out" / "m.onnx")
  encoder = os.path.join(encoder_export, "encoder")
  with pytest.raises(UserInputError, match=r"is the preprocessor of an "
                     r"export .* pass .*encoder"):
    converter.export_onnx(os.path.join(encoder_export, "preprocessor"), out)
  with pytest.raises(UserInputError, match=r"is not a SavedModel"):
    converter.export_onnx(str(tmp_path), out)
  with pytest.raises(UserInputError, match=r"--opset=9 is not supported: "
                     r"give one of 13-18"):
    converter.export_onnx(encoder, out, opset=9)
  with pytest.raises(UserInputError, match=r"--quantize=int4 must be one"):
    converter.export_onnx(encoder, out, quantize="int4")
  with pytest.raises(UserInputError, match=r"^--exit_loop: --saved_model="
                     r".* has no exit loop"):
    converter.export_onnx(encoder, out, exit_loop=True)
  blocker = tmp_path / "a_file"
  blocker.write_text("")
  with pytest.raises(UserInputError, match=r"cannot be written"):
    converter.export_onnx(encoder, str(blocker / "m.onnx"))
  assert sorted(os.listdir(tmp_path)) == ["a_file"]


def test_cli_error_is_one_line_and_exit_1(encoder_export, tmp_path):
  done = subprocess.run(
      [sys.executable, "-m", "tools.export_onnx",
       f"--saved_model={os.path.join(encoder_export, 'preprocessor')}",
       f"--output_file={tmp_path / 'm.onnx'}"],
      cwd=ROOT, capture_output=True, text=True, timeout=300,
      env=dict(os.environ, PYTHONPATH=ROOT))
  assert done.returncode == 1
  lines = done.stderr.strip().splitlines()
  assert len(lines) == 1 and lines[0].startswith("error: --saved_model="), (
      done.stderr[-2000:])
  assert not os.listdir(tmp_path)


@pytest.mark.slow
def test_cli_writes_and_reports(encoder_export, tmp_path):
  out = tmp_path / "onnx" / "encoder_int8.onnx"
  done = subprocess.run(
      [sys.executable, "-m", "tools.export_onnx",
       f"--saved_model={os.path.join(encoder_export, 'encoder')}",
       f"--output_file={out}", "--quantize=dynamic_int8",
       f"--verify_seq_length={SEQ}"],
      cwd=ROOT, capture_output=True, text=True, timeout=600,
      env=dict(os.environ, PYTHONPATH=ROOT))
  assert done.returncode == 0, done.stderr[-3000:]
  lines = done.stdout.strip().splitlines()
  assert len(lines) == 3, done.stdout
  assert lines[0].startswith(f"wrote {out}: encoder, opset 17, dynamic int8")
  assert lines[1].endswith("(ok 0.0001)")
  assert lines[2].startswith("dynamic_int8 vs float32: top-class agreement")
  assert OnnxModel(str(out)).output_names == ["pooled_output",
                                              "sequence_output"]
