"""The encoder's serving form (networks/layer_loop.py, not training in
float32) gives the Keras graph's outputs: in memory for every sharing
mode, and in the exported serving signatures against the layers' path on
the same weights (the old serving functions)."""

import os

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import AlbertConfig
from albert_tf import AlbertEncoder
from albert_tf import exports
from albert_tf.models.albert_classifier import AlbertClassifier
from albert_tf.networks import layer_loop

TOLERANCE = 1e-5


def _randomize(model, seed=0):
  """Every weight random, LayerNorm scales and biases included."""
  rng = np.random.default_rng(seed)
  for v in model.weights:
    v.assign(rng.normal(0.0, 0.1, size=v.shape).astype(np.float32))


def _pair(config, seed=0):
  """(fused encoder, layers-only encoder) with the same random weights."""
  fused = AlbertEncoder(config)
  layers = AlbertEncoder(config, fused_inference=False)
  _randomize(fused, seed)
  layers.set_weights(fused.get_weights())
  return fused, layers


def _max_difference(a, b):
  return max(float(np.max(np.abs(np.asarray(x) - np.asarray(y))))
             for x, y in zip(tf.nest.flatten(a), tf.nest.flatten(b)))


@pytest.mark.parametrize("share,groups,inner,act", [
    ("all", 1, 1, "gelu"),
    # Groups and the partly shared layouts run in make test-all.
    pytest.param("all", 2, 2, "gelu_exact", marks=pytest.mark.slow),
    pytest.param("attention", 1, 1, "relu", marks=pytest.mark.slow),
    pytest.param("ffn", 2, 1, "gelu_new", marks=pytest.mark.slow)])
def test_inference_graph_gives_the_layers_outputs(share, groups, inner, act,
                                                  make_inputs):
  config = AlbertConfig(
      vocab_size=97, embedding_size=16, hidden_size=32, num_hidden_layers=4,
      num_attention_heads=4, intermediate_size=64,
      max_position_embeddings=40, hidden_act=act, share_parameters=share,
      num_hidden_groups=groups, inner_group_num=inner)
  fused, layers = _pair(config)
  inputs = make_inputs(3, 12)
  want = layers(inputs, training=False)
  got = fused(inputs, training=False)
  assert set(got) == set(want)
  assert len(got["encoder_outputs"]) == 4
  assert _max_difference(got, want) <= TOLERANCE
  # In a graph (as every serving signature runs it) and with None.
  traced = tf.function(lambda x: fused(x))(inputs)
  assert _max_difference(traced, want) <= TOLERANCE
  # The last block at [CLS] and some positions only.
  positions = np.array([[1, 3], [2, 5], [0, 1]], np.int32)
  want = layers(inputs, output_positions=positions, training=False)
  got = fused(inputs, output_positions=positions, training=False)
  assert set(got) == {"pooled_output", "sequence_output_at_positions"}
  assert _max_difference(got, want) <= TOLERANCE


def test_training_and_mixed_precision_keep_the_layers(tiny_config):
  encoder = AlbertEncoder(tiny_config)
  inputs = dict(input_mask=tf.ones([1, 4], tf.int32))
  packed = dict(input_mask=tf.ones([1, 4, 4], tf.int32))
  assert layer_loop.serves(encoder, None, inputs)
  assert layer_loop.serves(encoder, False, inputs)
  assert not layer_loop.serves(encoder, True, inputs)
  assert not layer_loop.serves(encoder, False, packed)
  assert not layer_loop.serves(
      AlbertEncoder(tiny_config, dtype="mixed_bfloat16"), False, inputs)
  assert AlbertEncoder.from_config(
      AlbertEncoder(tiny_config, fused_inference=False).get_config()
  ).fused_inference is False


def test_fewer_ops_per_layer(tiny_config):
  """The graph a serving signature runs: fewer nodes than the Keras graph
  (both run shared_block's arithmetic; the serving form builds the mask
  bias once, keeps 2-D rows and gathers the embeddings: 364 vs 431 nodes
  measured)."""
  spec = {name: tf.TensorSpec([None, None], tf.int32, name=name)
          for name in ("input_word_ids", "input_mask", "input_type_ids")}

  def nodes(encoder):
    function = tf.function(lambda x: encoder(x, training=False))
    graph = function.get_concrete_function(spec).graph.as_graph_def()
    return len(graph.node) + sum(len(f.node_def)
                                 for f in graph.library.function)

  fused, layers = _pair(tiny_config)
  assert nodes(fused) < 0.9 * nodes(layers)


@pytest.mark.slow
def test_exported_signatures_give_the_old_outputs(tmp_path, spm_model,
                                                  make_inputs):
  """The encoder export's serving_default and a classifier export's
  token_ids and raw-text signatures against the layers' path."""
  config = AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=32)
  fused, layers = _pair(config, seed=1)
  checkpoint = tf.train.Checkpoint(encoder=fused).write(
      str(tmp_path / "ckpt" / "ckpt"))
  exports.export_savedmodel(config, checkpoint, spm_model,
                            str(tmp_path / "export"), seq_length=32)
  encoder = exports.load_saved_model(str(tmp_path / "export" / "encoder"))
  inputs = make_inputs(2, 20, 2000)
  tensors = {k: tf.constant(v) for k, v in inputs.items()}
  want = layers(inputs, training=False)
  got = encoder.signatures["serving_default"](**tensors)
  for key in ("sequence_output", "pooled_output"):
    assert _max_difference(got[key], want[key]) <= TOLERANCE
  assert _max_difference(encoder(tensors, training=False)["pooled_output"],
                         want["pooled_output"]) <= TOLERANCE

  classifier = AlbertClassifier(fused, 3, dropout_rate=0.0)
  old = AlbertClassifier(layers, 3, dropout_rate=0.0)
  _randomize(classifier.classifier, seed=2)
  old.set_weights(classifier.get_weights())
  path = exports.export_classifier(classifier, str(tmp_path / "glue"),
                                   spm_model, ["a", "b", "c"], 1, 32,
                                   length_buckets=(16, 32))
  serving = exports.load_saved_model(path)
  got = serving.signatures["token_ids"](**tensors)["logits"]
  assert _max_difference(got, old(inputs, training=False)["logits"]) <= (
      TOLERANCE)
  text = tf.constant(["a short sentence", "and " * 20 + "a longer one"])
  packed = serving.preprocessor(text)
  got = serving.signatures["serving_default"](sentences=text)["logits"]
  assert _max_difference(got, old(packed, training=False)["logits"]) <= (
      TOLERANCE)
  assert os.path.isdir(path)
