"""Checkpoint interchange: released TF1, Hugging Face, Model Garden, ours.

The TF1 checkpoints here are written by the test itself with tf.compat.v1
Variables and a Saver, under the names google-research/albert's modeling.py
creates (listed independently of the library's name tables).
"""

import dataclasses
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from albert_common.errors import UserInputError
from albert_tf.checkpoints import configs
from albert_tf.checkpoints import converter
from albert_tf.checkpoints import name_tables
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.networks.albert_encoder import AlbertEncoder


def official_shapes(config, heads=True):
  """name -> shape of the official modeling.py variables (+ heads)."""
  v, e, h, i = (config.vocab_size, config.embedding_size, config.hidden_size,
                config.intermediate_size)
  shapes = {"bert/embeddings/word_embeddings": (v, e),
            "bert/embeddings/token_type_embeddings":
                (config.type_vocab_size, e),
            "bert/embeddings/position_embeddings":
                (config.max_position_embeddings, e),
            "bert/embeddings/LayerNorm/gamma": (e,),
            "bert/embeddings/LayerNorm/beta": (e,),
            "bert/encoder/embedding_hidden_mapping_in/kernel": (e, h),
            "bert/encoder/embedding_hidden_mapping_in/bias": (h,),
            "bert/pooler/dense/kernel": (h, h),
            "bert/pooler/dense/bias": (h,)}
  for g in range(config.num_hidden_groups):
    for k in range(config.inner_group_num):
      p = f"bert/encoder/transformer/group_{g}/inner_group_{k}/"
      for name in ("query", "key", "value"):
        shapes[p + f"attention_1/self/{name}/kernel"] = (h, h)
        shapes[p + f"attention_1/self/{name}/bias"] = (h,)
      shapes[p + "attention_1/output/dense/kernel"] = (h, h)
      shapes[p + "attention_1/output/dense/bias"] = (h,)
      shapes[p + "ffn_1/intermediate/dense/kernel"] = (h, i)
      shapes[p + "ffn_1/intermediate/dense/bias"] = (i,)
      shapes[p + "ffn_1/intermediate/output/dense/kernel"] = (i, h)
      shapes[p + "ffn_1/intermediate/output/dense/bias"] = (h,)
      for norm in ("LayerNorm", "LayerNorm_1"):
        shapes[p + f"{norm}/gamma"] = (h,)
        shapes[p + f"{norm}/beta"] = (h,)
  if heads:
    shapes.update({"cls/predictions/transform/dense/kernel": (h, e),
                   "cls/predictions/transform/dense/bias": (e,),
                   "cls/predictions/transform/LayerNorm/gamma": (e,),
                   "cls/predictions/transform/LayerNorm/beta": (e,),
                   "cls/predictions/output_bias": (v,),
                   "cls/seq_relationship/output_weights": (2, h),
                   "cls/seq_relationship/output_bias": (2,)})
  return shapes


def write_tf1_checkpoint(prefix, shapes, seed=0, with_optimizer=True,
                         name_prefix=""):
  """Random weights under `shapes` names, as the official TF1 trainer saves."""
  rng = np.random.default_rng(seed)
  values = {n: rng.normal(0.0, 0.2, size=s).astype(np.float32)
            for n, s in shapes.items()}
  graph = tf.Graph()
  with graph.as_default():
    var_list = {}
    for name, value in values.items():
      var_list[name_prefix + name] = tf.compat.v1.Variable(value, name=name)
      if with_optimizer:
        for slot in ("adam_m", "adam_v"):
          var_list[f"{name_prefix}{name}/{slot}"] = tf.compat.v1.Variable(
              np.zeros_like(value), name=f"{name}/{slot}")
    if with_optimizer:
      var_list["global_step"] = tf.compat.v1.Variable(
          np.int64(1000), name="global_step")
    saver = tf.compat.v1.train.Saver(var_list=var_list)
    with tf.compat.v1.Session(graph=graph) as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      saver.save(sess, prefix, write_meta_graph=False)
  return values


def _config(tiny_config, **kwargs):
  return dataclasses.replace(tiny_config, **kwargs)


def _randomize(model, seed=1):
  rng = np.random.default_rng(seed)
  for v in model.weights:
    v.assign(rng.normal(0.0, 0.2, size=v.shape).astype(np.float32))


def _assert_same_weights(a, b):
  va, vb = converter.canonical_variables(a), converter.canonical_variables(b)
  assert sorted(va) == sorted(vb)
  for name in va:
    np.testing.assert_array_equal(va[name].numpy(), vb[name].numpy(),
                                  err_msg=name)


# --- Name tables --------------------------------------------------------------


def _check_one_to_one(table):
  """Both columns of a name table are one-to-one."""
  for column in ("ours", "theirs"):
    names = [getattr(e, column) for e in table]
    assert len(names) == len(set(names)), f"duplicate {column} names"


@pytest.mark.slow
@pytest.mark.parametrize("share,groups,inner", [
    ("all", 1, 1), ("all", 2, 2), ("attention", 2, 1), ("ffn", 1, 2),
    ("none", 1, 1)])
def test_our_shapes_match_the_built_model(tiny_config, share, groups, inner):
  config = _config(tiny_config, num_hidden_layers=4, num_hidden_groups=groups,
                   inner_group_num=inner, share_parameters=share)
  model = AlbertPretrainer(AlbertEncoder(config))
  variables = converter.canonical_variables(model)
  assert len(variables) == len(model.weights)  # every variable, once
  assert {n: tuple(v.shape) for n, v in variables.items()} == (
      name_tables.our_shapes(config))


@pytest.mark.parametrize("groups,inner", [(1, 1), (2, 1), (2, 3)])
def test_official_table_covers_official_names(tiny_config, groups, inner):
  config = _config(tiny_config, num_hidden_layers=4, num_hidden_groups=groups,
                   inner_group_num=inner)
  for layout in ("official", "huggingface"):
    table = name_tables.table_for(layout, config)
    _check_one_to_one(table)
    assert {e.ours for e in table} == set(name_tables.our_shapes(config))
  table = name_tables.official_table(config)
  assert {e.theirs for e in table} == set(official_shapes(config))
  # Every declared source shape is the official one.
  ours = name_tables.our_shapes(config)
  for e in table:
    assert e.transform.source_shape(ours[e.ours]) == (
        official_shapes(config)[e.theirs]), e.theirs


def test_official_and_hf_layouts_reject_unshared(tiny_config):
  config = _config(tiny_config, share_parameters="attention")
  for layout in ("official", "huggingface"):
    with pytest.raises(UserInputError, match="share_parameters"):
      name_tables.table_for(layout, config)


# --- Released TF1 layout -----------------------------------------------------


@pytest.mark.parametrize("groups,inner,module", [(1, 1, False), (2, 2, True)])
def test_tf1_checkpoint_loads_exactly(tmp_path, tiny_config, groups, inner,
                                      module):
  config = _config(tiny_config, num_hidden_layers=4, num_hidden_groups=groups,
                   inner_group_num=inner)
  prefix = str(tmp_path / "model.ckpt-1000")
  values = write_tf1_checkpoint(prefix, official_shapes(config),
                                name_prefix="module/" if module else "")
  assert converter.detect_format(prefix) == "official"
  model = AlbertPretrainer(AlbertEncoder(config))
  report = converter.load_weights_into(model, str(tmp_path))  # a directory
  assert report.format == "official" and not report.not_in_checkpoint
  assert len(report.loaded) == len(model.weights)
  h, n = config.hidden_size, config.num_attention_heads
  g = groups - 1
  layer = model.encoder.get_layer(f"group_{g}_inner_{inner - 1}_attention")
  query = values[f"bert/encoder/transformer/group_{g}/inner_group_{inner - 1}"
                 "/attention_1/self/query/kernel"]
  np.testing.assert_array_equal(layer.attention._query_dense.kernel.numpy(),
                                query.reshape(h, n, h // n))
  np.testing.assert_array_equal(
      model.sentence_order.dense.kernel.numpy(),
      values["cls/seq_relationship/output_weights"].T)


def test_tf1_encoder_only_checkpoint_into_pretrainer_reports_heads(
    tmp_path, tiny_config):
  prefix = str(tmp_path / "model.ckpt")
  write_tf1_checkpoint(prefix, official_shapes(tiny_config, heads=False))
  model = AlbertPretrainer(AlbertEncoder(tiny_config))
  report = converter.load_weights_into(model, prefix)
  assert sorted(report.not_in_checkpoint) == sorted(
      n for n in name_tables.our_shapes(tiny_config) if name_tables.is_head(n))
  encoder = AlbertEncoder(tiny_config)
  report = converter.load_weights_into(encoder, prefix)
  assert not report.unused and not report.not_in_checkpoint


def test_tf1_pretraining_checkpoint_into_encoder_reports_unused_heads(
    tmp_path, tiny_config):
  prefix = str(tmp_path / "model.ckpt")
  write_tf1_checkpoint(prefix, official_shapes(tiny_config))
  report = converter.load_weights_into(AlbertEncoder(tiny_config), prefix)
  assert len(report.unused) == 7 and "masked_lm/output_bias" in report.unused


def _garden_config(config):
  from official.legacy.albert import configs as garden_configs
  values = {k: v for k, v in config.to_dict().items()
            if k != "share_parameters"}
  return garden_configs.AlbertConfig.from_dict(values)


def _garden_converter():
  """Model Garden's converter module, its command-line flags defined on a
  FlagValues of its own: it defines --albert_config_file as our tools do,
  so importing it after a tool ran in this process would fail."""
  import importlib
  import sys
  from unittest import mock

  from absl import flags
  name = "official.nlp.tools.tf2_albert_encoder_checkpoint_converter"
  if name in sys.modules:
    return sys.modules[name]
  own = flags.FlagValues()

  def on_own(define):
    return lambda *args, **kwargs: define(*args,
                                          **dict(kwargs, flag_values=own))

  with mock.patch.object(flags, "DEFINE_string",
                         on_own(flags.DEFINE_string)), \
      mock.patch.object(flags, "DEFINE_enum", on_own(flags.DEFINE_enum)):
    return importlib.import_module(name)


def test_parity_with_model_garden_converter(tmp_path, tiny_config,
                                            encoder_inputs):
  """Our TF1 reader and Model Garden's converter give the same encoder (in
  a process where a tool already defined --albert_config_file)."""
  from official.nlp.modeling import networks

  import tools.run_classifier  # noqa: F401  (defines the shared flag)
  mg = _garden_converter()
  tf1_prefix = str(tmp_path / "tf1" / "model.ckpt")
  write_tf1_checkpoint(tf1_prefix, official_shapes(tiny_config))
  garden_path = str(tmp_path / "garden" / "ckpt")
  (tmp_path / "garden" / "temp_v1").mkdir(parents=True)  # as its CLI expects
  mg.convert_checkpoint(_garden_config(tiny_config), garden_path, tf1_prefix,
                        "encoder", converted_model="encoder")
  garden = mg._create_albert_model(_garden_config(tiny_config))
  assert isinstance(garden, networks.AlbertEncoder)
  garden_file = tf.train.latest_checkpoint(str(tmp_path / "garden"))
  tf.train.Checkpoint(encoder=garden).read(
      garden_file).assert_existing_objects_matched()
  expected = garden(encoder_inputs)
  # Model Garden's encoder returns a list unless dict_outputs=True.
  expected_sequence = (expected["sequence_output"] if isinstance(expected, dict)
                       else expected[0])
  expected_pooled = (expected["pooled_output"] if isinstance(expected, dict)
                     else expected[1])

  ours = AlbertEncoder(tiny_config)
  converter.load_weights_into(ours, tf1_prefix)
  actual = ours(encoder_inputs)
  assert np.abs(expected_sequence).max() > 0.1
  np.testing.assert_allclose(actual["sequence_output"], expected_sequence,
                             atol=1e-5)
  np.testing.assert_allclose(actual["pooled_output"], expected_pooled,
                             atol=1e-5)

  # And Model Garden's own checkpoint loads into ours, with the same result.
  assert converter.detect_format(garden_file) == "garden"
  from_garden = AlbertEncoder(tiny_config)
  report = converter.load_weights_into(from_garden, str(tmp_path / "garden"))
  assert report.format == "garden"
  _assert_same_weights(ours, from_garden)


# --- Round trips ------------------------------------------------------------


@pytest.fixture(scope="module")
def originals(tmp_path_factory, tiny_config):
  """originals(groups, inner) -> (config, random pretrainer, our checkpoint)
  of a 4-layer config; built once per layout and shared (read only)."""
  built = {}

  def get(groups, inner):
    if (groups, inner) not in built:
      config = _config(tiny_config, num_hidden_layers=4,
                       num_hidden_groups=groups, inner_group_num=inner)
      model = AlbertPretrainer(AlbertEncoder(config))
      _randomize(model)
      ours = str(tmp_path_factory.mktemp(f"g{groups}i{inner}") / "ckpt")
      tf.train.Checkpoint(model=model).write(ours)
      built[groups, inner] = config, model, ours
    return built[groups, inner]
  return get


@pytest.mark.slow
@pytest.mark.parametrize("output_format", ["official", "huggingface", "ours"])
@pytest.mark.parametrize("groups,inner", [(1, 1), (2, 2)])
def test_round_trip_is_exact(tmp_path, originals, output_format, groups,
                             inner):
  config, original, ours = originals(groups, inner)
  out = str(tmp_path / output_format / "model.ckpt")
  if output_format == "huggingface":
    out = str(tmp_path / output_format)
  converter.convert_checkpoint(config, ours, out, output_format)
  back = str(tmp_path / "back" / "ckpt")
  converter.convert_checkpoint(config, out, back, "ours")
  assert converter.detect_format(back) == "ours"
  restored = AlbertPretrainer(AlbertEncoder(config))
  tf.train.Checkpoint(model=restored).read(back).assert_consumed()
  _assert_same_weights(original, restored)


def test_official_output_uses_official_names(tmp_path, originals):
  config, _, ours = originals(2, 2)
  out = str(tmp_path / "official" / "model.ckpt")
  converter.convert_checkpoint(config, ours, out, "official")
  written = dict(tf.train.list_variables(out))
  assert {n: tuple(s) for n, s in written.items()} == official_shapes(config)
  assert tf.train.latest_checkpoint(str(tmp_path / "official")) == out
  assert not [f for f in os.listdir(tmp_path / "official")
              if f.startswith(".tmp")]


def test_huggingface_output_keys_and_config(tmp_path, tiny_config):
  from safetensors.numpy import load_file
  config = _config(tiny_config, num_hidden_layers=4, num_hidden_groups=2)
  model = AlbertPretrainer(AlbertEncoder(config))
  _randomize(model)
  ours = str(tmp_path / "ours" / "ckpt")
  tf.train.Checkpoint(model=model).write(ours)
  out = tmp_path / "hf"
  converter.convert_checkpoint(config, ours, str(out), "huggingface")
  tensors = load_file(str(out / "model.safetensors"))
  h = config.hidden_size
  q = "albert.encoder.albert_layer_groups.1.albert_layers.0.attention.query"
  assert tensors[q + ".weight"].shape == (h, h)
  # torch Linear: y = x W^T + b, W [out, in].
  x = np.random.default_rng(0).normal(size=(3, h)).astype(np.float32)
  layer = model.encoder.get_layer("group_1_inner_0_attention").attention
  ours_q = np.einsum("bh,hnd->bnd", x, layer._query_dense.kernel.numpy())
  hf_q = x @ tensors[q + ".weight"].T + tensors[q + ".bias"]
  np.testing.assert_allclose(
      hf_q, (ours_q + layer._query_dense.bias.numpy()).reshape(3, h),
      atol=1e-5)
  assert tensors["sop_classifier.classifier.weight"].shape == (2, h)
  hf_config = json.loads((out / "config.json").read_text())
  assert hf_config["hidden_act"] == "gelu_new"  # tanh GELU
  assert hf_config["architectures"] == ["AlbertForPreTraining"]
  assert configs.load_albert_config(str(out / "config.json")) == (
      dataclasses.replace(config, extra={}))


def test_huggingface_without_prefix_and_with_tied_keys(tmp_path, tiny_config):
  from safetensors.numpy import load_file
  from safetensors.numpy import save_file
  model = AlbertPretrainer(AlbertEncoder(tiny_config))
  _randomize(model)
  ours = str(tmp_path / "ours" / "ckpt")
  tf.train.Checkpoint(model=model).write(ours)
  hf = tmp_path / "hf"
  converter.convert_checkpoint(tiny_config, ours, str(hf), "huggingface")
  tensors = load_file(str(hf / "model.safetensors"))
  # AlbertModel.save_pretrained: no "albert." prefix, no heads, a buffer.
  bare = {k[len("albert."):]: v for k, v in tensors.items()
          if k.startswith("albert.")}
  bare["embeddings.position_ids"] = np.arange(40, dtype=np.int64)[None]
  save_file(bare, str(tmp_path / "bare.safetensors"))
  encoder = AlbertEncoder(tiny_config)
  converter.load_weights_into(encoder, str(tmp_path / "bare.safetensors"))
  _assert_same_weights(model.encoder, encoder)
  # Tied decoder copies are accepted when equal, refused when not.
  tied = dict(tensors)
  tied["predictions.decoder.weight"] = tensors[
      "albert.embeddings.word_embeddings.weight"]
  tied["predictions.decoder.bias"] = tensors["predictions.bias"]
  save_file(tied, str(tmp_path / "tied.safetensors"))
  converter.load_weights_into(AlbertPretrainer(AlbertEncoder(tiny_config)),
                              str(tmp_path / "tied.safetensors"))
  tied["predictions.decoder.bias"] = tied["predictions.decoder.bias"] + 1
  save_file(tied, str(tmp_path / "untied.safetensors"))
  with pytest.raises(UserInputError, match="predictions.decoder.bias"):
    converter.load_weights_into(AlbertEncoder(tiny_config),
                                str(tmp_path / "untied.safetensors"))


def test_huggingface_config_conversion():
  hf = {"model_type": "albert", "architectures": ["AlbertForMaskedLM"],
        "vocab_size": 30000, "embedding_size": 128, "hidden_size": 768,
        "num_hidden_layers": 12, "num_hidden_groups": 1,
        "inner_group_num": 1, "num_attention_heads": 12,
        "intermediate_size": 3072, "hidden_act": "gelu_new",
        "layer_norm_eps": 1e-12, "max_position_embeddings": 512,
        "type_vocab_size": 2, "initializer_range": 0.02,
        "hidden_dropout_prob": 0, "attention_probs_dropout_prob": 0}
  config = configs.config_from_huggingface(hf)
  assert config.hidden_act == "gelu" and config.extra == {}
  assert configs.config_from_huggingface(
      dict(hf, hidden_act="gelu")).hidden_act == "gelu_exact"
  with pytest.raises(UserInputError, match="layer_norm_eps"):
    configs.config_from_huggingface(dict(hf, layer_norm_eps=1e-5))
  back = configs.config_to_huggingface(config)
  assert back["hidden_act"] == "gelu_new"
  assert configs.config_from_huggingface(back) == config


def test_huggingface_folder_config_must_agree(tmp_path, tiny_config):
  model = AlbertEncoder(tiny_config)
  ours = str(tmp_path / "ours" / "ckpt")
  tf.train.Checkpoint(encoder=model).write(ours)
  converter.convert_checkpoint(tiny_config, ours, str(tmp_path / "hf"),
                               "huggingface")
  other = dataclasses.replace(tiny_config, hidden_act="gelu_exact")
  with pytest.raises(UserInputError, match="hidden_act"):
    converter.load_weights_into(AlbertEncoder(other), str(tmp_path / "hf"))


def test_encoder_only_ours_checkpoint(tmp_path, tiny_config):
  encoder = AlbertEncoder(tiny_config)
  _randomize(encoder)
  path = str(tmp_path / "enc" / "ckpt")
  tf.train.Checkpoint(encoder=encoder).write(path)
  assert converter.detect_format(path) == "ours"
  target = AlbertEncoder(tiny_config)
  converter.load_weights_into(target, path)
  _assert_same_weights(encoder, target)


def test_training_checkpoint_with_optimizer_state(tmp_path, tiny_config,
                                                  make_inputs):
  """tf.train.Checkpoint(model=..., optimizer=...) as our training writes."""
  import tf_keras
  model = AlbertPretrainer(AlbertEncoder(tiny_config))
  optimizer = tf_keras.optimizers.Adam(1e-3)
  inputs = make_inputs(2, 8)
  inputs["masked_lm_positions"] = np.array([[1, 2], [3, 4]], np.int32)
  with tf.GradientTape() as tape:
    loss = tf.reduce_sum(model(inputs)["mlm_logits"])
  grads = tape.gradient(loss, model.trainable_variables)
  optimizer.apply_gradients(zip(grads, model.trainable_variables))
  path = str(tmp_path / "train" / "ckpt")
  tf.train.Checkpoint(model=model, optimizer=optimizer,
                      step=tf.Variable(3)).write(path)
  target = AlbertPretrainer(AlbertEncoder(tiny_config))
  report = converter.load_weights_into(target, path)
  assert report.format == "ours"
  _assert_same_weights(model, target)


# --- Failing loudly -------------------------------------------------------


def test_wrong_hidden_size_lists_every_mismatch(tmp_path, tiny_config):
  prefix = str(tmp_path / "model.ckpt")
  write_tf1_checkpoint(prefix, official_shapes(tiny_config))
  wrong = _config(tiny_config, hidden_size=48, num_attention_heads=4)
  with pytest.raises(UserInputError) as info:
    converter.load_weights_into(AlbertEncoder(wrong), prefix)
  message = str(info.value)
  assert prefix in message and "shape mismatch" in message
  for name in ("bert/pooler/dense/kernel is [32, 32], the model needs [48, 48]",
               "attention_1/self/query/kernel is [32, 32]",
               "embedding_hidden_mapping_in/kernel is [16, 32]",
               "cls/seq_relationship/output_weights is [2, 32]"):
    assert name in message


def test_wrong_vocab_in_huggingface_and_ours(tmp_path, tiny_config):
  model = AlbertPretrainer(AlbertEncoder(tiny_config))
  ours = str(tmp_path / "ours" / "ckpt")
  tf.train.Checkpoint(model=model).write(ours)
  converter.convert_checkpoint(tiny_config, ours, str(tmp_path / "hf"),
                               "huggingface")
  wrong = _config(tiny_config, vocab_size=120)
  with pytest.raises(UserInputError) as info:
    converter.read_weights(str(tmp_path / "hf" / "model.safetensors"), wrong)
  message = str(info.value)
  assert "albert.embeddings.word_embeddings.weight is [97, 16], the model " \
         "needs [120, 16]" in message
  assert "predictions.bias is [97]" in message
  with pytest.raises(UserInputError) as info:
    converter.load_weights_into(AlbertPretrainer(AlbertEncoder(wrong)), ours)
  message = str(info.value)
  assert "embeddings/word_embeddings/embeddings" in message
  assert "masked_lm/output_bias" in message and "[97]" in message


def test_unknown_and_missing_names_listed_together(tmp_path, tiny_config):
  shapes = official_shapes(tiny_config)
  del shapes["bert/pooler/dense/bias"]
  del shapes["cls/predictions/output_bias"]  # a partial head
  shapes["bert/encoder/transformer/group_7/inner_group_0/LayerNorm/gamma"] = (
      32,)
  prefix = str(tmp_path / "model.ckpt")
  write_tf1_checkpoint(prefix, shapes)
  with pytest.raises(UserInputError) as info:
    converter.load_weights_into(AlbertPretrainer(AlbertEncoder(tiny_config)),
                                prefix)
  message = str(info.value)
  assert "group_7/inner_group_0/LayerNorm/gamma" in message
  assert "bert/pooler/dense/bias" in message
  assert "cls/predictions/output_bias" in message
  assert "adam_m" not in message and "global_step" not in message


def test_more_groups_in_checkpoint_than_config(tmp_path, tiny_config):
  config = _config(tiny_config, num_hidden_layers=4, num_hidden_groups=2)
  prefix = str(tmp_path / "model.ckpt")
  write_tf1_checkpoint(prefix, official_shapes(config))
  with pytest.raises(UserInputError, match="group_1"):
    converter.load_weights_into(AlbertEncoder(tiny_config), prefix)


def test_missing_and_unknown_inputs(tmp_path, tiny_config):
  with pytest.raises(UserInputError, match="not found"):
    converter.read_weights(str(tmp_path / "nothing"), tiny_config)
  (tmp_path / "empty").mkdir()
  with pytest.raises(UserInputError, match="no checkpoint in directory"):
    converter.read_weights(str(tmp_path / "empty"), tiny_config)
  (tmp_path / "junk.safetensors").write_bytes(b"not safetensors")
  with pytest.raises(UserInputError, match="junk.safetensors"):
    converter.read_weights(str(tmp_path / "junk.safetensors"), tiny_config)
  with pytest.raises(UserInputError, match="output_format"):
    converter.convert_checkpoint(tiny_config, "x", "y", "onnx")


def test_unshared_model_cannot_be_written_to_official(tmp_path, tiny_config):
  config = _config(tiny_config, share_parameters="none")
  model = AlbertPretrainer(AlbertEncoder(config))
  ours = str(tmp_path / "ours" / "ckpt")
  tf.train.Checkpoint(model=model).write(ours)
  with pytest.raises(UserInputError, match="share_parameters"):
    converter.convert_checkpoint(config, ours, str(tmp_path / "off" / "m"),
                                 "official")
  # Ours -> ours works for any sharing.
  converter.convert_checkpoint(config, ours, str(tmp_path / "o2" / "m"),
                               "ours")
  assert not (tmp_path / "off").exists()


def test_fine_tuning_model_checkpoint_gives_its_encoder(tmp_path, tiny_config):
  """tf.train.Checkpoint(model=<model with .encoder and a task head>)."""
  import tf_keras
  encoder = AlbertEncoder(tiny_config)
  _randomize(encoder)
  inputs = {k: tf_keras.Input(shape=(None,), dtype=tf.int32, name=k)
            for k in ("input_word_ids", "input_mask", "input_type_ids")}
  logits = tf_keras.layers.Dense(3)(encoder(inputs)["pooled_output"])
  classifier = tf_keras.Model(inputs, logits)
  classifier.encoder = encoder
  path = str(tmp_path / "ft" / "ckpt")
  tf.train.Checkpoint(model=classifier).write(path)
  target = AlbertEncoder(tiny_config)
  report = converter.load_weights_into(target, path)
  assert report.format == "ours" and not report.unused
  _assert_same_weights(encoder, target)
  # Into a pretrainer: the heads are reported as not in the checkpoint.
  report = converter.load_weights_into(
      AlbertPretrainer(AlbertEncoder(tiny_config)), path)
  assert len(report.not_in_checkpoint) == 7


def test_garden_checkpoint_with_other_config_fails(tmp_path, tiny_config):
  from official.nlp.modeling import networks
  garden = networks.AlbertEncoder(
      vocab_size=97, embedding_width=16, hidden_size=32, num_layers=2,
      num_attention_heads=4, intermediate_size=64, max_sequence_length=40,
      type_vocab_size=2, dict_outputs=True)
  path = str(tmp_path / "garden" / "ckpt")
  tf.train.Checkpoint(encoder=garden).write(path)
  with pytest.raises(UserInputError) as info:
    converter.load_weights_into(
        AlbertEncoder(_config(tiny_config, intermediate_size=48)), path)
  assert "Model Garden" in str(info.value) and "[32, 64]" in str(info.value)
  with pytest.raises(UserInputError, match="one shared transformer block"):
    converter.load_weights_into(
        AlbertEncoder(_config(tiny_config, num_hidden_groups=2)), path)


def test_spm_model_file_goes_with_every_output(tmp_path, spm_model,
                                               multilingual_lines):
  """--spm_model_file: beside an ours / official checkpoint, and as the
  spiece.model + AlbertTokenizer config of a Hugging Face folder, which
  transformers' AutoTokenizer loads as Hugging Face's own ALBERTs (before,
  the folder had no tokenizer and AutoTokenizer gave <unk> for every word)."""
  from transformers import AutoTokenizer

  from albert_tf.config import AlbertConfig
  from data_pipeline.tokenization.sentencepiece_tokenizer import (
    SentencePieceTokenizer,
  )
  config = AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=64)
  model = AlbertPretrainer(AlbertEncoder(config))
  ours = str(tmp_path / "ours" / "ckpt")
  tf.train.Checkpoint(model=model).write(ours)
  line = converter.convert_checkpoint(config, ours, str(tmp_path / "hf"),
                                      "huggingface",
                                      spm_model_file=spm_model)
  assert line.endswith("; spiece.model (AlbertTokenizer) (huggingface)")
  for fmt in ("official", "ours"):
    prefix = str(tmp_path / fmt / "model.ckpt")
    converter.convert_checkpoint(config, ours, prefix, fmt,
                                 spm_model_file=spm_model)
    with open(tmp_path / fmt / "albert_2k.model", "rb") as f, open(
        spm_model, "rb") as g:
      assert f.read() == g.read()

  theirs = AutoTokenizer.from_pretrained(str(tmp_path / "hf"))
  tokenizer = SentencePieceTokenizer(spm_model, do_lower_case=True)
  assert len(theirs) == 2000
  assert (theirs.cls_token_id, theirs.sep_token_id, theirs.pad_token_id,
          theirs.mask_token_id) == (tokenizer.cls_id, tokenizer.sep_id,
                                    tokenizer.pad_id, tokenizer.mask_id)
  lines = [t for t in multilingual_lines if t.strip()]
  differ = [t for t in lines if theirs(t)["input_ids"] != (
      [tokenizer.cls_id] + tokenizer.encode(t) + [tokenizer.sep_id])]
  # Where transformers' AlbertTokenizer and the official rules part: the
  # digit-comma split, "-" and "." before letters or digits, a literal
  # "[CLS]", control characters, "…" before a quote.
  assert len(lines) == 28 and len(differ) == 5, differ
  assert "numbers 3.14159 1,000,000 $100 50% #hashtag @user a^b `tick` " \
      "~tilde" in differ
  assert theirs("The quick brown fox jumps over the lazy dog.")[
      "input_ids"] == [tokenizer.cls_id] + tokenizer.encode(
          "The quick brown fox jumps over the lazy dog.") + [tokenizer.sep_id]


def test_ours_with_and_without_dropout_read_into_each_other(
    tmp_path, tiny_config, make_inputs):
  """Dropout's random-generator state is no weight: a checkpoint of a
  model trained without dropout loads into one with dropout (continued
  pretraining of a dropout-free source) and the other way round."""
  with_dropout = dataclasses.replace(tiny_config, hidden_dropout_prob=0.1,
                                     attention_probs_dropout_prob=0.1)
  inputs = make_inputs(2, 8)
  inputs["masked_lm_positions"] = np.array([[1, 2], [3, 4]], np.int32)
  for source_config, target_config in ((tiny_config, with_dropout),
                                       (with_dropout, tiny_config)):
    source = AlbertPretrainer(AlbertEncoder(source_config))
    source(inputs, training=True)
    rng = np.random.default_rng(1)
    for v in source.trainable_variables:
      v.assign(rng.normal(0.0, 0.2, size=v.shape).astype(np.float32))
    path = str(tmp_path / f"p{source_config.hidden_dropout_prob}" / "ckpt")
    tf.train.Checkpoint(model=source).write(path)
    keys = [k for k, _ in tf.train.list_variables(path)]
    assert any("/rng/_state_var/" in k for k in keys) == (
        source_config is with_dropout)
    target = AlbertPretrainer(AlbertEncoder(target_config))
    target(inputs, training=True)
    report = converter.load_weights_into(target, path)
    assert not report.not_in_checkpoint
    _assert_same_weights(source, target)
