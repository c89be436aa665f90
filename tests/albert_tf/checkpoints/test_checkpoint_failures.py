"""Checkpoint conversion fails loudly: every shape mismatch, unknown and
missing name listed in one message naming the file, nothing written."""

import pytest
import tensorflow as tf

from albert_common.errors import UserInputError
from albert_tf.checkpoints import converter
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.networks.albert_encoder import AlbertEncoder
from tests.albert_tf.checkpoints.checkpoint_conversion_kit import config_with
from tests.albert_tf.checkpoints.checkpoint_conversion_kit import (
  official_shapes,
)
from tests.albert_tf.checkpoints.checkpoint_conversion_kit import (
  write_tf1_checkpoint,
)


def test_wrong_hidden_size_lists_every_mismatch(tmp_path, tiny_config):
  prefix = str(tmp_path / "model.ckpt")
  write_tf1_checkpoint(prefix, official_shapes(tiny_config))
  wrong = config_with(tiny_config, hidden_size=48, num_attention_heads=4)
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
  wrong = config_with(tiny_config, vocab_size=120)
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
  config = config_with(tiny_config, num_hidden_layers=4, num_hidden_groups=2)
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
  config = config_with(tiny_config, share_parameters="none")
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
        AlbertEncoder(config_with(tiny_config, intermediate_size=48)), path)
  assert "Model Garden" in str(info.value) and "[32, 64]" in str(info.value)
  with pytest.raises(UserInputError, match="one shared transformer block"):
    converter.load_weights_into(
        AlbertEncoder(config_with(tiny_config, num_hidden_groups=2)), path)
