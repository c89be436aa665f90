"""LiteRT length buckets: one file, a signature per bucket, the weights
stored once; each bucket's outputs equal the full-length ones at the real
positions; the runner and the report call the smallest bucket that holds a
request."""

import os

import numpy as np
import pytest
import tensorflow as tf

from albert_common.errors import UserInputError
from albert_tf import exports
from albert_tf.config import AlbertConfig
from albert_tf.exports import serving_kinds
from albert_tf.exports import token_ids
from albert_tf.exports.litert import converter as tflite
from albert_tf.exports.litert import report as tflite_report
from albert_tf.exports.litert.interpreter import LiteRTModel
from albert_tf.exports.litert.runner import TextRunner
from albert_tf.models.albert_classifier import AlbertClassifier
from albert_tf.models.albert_span_labeler import AlbertSpanLabeler
from albert_tf.networks.albert_encoder import AlbertEncoder

SEQ = 32
BUCKETS = (8, 16, 32)
# A word table large enough that the weights, not the ops of the small
# layers, make the file, as in real models (ALBERT-base: 0.5% float32,
# 3.6% int8 for the two extra signatures of auto at 128).
CONFIG = AlbertConfig(vocab_size=30000, embedding_size=64, hidden_size=48,
                      num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=64, max_position_embeddings=SEQ)


def _randomize(model, seed):
  rng = np.random.default_rng(seed)
  for v in model.weights:
    v.assign(rng.normal(0.0, 0.1, size=v.shape).astype(np.float32))


@pytest.fixture(scope="module")
def saved_models(tmp_path_factory, spm_model):
  """Encoder, classifier and SQuAD exports of CONFIG, random weights."""
  root = tmp_path_factory.mktemp("buckets")
  encoder = AlbertEncoder(CONFIG)
  _randomize(encoder, 0)
  checkpoint = tf.train.Checkpoint(encoder=encoder).write(
      str(root / "ckpt" / "ckpt"))
  exports.export_savedmodel(CONFIG, checkpoint, spm_model,
                            str(root / "export"), seq_length=SEQ)
  classifier = AlbertClassifier(AlbertEncoder(CONFIG), 3)
  _randomize(classifier, 1)
  span = AlbertSpanLabeler(AlbertEncoder(CONFIG))
  _randomize(span, 2)
  return {
      "encoder": str(root / "export" / "encoder"),
      "classifier": exports.export_classifier(
          classifier, str(root / "glue"), spm_model, ["a", "b", "c"], 1,
          SEQ),
      "squad": exports.export_squad(
          span, str(root / "squad"), spm_model, SEQ, doc_stride=8,
          max_query_length=8, n_best_size=5, max_answer_length=6,
          beam=False, version_2=False)}


@pytest.fixture(scope="module")
def files(saved_models, tmp_path_factory):
  """The bucketed float32 file of each export: {kind: (path, description)}."""
  root = tmp_path_factory.mktemp("bucket_files")
  written = {}
  for kind, saved_model in saved_models.items():
    path = str(root / kind / f"{kind}.tflite")
    written[kind] = (path, tflite.export_tflite(
        saved_model, path, seq_length=SEQ,
        length_buckets=",".join(map(str, BUCKETS[:-1]))))
  return written


def _inputs(n, seed):
  """Random-token inputs [n, SEQ], lengths 2..SEQ."""
  return serving_kinds.sample_inputs(
      ("input_word_ids", "input_mask", "input_type_ids"), (n, SEQ), 2000,
      n=n, seed=seed, min_length=2)


@pytest.mark.slow
@pytest.mark.parametrize("quantize", ["none", "dynamic_int8"])
def test_one_file_stores_the_weights_once(saved_models, files, tmp_path,
                                         quantize):
  sizes = {}
  for name, buckets in (("one", "none"), ("three", "8,16")):
    if (name, quantize) == ("three", "none"):  # `files`: the same request
      path, described = files["classifier"]
    else:
      path = str(tmp_path / f"{name}.tflite")
      described = tflite.export_tflite(
          saved_models["classifier"], path, seq_length=SEQ,
          quantize=quantize, length_buckets=buckets)
    sizes[name] = described["size_bytes"]
    assert os.path.getsize(path) == sizes[name]
  # Three copies of the weights would triple it.
  assert sizes["three"] < 1.05 * sizes["one"], sizes


@pytest.mark.slow  # the `files` conversions; make test: the report test
def test_a_signature_per_bucket(files):
  path, description = files["classifier"]
  assert description["buckets"] == list(BUCKETS)
  with open(path, "rb") as f:
    model = LiteRTModel(f.read())
  assert sorted(model.interpreter.get_signature_list()) == [
      "seq_16", "seq_8", "serving_default"]
  assert model.buckets == BUCKETS
  assert model.input_shapes["input_mask"] == (1, SEQ)


@pytest.mark.slow  # the `files` conversions; make test: the report test
@pytest.mark.parametrize("kind", ["encoder", "classifier", "squad"])
def test_every_bucket_equals_the_full_length_at_real_positions(
    kind, files, saved_models):
  with open(files[kind][0], "rb") as f:
    model = LiteRTModel(f.read())
  _, function = token_ids.token_ids_function(saved_models[kind])
  inputs = _inputs(12, seed=3)
  full = function(**{k: tf.constant(v) for k, v in inputs.items()})
  for bucket in BUCKETS:
    fits = np.sum(inputs["input_mask"], -1) <= bucket
    assert fits.sum() >= 1, bucket
    runner = model.runners[bucket]
    for i in np.flatnonzero(fits):
      got = runner(**{k: v[i:i + 1, :bucket] for k, v in inputs.items()})
      mask = inputs["input_mask"][i:i + 1, :bucket]
      for name, value in got.items():
        want = full[name].numpy()[i:i + 1]
        if want.ndim >= 2 and want.shape[1] == SEQ:  # one value a position
          want, value = want[:, :bucket][mask > 0], value[mask > 0]
        np.testing.assert_allclose(value, want, atol=1e-4, rtol=0,
                                   err_msg=f"{kind} {name} bucket {bucket}")


@pytest.mark.slow  # the `files` conversions; make test: the report test
def test_the_runner_calls_the_smallest_bucket_that_holds_a_request(files):
  path, description = files["classifier"]
  with open(path, "rb") as f:
    model = LiteRTModel(f.read())
  inputs = _inputs(6, seed=4)
  lengths = np.array([3, 8, 9, 16, 17, 32])
  inputs["input_mask"] = (np.arange(SEQ)[None] < lengths[:, None]).astype(
      np.int32)
  assert [model.bucket_for(m[None]) for m in inputs["input_mask"]] == [
      8, 8, 16, 16, 32, 32]
  # A batch runs at its longest example.
  assert model.bucket_for(inputs["input_mask"][:3]) == 16
  outputs = model(inputs)
  assert dict(model.bucket_calls) == {8: 2, 16: 2, 32: 2}
  assert outputs["logits"].shape == (6, 3)
  # The reference runner packs text at the file's length; the model runs
  # it in the smallest bucket.
  runner = TextRunner(model, description, os.path.dirname(path))
  model.bucket_calls.clear()
  runner.classify(["a short one"])
  assert dict(model.bucket_calls) == {8: 1}


def test_report_and_evaluation_run_in_buckets(saved_models, tmp_path):
  result = tflite_report.export_and_report(
      saved_models["encoder"], str(tmp_path / "encoder.tflite"),
      seq_length=SEQ, length_buckets="8,16", quantize="dynamic_int8")
  assert result["max_difference"] <= 1e-4
  assert "a signature per length bucket 8, 16, 32" in result["lines"][0]
  assert "calls per bucket: 8: " in result["lines"][1]


def test_bad_buckets_are_one_line(saved_models, tmp_path):
  with pytest.raises(UserInputError, match=r"--length_buckets=8,40: .*40"):
    tflite.export_tflite(saved_models["classifier"],
                         str(tmp_path / "m.tflite"), seq_length=SEQ,
                         length_buckets="8,40")
  assert not os.listdir(tmp_path)
