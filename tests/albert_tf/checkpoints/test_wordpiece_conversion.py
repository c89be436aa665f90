"""convert_checkpoint --vocab_file: every output carries the WordPiece
vocabulary; a Hugging Face folder's BertTokenizer gives our ids."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from tokenizers import Tokenizer

from albert_common.errors import UserInputError
from albert_tf.checkpoints import converter
from albert_tf.config import AlbertConfig
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.networks.albert_encoder import AlbertEncoder
from data_pipeline.tokenization import wordpiece_tokenizer as wp

REPO = os.path.abspath(os.path.join(__file__, "../../../.."))


@pytest.fixture(scope="module")
def released(tmp_path_factory, wordpiece_kit):
  """A released-style Chinese model: TF1 checkpoint + vocab_chinese.txt in
  BERT's layout ([UNK] at 100), with a repeated token (read as officially:
  the repeat takes no id)."""
  root = tmp_path_factory.mktemp("released")
  tokens = wordpiece_kit.bert_layout(wordpiece_kit.learn(True))
  vocab_file = str(root / "albert_base_zh" / "vocab_chinese.txt")
  os.makedirs(os.path.dirname(vocab_file))
  with open(vocab_file, "w", encoding="utf-8") as f:
    f.write("\n".join(tokens[:200] + ["[CLS]"] + tokens[200:]) + "\n")
  config = AlbertConfig(vocab_size=len(tokens), embedding_size=16,
                        hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=64,
                        max_position_embeddings=32, initializer_range=0.1)
  model = AlbertPretrainer(AlbertEncoder(config))
  rng = np.random.default_rng(0)
  for v in model.weights:
    v.assign(rng.normal(0.0, 0.1, size=v.shape).astype(np.float32))
  ours = str(root / "ours" / "ckpt")
  tf.train.Checkpoint(model=model).write(ours)
  official = str(root / "albert_base_zh" / "model.ckpt-best")
  converter.convert_checkpoint(config, ours, official, "official")
  return dict(root=root, tokens=tokens, vocab_file=vocab_file,
              config=config, official=official, model=model)


def test_huggingface_folder_tokenizer_gives_our_ids(released,
                                                    multilingual_lines):
  out = str(released["root"] / "hf")
  line = converter.convert_checkpoint(
      released["config"], released["official"], out, "huggingface",
      vocab_file=released["vocab_file"])
  assert "vocab.txt + tokenizer.json (PreTrainedTokenizerFast)" in line
  assert sorted(os.listdir(out)) == [
      "config.json", "model.safetensors", "special_tokens_map.json",
      "tokenizer.json", "tokenizer_config.json", "vocab.txt"]
  with open(os.path.join(out, "tokenizer_config.json")) as f:
    config = json.load(f)
  assert config["tokenizer_class"] == "PreTrainedTokenizerFast"
  assert config["do_lower_case"] is True
  # Hugging Face numbers vocab.txt's lines: the repeat is gone.
  with open(os.path.join(out, "vocab.txt"), encoding="utf-8") as f:
    assert f.read().split("\n")[:-1] == released["tokens"]
  # What transformers' AutoTokenizer runs: the folder's tokenizer.json.
  theirs = Tokenizer.from_file(os.path.join(out, "tokenizer.json"))
  ours = wp.WordPieceTokenizer(released["vocab_file"])
  assert ours.cls_id == 101
  literal_specials = 0
  for text in multilingual_lines:
    got = theirs.encode(text).ids
    assert got[0] == 101 and got[-1] == 102
    if "[CLS]" in text:  # transformers keeps special tokens whole.
      literal_specials += 1
      assert got[1:3] == [101, 103]
      assert not {101, 103} & set(ours.encode(text))  # "[", "cls", "]"...
      continue
    assert got[1:-1] == ours.encode(text), repr(text)
  assert literal_specials == 1
  pair = theirs.encode("中国", "Korean 한국")
  assert pair.type_ids.count(1) == len(ours.encode("Korean 한국")) + 1


def test_transformers_autotokenizer_gives_official_ids(released,
                                                      multilingual_lines):
  """The folder as users load it: transformers' AutoTokenizer (4 and 5 read
  tokenizer_config.json's class; 5 rebuilds a named BertTokenizer from
  vocab.txt with a 100-character word limit) gives the official
  FullTokenizer's ids, words of 150 and 200 characters included."""
  from transformers import AutoTokenizer
  out = str(released["root"] / "hf_auto")
  converter.convert_checkpoint(
      released["config"], released["official"], out, "huggingface",
      vocab_file=released["vocab_file"])
  theirs = AutoTokenizer.from_pretrained(out)
  ours = wp.WordPieceTokenizer(released["vocab_file"])
  # Words of 101-200 characters, which the official tokenizer splits into
  # pieces and a 100-character limit turns into [UNK].
  long_words = ["y" * 200, "a" * 150, "runner" * 20, "ok" * 55 + "x",
                "Çafé" * 30, "naïve" * 25]
  lines = [t for t in multilingual_lines if "[CLS]" not in t] + [
      f"Héllo {long_words[1]} 中文 {long_words[2]}！",
      " ".join(long_words[2:]), long_words[0]]
  for word in long_words:
    assert 100 < len(word) <= 200 and ours.encode(word) != [ours.unk_id]
  for text in lines:
    got = theirs(text)["input_ids"]
    assert got == [ours.cls_id] + ours.encode(text) + [ours.sep_id], (
        repr(text))
  pair = theirs("中国", "Korean 한국")
  assert pair["token_type_ids"].count(1) == len(ours.encode("Korean 한국")) + 1
  assert theirs.mask_token_id == ours.mask_id
  assert theirs.pad_token_id == 0


def test_ours_and_official_outputs_carry_the_vocab_file(released):
  for fmt in ("ours", "official"):
    prefix = str(released["root"] / fmt / "out" / "ckpt")
    converter.convert_checkpoint(released["config"], released["official"],
                                 prefix, fmt,
                                 vocab_file=released["vocab_file"])
    written = os.path.join(os.path.dirname(prefix), "vocab_chinese.txt")
    assert wp.WordPieceTokenizer(written).tokens == released["tokens"]
  restored = AlbertPretrainer(AlbertEncoder(released["config"]))
  converter.load_weights_into(restored, str(released["root"] / "ours" /
                                            "out" / "ckpt"))
  for a, b in zip(released["model"].weights, restored.weights):
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_bad_requests(released, tmp_path):
  import dataclasses
  small = dataclasses.replace(released["config"], vocab_size=300)
  with pytest.raises(UserInputError, match=(
      f"vocab_chinese.txt has {len(released['tokens'])} tokens, more than "
      "the config's vocab_size \\(300\\)")):
    converter.convert_checkpoint(small, released["official"],
                                 str(tmp_path / "x"), "huggingface",
                                 vocab_file=released["vocab_file"])
  # A preset takes either vocabulary
  # (tests/albert_tf/checkpoints/test_keras_hub_wordpiece.py), but needs one.
  with pytest.raises(UserInputError, match="keras_hub needs --spm_model_file "
                     "or --vocab_file"):
    converter.convert_checkpoint(released["config"], released["official"],
                                 str(tmp_path / "y"), "keras_hub")
  assert not os.listdir(tmp_path)


def test_cli_vocab_too_large_is_one_line_before_tensorflow(released,
                                                           tmp_path):
  config = released["config"].to_dict()
  config["vocab_size"] = 300
  config_file = tmp_path / "albert_config.json"
  config_file.write_text(json.dumps(config))
  code = ("import runpy, sys\n"
          "sys.argv = ['convert_checkpoint', "
          f"'--albert_config_file={config_file}', "
          f"'--input_checkpoint={released['official']}', "
          f"'--output_checkpoint={tmp_path / 'out'}', "
          "'--output_format=huggingface', "
          f"'--vocab_file={released['vocab_file']}']\n"
          "try:\n"
          "  runpy.run_module('tools.convert_checkpoint',\n"
          "                   run_name='__main__')\n"
          "finally:\n"
          "  print('tensorflow' in sys.modules, file=sys.stderr)\n")
  result = subprocess.run([sys.executable, "-c", code], cwd=REPO,
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=REPO))
  assert result.returncode == 1
  lines = result.stderr.strip().splitlines()
  assert lines[-1] == "False", result.stderr[-3000:]
  assert lines[-2].startswith("error: --vocab_file=") and (
      "more than the config's vocab_size (300)" in lines[-2]), lines
  assert not (tmp_path / "out").exists()
