"""SavedModel export: encoder (TF Hub interface) and preprocessor, reloaded."""

import dataclasses
import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from albert_common.errors import UserInputError
from albert_tf import exports
from albert_tf.checkpoints import converter
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.networks.albert_encoder import AlbertEncoder

SEQ = 16


@pytest.fixture(scope="module")
def exported(tmp_path_factory, spm_model):
  """A pretrainer with random weights and dropout, saved and exported."""
  from albert_tf.config import AlbertConfig
  config = AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=32,
                        hidden_dropout_prob=0.1,
                        attention_probs_dropout_prob=0.1,
                        initializer_range=0.1)
  model = AlbertPretrainer(AlbertEncoder(config))
  rng = np.random.default_rng(0)
  for v in model.weights:  # layer norms too, so nothing is trivially 0/1
    v.assign(rng.normal(0.0, 0.1, size=v.shape).astype(np.float32))
  root = tmp_path_factory.mktemp("export")
  checkpoint = str(root / "ckpt" / "ckpt")
  tf.train.Checkpoint(model=model).write(checkpoint)
  export_dir = str(root / "exported")
  exports.export_savedmodel(config, checkpoint, spm_model, export_dir,
                            do_lower_case=True, with_mlm=True, seq_length=SEQ)
  return dict(config=config, model=model, dir=export_dir, root=root,
              checkpoint=checkpoint)


def _inputs(config, batch=3, seq=SEQ, seed=0):
  rng = np.random.default_rng(seed)
  ids = rng.integers(5, config.vocab_size, size=(batch, seq)).astype(np.int32)
  mask = np.ones((batch, seq), np.int32)
  mask[1, seq // 2:] = 0
  types = np.zeros((batch, seq), np.int32)
  types[:, seq // 3:] = 1
  return dict(input_word_ids=ids * mask, input_mask=mask,
              input_type_ids=types * mask)


def test_layout_and_assets(exported):
  export_dir = exported["dir"]
  assert sorted(os.listdir(export_dir)) == ["encoder", "preprocessor"]
  for part in ("encoder", "preprocessor"):
    assets = os.listdir(os.path.join(export_dir, part, "assets"))
    assert "albert_config.json" in assets
    assert any(a.endswith(".model") for a in assets)
  assert not [f for f in os.listdir(exported["root"]) if f.startswith(".tmp")]


def test_saved_model_load_equals_in_memory(exported):
  config, model = exported["config"], exported["model"]
  inputs = _inputs(config)
  encoder = exports.load_saved_model(os.path.join(exported["dir"], "encoder"))
  expected = model.encoder(inputs, training=False)
  actual = encoder(inputs, training=False)
  for key in ("sequence_output", "pooled_output"):
    np.testing.assert_allclose(actual[key], expected[key], atol=1e-5)
  np.testing.assert_allclose(actual["default"], expected["pooled_output"],
                             atol=1e-5)
  assert len(actual["encoder_outputs"]) == config.num_hidden_layers
  assert len(encoder.trainable_variables) == len(
      model.encoder.trainable_variables)
  # The serving signature, flat.
  serving = encoder.signatures["serving_default"](
      **{k: tf.constant(v) for k, v in inputs.items()})
  np.testing.assert_allclose(serving["pooled_output"],
                             expected["pooled_output"], atol=1e-5)
  np.testing.assert_allclose(serving["encoder_outputs_1"],
                             expected["encoder_outputs"][1], atol=1e-5)


def test_mlm_sub_object_and_signature(exported):
  config, model = exported["config"], exported["model"]
  inputs = _inputs(config)
  positions = np.array([[1, 2], [3, 0], [5, 6]], np.int32)
  expected = model(dict(inputs, masked_lm_positions=positions))["mlm_logits"]
  encoder = exports.load_saved_model(os.path.join(exported["dir"], "encoder"))
  actual = encoder.mlm(dict(inputs, masked_lm_positions=positions),
                       training=False)
  np.testing.assert_allclose(actual["mlm_logits"], expected, atol=1e-4)
  signature = encoder.signatures["mlm"](
      masked_lm_positions=tf.constant(positions),
      **{k: tf.constant(v) for k, v in inputs.items()})
  np.testing.assert_allclose(signature["mlm_logits"], expected, atol=1e-4)
  assert signature["mlm_logits"].shape == (3, 2, config.vocab_size)


def test_hub_keras_layer_fine_tunes(exported):
  config, model = exported["config"], exported["model"]
  layer = exports.hub_layer(os.path.join(exported["dir"], "encoder"),
                            trainable=True)
  inputs = {k: tf_keras.Input(shape=(None,), dtype=tf.int32, name=k)
            for k in ("input_word_ids", "input_mask", "input_type_ids")}
  pooled = layer(inputs)["pooled_output"]
  logits = tf_keras.layers.Dense(2, name="classifier")(pooled)
  classifier = tf_keras.Model(inputs, logits)
  data = _inputs(config)
  np.testing.assert_allclose(
      classifier.get_layer("classifier")(
          model.encoder(data)["pooled_output"]),
      classifier(data, training=False), atol=1e-5)
  encoder_variables = layer.trainable_variables
  assert len(encoder_variables) == len(model.encoder.trainable_variables)
  with tf.GradientTape() as tape:
    loss = tf.reduce_sum(classifier(data, training=True) ** 2)
  grads = tape.gradient(loss, encoder_variables)
  for variable, grad in zip(encoder_variables, grads):
    assert grad is not None, variable.name
    assert float(tf.reduce_sum(tf.abs(grad))) > 0, variable.name
  # Dropout (0.1 in the config) acts only with training=True.
  inference = [classifier(data, training=False) for _ in range(2)]
  np.testing.assert_array_equal(inference[0], inference[1])
  training = [classifier(data, training=True) for _ in range(2)]
  assert not np.allclose(training[0], training[1])
  # One optimizer step changes the encoder's weights.
  before = encoder_variables[0].numpy().copy()
  classifier.compile(optimizer=tf_keras.optimizers.SGD(0.1),
                     loss=tf_keras.losses.SparseCategoricalCrossentropy(
                         from_logits=True))
  classifier.fit(data, np.array([0, 1, 0]), epochs=1, verbose=0)
  assert not np.array_equal(before, encoder_variables[0].numpy())


def test_preprocessor_ids_equal_python_tokenizer(exported, spm_model):
  from data_pipeline.tokenization import sentencepiece_tokenizer as tokenization
  tokenizer = tokenization.SentencePieceTokenizer(spm_model,
                                                  do_lower_case=True)
  preprocessor = exports.load_saved_model(
      os.path.join(exported["dir"], "preprocessor"))
  a = ["Return the Absolute VALUE of a number, 1,000,000 times.",
       "Héllo  wörld ``quoted''", "",
       "a very long sentence " * 10]
  b = ["The argument may be an integer.", "x", "second segment only",
       "short"]
  cls, sep, pad = tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id

  def python_pack(ids_a, ids_b=None):
    """[CLS] a [SEP] (b [SEP]), the official _truncate_seq_pair, padding."""
    ids_a = list(ids_a)
    if ids_b is None:
      ids_a = ids_a[:SEQ - 2]
    else:
      ids_b = list(ids_b)
      while len(ids_a) + len(ids_b) > SEQ - 3:
        (ids_a if len(ids_a) > len(ids_b) else ids_b).pop()
    tokens = [cls] + ids_a + [sep]
    types = [0] * len(tokens)
    if ids_b is not None:
      tokens += ids_b + [sep]
      types += [1] * (len(ids_b) + 1)
    n = len(tokens)
    return (tokens + [pad] * (SEQ - n), [1] * n + [0] * (SEQ - n),
            types + [0] * (SEQ - n))

  single = preprocessor(tf.constant(a))
  tokens = preprocessor.tokenize(tf.constant(a))
  for i, text in enumerate(a):
    assert tokens[i].numpy().tolist() == tokenizer.encode(text)
    ids, mask, types = python_pack(tokenizer.encode(text))
    assert single["input_word_ids"][i].numpy().tolist() == ids
    assert single["input_mask"][i].numpy().tolist() == mask
    assert single["input_type_ids"][i].numpy().tolist() == types
  pair = preprocessor.signatures["two_segments"](text_a=tf.constant(a),
                                                 text_b=tf.constant(b))
  packed = preprocessor.bert_pack_inputs(
      [preprocessor.tokenize(tf.constant(a)),
       preprocessor.tokenize(tf.constant(b))], seq_length=SEQ)
  for i in range(len(a)):
    ids, mask, types = python_pack(tokenizer.encode(a[i]),
                                   tokenizer.encode(b[i]))
    for got in (pair, packed):
      assert got["input_word_ids"][i].numpy().tolist() == ids, i
      assert got["input_mask"][i].numpy().tolist() == mask
      assert got["input_type_ids"][i].numpy().tolist() == types
  # seq_length can be overridden when packing.
  longer = preprocessor.bert_pack_inputs(
      [preprocessor.tokenize(tf.constant(a))], seq_length=24)
  assert longer["input_word_ids"].shape == (len(a), 24)
  special = preprocessor.tokenize.get_special_tokens_dict()
  assert int(special["start_of_sequence_id"]) == cls


def test_preprocessor_feeds_encoder_in_keras(exported):
  preprocessor = exports.hub_layer(os.path.join(exported["dir"],
                                                "preprocessor"))
  encoder = exports.hub_layer(os.path.join(exported["dir"], "encoder"))
  text = tf_keras.Input(shape=(), dtype=tf.string)
  model = tf_keras.Model(text, encoder(preprocessor(text))["pooled_output"])
  out = model(tf.constant(["hello world", "the number"]))
  assert out.shape == (2, exported["config"].hidden_size)


@pytest.mark.slow
def test_export_from_huggingface(exported, tmp_path, spm_model):
  """init_checkpoint may be any layout; all exports compute the same thing."""
  config = exported["config"]
  inputs = _inputs(config)
  expected = exported["model"].encoder(inputs)["pooled_output"]
  for fmt in ("huggingface",):  # official: see test_checkpoint_cli
    out = str(tmp_path / fmt / "model.ckpt")
    if fmt == "huggingface":
      out = str(tmp_path / fmt)
    converter.convert_checkpoint(config, exported["checkpoint"], out, fmt)
    export_dir = str(tmp_path / f"export_{fmt}")
    exports.export_savedmodel(config, out, spm_model, export_dir,
                              seq_length=SEQ)
    encoder = exports.load_saved_model(os.path.join(export_dir, "encoder"))
    np.testing.assert_allclose(encoder(inputs)["pooled_output"], expected,
                               atol=1e-5)
    assert not hasattr(encoder, "mlm")


def test_bad_export_requests(exported, tmp_path, spm_model):
  config = exported["config"]
  with pytest.raises(UserInputError, match="already exists"):
    exports.export_savedmodel(config, exported["checkpoint"], spm_model,
                              exported["dir"])
  with pytest.raises(UserInputError, match="seq_length"):
    exports.export_savedmodel(config, exported["checkpoint"], spm_model,
                              str(tmp_path / "x"), seq_length=64)
  small = dataclasses.replace(config, vocab_size=1000)
  with pytest.raises(UserInputError, match="2000 pieces"):
    exports.export_savedmodel(small, exported["checkpoint"], spm_model,
                              str(tmp_path / "y"), seq_length=SEQ)
  encoder_only = str(tmp_path / "enc" / "ckpt")
  tf.train.Checkpoint(encoder=exported["model"].encoder).write(encoder_only)
  with pytest.raises(UserInputError, match="masked-LM"):
    exports.export_savedmodel(config, encoder_only, spm_model,
                              str(tmp_path / "z"), with_mlm=True,
                              seq_length=SEQ)
  assert not [p for p in os.listdir(tmp_path) if p in ("x", "y", "z")]
  with pytest.raises(UserInputError, match="not a SavedModel"):
    exports.load_saved_model(str(tmp_path))
  with pytest.raises(UserInputError, match="not a SavedModel"):
    exports.hub_layer(str(tmp_path / "enc"))
