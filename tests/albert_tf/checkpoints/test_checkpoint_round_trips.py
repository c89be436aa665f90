"""Checkpoint interchange, both ways: ours -> official / Hugging Face /
ours and back exactly, the written files' names and configs, the
checkpoints our training writes, the tokenizer beside every output."""

import dataclasses
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from albert_common.errors import UserInputError
from albert_tf.checkpoints import configs
from albert_tf.checkpoints import converter
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.networks.albert_encoder import AlbertEncoder
from tests.albert_tf.checkpoints.checkpoint_conversion_kit import (
  assert_same_weights,
)
from tests.albert_tf.checkpoints.checkpoint_conversion_kit import config_with
from tests.albert_tf.checkpoints.checkpoint_conversion_kit import (
  official_shapes,
)
from tests.albert_tf.checkpoints.checkpoint_conversion_kit import randomize


@pytest.fixture(scope="module")
def originals(tmp_path_factory, tiny_config):
  """originals(groups, inner) -> (config, random pretrainer, our checkpoint)
  of a 4-layer config; built once per layout and shared (read only)."""
  built = {}

  def get(groups, inner):
    if (groups, inner) not in built:
      config = config_with(tiny_config, num_hidden_layers=4,
                           num_hidden_groups=groups, inner_group_num=inner)
      model = AlbertPretrainer(AlbertEncoder(config))
      randomize(model)
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
  assert_same_weights(original, restored)


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
  config = config_with(tiny_config, num_hidden_layers=4, num_hidden_groups=2)
  model = AlbertPretrainer(AlbertEncoder(config))
  randomize(model)
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
  randomize(model)
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
  assert_same_weights(model.encoder, encoder)
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
  randomize(encoder)
  path = str(tmp_path / "enc" / "ckpt")
  tf.train.Checkpoint(encoder=encoder).write(path)
  assert converter.detect_format(path) == "ours"
  target = AlbertEncoder(tiny_config)
  converter.load_weights_into(target, path)
  assert_same_weights(encoder, target)


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
  assert_same_weights(model, target)


def test_fine_tuning_model_checkpoint_gives_its_encoder(tmp_path, tiny_config):
  """tf.train.Checkpoint(model=<model with .encoder and a task head>)."""
  import tf_keras
  encoder = AlbertEncoder(tiny_config)
  randomize(encoder)
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
  assert_same_weights(encoder, target)
  # Into a pretrainer: the heads are reported as not in the checkpoint.
  report = converter.load_weights_into(
      AlbertPretrainer(AlbertEncoder(tiny_config)), path)
  assert len(report.not_in_checkpoint) == 7


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
    assert_same_weights(source, target)
