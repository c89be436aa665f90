"""AlbertConfig: JSON round trip, released configs, validation."""

import dataclasses
import json
import os

import pytest

from albert_common.errors import UserInputError
from albert_tf.config import AlbertConfig

CONFIG_DIR = os.path.join(os.path.dirname(__file__), "../../..", "configs")

# The released albert_base_v2 albert_config.json, verbatim.
RELEASED_BASE_V2 = {
    "attention_probs_dropout_prob": 0, "hidden_act": "gelu",
    "hidden_dropout_prob": 0, "embedding_size": 128, "hidden_size": 768,
    "initializer_range": 0.02, "intermediate_size": 3072,
    "max_position_embeddings": 512, "num_attention_heads": 12,
    "num_hidden_layers": 12, "num_hidden_groups": 1, "net_structure_type": 0,
    "gap_size": 0, "num_memory_blocks": 0, "inner_group_num": 1,
    "down_scale_factor": 1, "type_vocab_size": 2, "vocab_size": 30000,
}


def test_released_config_loads_and_keeps_unknown_keys(tmp_path):
  path = tmp_path / "albert_config.json"
  path.write_text(json.dumps(RELEASED_BASE_V2))
  config = AlbertConfig.from_json_file(str(path))
  assert config.hidden_size == 768 and config.num_hidden_layers == 12
  assert config.share_parameters == "all"
  assert config.extra == {"net_structure_type": 0, "gap_size": 0,
                          "num_memory_blocks": 0, "down_scale_factor": 1}
  out = tmp_path / "out.json"
  config.to_json_file(str(out))
  written = json.loads(out.read_text())
  assert written == dict(RELEASED_BASE_V2, share_parameters="all")
  assert AlbertConfig.from_json_file(str(out)) == config


def test_round_trip_of_non_default_values(tmp_path):
  config = AlbertConfig(vocab_size=1000, embedding_size=64, hidden_size=96,
                        num_hidden_layers=6, num_hidden_groups=3,
                        inner_group_num=2, num_attention_heads=3,
                        intermediate_size=200, hidden_act="relu",
                        hidden_dropout_prob=0.1, share_parameters="ffn")
  path = str(tmp_path / "c.json")
  config.to_json_file(path)
  assert AlbertConfig.from_json_file(path) == config
  assert AlbertConfig.from_dict(config.to_dict()) == config


@pytest.mark.parametrize("name,layers,hidden,heads,intermediate", [
    ("base", 12, 768, 12, 3072), ("large", 24, 1024, 16, 4096),
    ("xlarge", 24, 2048, 16, 8192), ("xxlarge", 12, 4096, 64, 16384)])
def test_presets_hold_released_v2_values(name, layers, hidden, heads,
                                         intermediate):
  config = AlbertConfig.from_json_file(
      os.path.join(CONFIG_DIR, f"albert_{name}.json"))
  assert (config.num_hidden_layers, config.hidden_size,
          config.num_attention_heads, config.intermediate_size) == (
              layers, hidden, heads, intermediate)
  assert (config.vocab_size, config.embedding_size, config.hidden_act,
          config.hidden_dropout_prob,
          config.attention_probs_dropout_prob) == (30000, 128, "gelu", 0, 0)


@pytest.mark.parametrize("changes,message", [
    (dict(hidden_size=100, num_attention_heads=12),
     r"hidden_size \(100\) must be divisible by num_attention_heads \(12\)"),
    (dict(num_hidden_layers=12, num_hidden_groups=5),
     r"num_hidden_layers \(12\) must be divisible by num_hidden_groups \(5\)"),
    (dict(share_parameters="some"),
     r"share_parameters must be one of .*'some'"),
    (dict(vocab_size=0), r"vocab_size must be a positive integer, got 0"),
    (dict(intermediate_size=-3), r"intermediate_size .* got -3"),
    (dict(num_hidden_layers=2.5), r"num_hidden_layers .* got 2.5"),
    (dict(hidden_act="swishy"), r"hidden_act must be one of .*'swishy'"),
    (dict(hidden_dropout_prob=1.0), r"hidden_dropout_prob must be in \[0, 1\)"),
])
def test_bad_values_raise_one_clear_error(changes, message):
  with pytest.raises(ValueError, match=message):
    AlbertConfig(**changes)


def test_bad_files_name_the_file(tmp_path):
  missing = str(tmp_path / "nope.json")
  with pytest.raises(UserInputError, match="nope.json"):
    AlbertConfig.from_json_file(missing)
  broken = tmp_path / "broken.json"
  broken.write_text("{not json")
  with pytest.raises(UserInputError, match="broken.json is not valid JSON"):
    AlbertConfig.from_json_file(str(broken))
  bad = tmp_path / "bad.json"
  bad.write_text(json.dumps(dict(RELEASED_BASE_V2, num_hidden_groups=5)))
  with pytest.raises(UserInputError,
                     match=r"bad.json: num_hidden_layers \(12\) must be "):
    AlbertConfig.from_json_file(str(bad))


def test_group_of_layer_matches_official_formula():
  config = AlbertConfig(num_hidden_layers=12, num_hidden_groups=4)
  assert [config.group_of_layer(i) for i in range(12)] == [
      0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]


def test_config_is_frozen_and_hashable():
  config = AlbertConfig()
  with pytest.raises(dataclasses.FrozenInstanceError):
    config.hidden_size = 3
  assert hash(config) == hash(AlbertConfig())
