"""The raw-text SavedModel of an early-exit classifier: serving_default and
token_ids exit at the export's patience and return exit_layer; the
`early_exit` signature takes the patience per request; a classifier without
early exit exports the same signatures and outputs as before."""

import types

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from albert_tf import AlbertConfig
from albert_tf import AlbertEncoder
from albert_tf import exports
from albert_tf import saved_model_inspection
from albert_tf.exports.serving import classifier as classifier_export
from albert_tf.models import AlbertClassifier
from albert_tf.models import AlbertEarlyExitClassifier
from albert_tf.networks import early_exit_encoder

LAYERS = 4
SEQ = 16
SENTENCES = ["the banana was ripe", "a guitar played all night long",
             "lava flowed", "bananas and guitars and lava on a sunny day",
             "nothing", "the old man sold fruit at the market"]


def _config():
  return AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
                      num_hidden_layers=LAYERS, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=SEQ,
                      initializer_range=0.2)


def _ids(batch, seed=0):
  rng = np.random.default_rng(seed)
  lengths = rng.integers(3, SEQ + 1, batch)
  mask = (np.arange(SEQ)[None, :] < lengths[:, None]).astype(np.int32)
  ids = rng.integers(5, 2000, (batch, SEQ)).astype(np.int32) * mask
  return dict(input_word_ids=ids, input_mask=mask,
              input_type_ids=np.zeros((batch, SEQ), np.int32))


@pytest.fixture(scope="module")
def early_model():
  """Random weights, heads that centre the pooled vectors (mixed exits)."""
  tf_keras.utils.set_random_seed(5)
  model = AlbertEarlyExitClassifier(AlbertEncoder(_config()), 3)
  rng = np.random.default_rng(5)
  shape = model.head_kernel.shape
  kernel = 4.0 * (rng.normal(size=shape[1:]) + 0.6 * rng.normal(size=shape))
  pooled = early_exit_encoder.per_layer_pooled(
      model.encoder, _ids(32), training=False).numpy()
  model.head_kernel.assign(kernel.astype(np.float32))
  model.head_bias.assign(
      -np.einsum("lh,lhc->lc", pooled.mean(0), kernel).astype(np.float32))
  return model


@pytest.fixture(scope="module")
def early_export(early_model, spm_model, tmp_path_factory):
  path = str(tmp_path_factory.mktemp("early_exit_export") / "export")
  classifier_export.export_classifier(
      early_model, path, spm_model, ["a", "b", "c"], 1, SEQ,
      exit_patience=1)
  loaded = exports.load_saved_model(path)
  return types.SimpleNamespace(export_dir=path, loaded=loaded,
                               signatures=loaded.signatures)


def test_signatures_exit_at_the_patience_and_say_where(early_model,
                                                       early_export):
  signatures = early_export.signatures
  assert set(signatures) == {"serving_default", "token_ids", "early_exit",
                             "token_ids_full_depth", "token_ids_unbranched"}
  # What export_onnx --exit_loop asks of a model, read without TensorFlow.
  assert saved_model_inspection.has_exit_loop(early_export.export_dir)
  inputs = _ids(32, seed=1)
  got = signatures["token_ids"](**{k: tf.constant(v)
                                   for k, v in inputs.items()})
  want = early_model.early_exit(inputs, 1)
  np.testing.assert_array_equal(got["exit_layer"].numpy(),
                                want["exit_layer"].numpy())
  assert len(set(want["exit_layer"].numpy().tolist())) >= 2
  np.testing.assert_allclose(got["logits"].numpy(), want["logits"].numpy(),
                             rtol=1e-5, atol=1e-5)
  # LiteRT's form of the loop: the same exits.
  unbranched = signatures["token_ids_unbranched"](**{
      k: tf.constant(v) for k, v in inputs.items()})
  np.testing.assert_array_equal(unbranched["exit_layer"].numpy(),
                                want["exit_layer"].numpy())
  np.testing.assert_allclose(unbranched["logits"].numpy(),
                             want["logits"].numpy(), rtol=1e-5, atol=1e-5)
  text = tf.constant(SENTENCES)
  default = signatures["serving_default"](sentences=text)
  assert set(default) == {"logits", "probabilities", "label_ids", "labels",
                          "exit_layer"}
  per_request = signatures["early_exit"](sentences=text,
                                         exit_patience=tf.constant(1))
  for key in ("exit_layer", "label_ids"):
    np.testing.assert_array_equal(per_request[key].numpy(),
                                  default[key].numpy())
  full = signatures["early_exit"](sentences=text,
                                  exit_patience=tf.constant(0))
  np.testing.assert_array_equal(full["exit_layer"].numpy(),
                                [LAYERS] * len(SENTENCES))


def test_patience_0_is_the_full_depth_classifier(early_model, early_export):
  inputs = _ids(8, seed=2)
  full = AlbertClassifier(early_model.encoder, 3)
  full.classifier.dense.kernel.assign(early_model.head_kernel[-1])
  full.classifier.dense.bias.assign(early_model.head_bias[-1])
  want = full(inputs, training=False)["logits"].numpy()
  got = tf.function(lambda x: early_model.early_exit(x, 0))(inputs)
  np.testing.assert_allclose(got["logits"].numpy(), want, atol=1e-5)
  # The export's early_exit signature at patience 0, on raw text: the
  # full-depth classifier on the export's own token ids.
  text = tf.constant(SENTENCES)
  preprocessor = early_export.loaded.preprocessor
  ids = preprocessor.bert_pack_inputs([preprocessor.tokenize(text)])
  want = full(ids, training=False)["logits"].numpy()
  got = early_export.signatures["early_exit"](sentences=text,
                                              exit_patience=tf.constant(0))
  # (logits up to ~10 here: 1e-5 of them)
  np.testing.assert_allclose(got["logits"].numpy(), want, rtol=1e-5,
                             atol=1e-5)


def test_without_early_exit_the_export_is_as_before(spm_model, tmp_path):
  tf_keras.utils.set_random_seed(0)
  model = AlbertClassifier(AlbertEncoder(_config()), 2)
  path = str(tmp_path / "plain")
  classifier_export.export_classifier(model, path, spm_model, ["x", "y"], 1,
                                      SEQ)
  loaded = exports.load_saved_model(path)
  assert set(loaded.signatures) == {"serving_default", "token_ids"}
  assert not saved_model_inspection.has_exit_loop(path)
  from albert_common.errors import UserInputError
  from albert_tf.exports.onnx import options as onnx_options
  out = tmp_path / "onnx" / "m.onnx"
  with pytest.raises(UserInputError, match=(
      f"^--exit_loop: --saved_model={path} has no exit loop")):
    onnx_options.check_onnx_request(path, str(out), 17, "none",
                                    exit_loop=True)
  assert not out.parent.exists()
  got = loaded.signatures["serving_default"](
      sentences=tf.constant(SENTENCES[:2]))
  assert set(got) == {"logits", "probabilities", "label_ids", "labels"}
  ids = loaded.signatures["token_ids"](**{
      k: tf.constant(v) for k, v in _ids(2).items()})
  assert set(ids) == {"logits", "probabilities"}


def _saved_model_outputs(export, inputs):
  outputs = export.signatures["token_ids"](**{
      k: tf.constant(v) for k, v in inputs.items()})
  return {k: v.numpy() for k, v in outputs.items()}


def _analysis(path, capsys) -> str:
  """LiteRT's analyzer text of every subgraph of a file."""
  capsys.readouterr()
  tf.lite.experimental.Analyzer.analyze(model_path=path)
  return capsys.readouterr().out


def _litert_against_the_saved_model(export, tmp_path, capsys, quantize,
                                    batch):
  """Converts the export (export_tflite: the token-ids signature's
  unbranched loop) and returns the share of 32 examples with the
  SavedModel's exit layer and label, and both outputs."""
  from albert_tf.exports.litert import converter
  from albert_tf.exports.litert.interpreter import LiteRTModel
  inputs = _ids(32, seed=3)
  want = _saved_model_outputs(export, inputs)
  out = str(tmp_path / f"model_{quantize}_{batch}.tflite")
  converter.export_tflite(export.export_dir, out, seq_length=SEQ,
                          batch_size=batch, quantize=quantize)
  model = LiteRTModel(open(out, "rb").read())
  assert "WHILE" in model.op_names()
  assert " IF(" not in _analysis(out, capsys)
  got = model(inputs)
  same_exit = np.mean(got["exit_layer"] == want["exit_layer"])
  same_label = np.mean(got["logits"].argmax(-1) == want["logits"].argmax(-1))
  return same_exit, same_label, got, want


def test_litert_file_carries_the_loop(early_export, tmp_path, capsys):
  """export_tflite converts the token-ids signature's unbranched loop
  (token_ids_unbranched: a WHILE without IF, which LiteRT would prepare
  again on each call): float32 at batch 8 gives the SavedModel's exit
  layers and labels, logits to 1e-4."""
  same_exit, same_label, got, want = _litert_against_the_saved_model(
      early_export, tmp_path, capsys, "none", 8)
  assert len(set(want["exit_layer"].tolist())) >= 2  # mixed exits
  assert same_exit == 1.0 and same_label == 1.0
  np.testing.assert_allclose(got["logits"], want["logits"], atol=1e-4)


@pytest.mark.slow
def test_litert_loop_at_batch_1_and_in_int8(early_export, tmp_path, capsys):
  """The same file at batch 1 (float32: exits, labels, logits to 1e-4) and
  dynamic int8 at batch 8: the same exits and labels on most examples
  (its weights are rounded: a crafted model with large heads, logits
  differ by ~0.5)."""
  same_exit, same_label, got, want = _litert_against_the_saved_model(
      early_export, tmp_path, capsys, "none", 1)
  assert same_exit == 1.0 and same_label == 1.0
  np.testing.assert_allclose(got["logits"], want["logits"], atol=1e-4)
  same_exit, same_label, _, _ = _litert_against_the_saved_model(
      early_export, tmp_path, capsys, "dynamic_int8", 8)
  assert same_exit >= 0.8 and same_label >= 0.8, (same_exit, same_label)


def test_onnx_loop_converts_and_the_file_is_full_depth(early_export,
                                                       tmp_path):
  """export_onnx writes the full-depth graph by default (token_ids_full_
  depth: ONNX Runtime runs the loop slower than full depth when it saves
  few layers, docs/early-exit.md); with exit_loop the loop, an ONNX Loop
  that gives the SavedModel's exit layers and logits (1e-4)."""
  import onnx

  from albert_tf.exports.onnx import converter
  from albert_tf.exports.onnx.runtime import OnnxModel
  looped = str(tmp_path / "loop.onnx")
  converter.export_onnx(early_export.export_dir, looped, exit_loop=True)
  assert "Loop" in {n.op_type for n in onnx.load(looped).graph.node}
  loop_model = OnnxModel(open(looped, "rb").read())
  out = str(tmp_path / "model.onnx")
  converter.export_onnx(early_export.export_dir, out)
  assert "Loop" not in {n.op_type for n in onnx.load(out).graph.node}
  file_model = OnnxModel(open(out, "rb").read())
  full = early_export.signatures["token_ids_full_depth"]
  for batch in (1, 32):
    inputs = _ids(batch, seed=4)
    want = _saved_model_outputs(early_export, inputs)
    got = loop_model(inputs)
    np.testing.assert_array_equal(got["exit_layer"], want["exit_layer"])
    np.testing.assert_allclose(got["logits"], want["logits"], atol=1e-4)
    want_full = {k: v.numpy() for k, v in full(**{
        k: tf.constant(v) for k, v in inputs.items()}).items()}
    got_full = file_model(inputs)
    np.testing.assert_array_equal(got_full["exit_layer"], [LAYERS] * batch)
    np.testing.assert_allclose(got_full["logits"], want_full["logits"],
                               atol=1e-4)


@pytest.mark.slow
def test_patience_0_files_are_the_full_depth_classifier(early_model,
                                                        spm_model, tmp_path):
  """An export at patience 0: its LiteRT float32 file (the WHILE loop run
  to L) and its ONNX file (written at full depth) give the full-depth
  AlbertClassifier's logits with the same weights, to 1e-5, and exit
  layer L for every example."""
  from albert_tf.exports.litert import converter as litert
  from albert_tf.exports.litert.interpreter import LiteRTModel
  from albert_tf.exports.onnx import converter as onnx_converter
  from albert_tf.exports.onnx.runtime import OnnxModel
  path = str(tmp_path / "export")
  classifier_export.export_classifier(
      early_model, path, spm_model, ["a", "b", "c"], 1, SEQ,
      exit_patience=0)
  full = AlbertClassifier(early_model.encoder, 3)
  full.classifier.dense.kernel.assign(early_model.head_kernel[-1])
  full.classifier.dense.bias.assign(early_model.head_bias[-1])
  inputs = _ids(8, seed=6)
  want = full(inputs, training=False)["logits"].numpy()
  tflite = str(tmp_path / "model.tflite")
  litert.export_tflite(path, tflite, seq_length=SEQ, batch_size=8)
  onnx_file = str(tmp_path / "model.onnx")
  onnx_converter.export_onnx(path, onnx_file)
  for name, model in (("LiteRT", LiteRTModel(open(tflite, "rb").read())),
                      ("ONNX", OnnxModel(open(onnx_file, "rb").read()))):
    got = model(inputs)
    np.testing.assert_array_equal(got["exit_layer"], [LAYERS] * 8,
                                  err_msg=name)
    # (logits up to ~10 here: 1e-5 of them)
    np.testing.assert_allclose(got["logits"], want, rtol=1e-5, atol=1e-5,
                               err_msg=name)
