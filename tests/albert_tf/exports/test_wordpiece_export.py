"""export_savedmodel with a WordPiece vocab.txt: the preprocessor tokenizes
in-graph with WordPiece, ids equal to the Python tokenizer's."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from albert_common.errors import UserInputError
from albert_tf import exports
from albert_tf.config import AlbertConfig
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.networks.albert_encoder import AlbertEncoder
from data_pipeline.tokenization import wordpiece_tokenizer as wp

REPO = os.path.abspath(os.path.join(__file__, "../../../.."))
SEQ = 24


@pytest.fixture(scope="module")
def wordpiece_model(tmp_path_factory, wordpiece_kit):
  """A tiny model, a BERT-layout vocab.txt ([UNK] at 100) and a checkpoint."""
  root = tmp_path_factory.mktemp("wp_export")
  tokens = wordpiece_kit.bert_layout(wordpiece_kit.learn(True))
  vocab_file = str(root / "vocab_chinese.txt")
  with open(vocab_file, "w", encoding="utf-8") as f:
    f.write("\n".join(tokens) + "\n")
  config = AlbertConfig(vocab_size=len(tokens), embedding_size=16,
                        hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=64,
                        max_position_embeddings=32, initializer_range=0.1)
  model = AlbertPretrainer(AlbertEncoder(config))
  checkpoint = str(root / "ckpt" / "ckpt")
  tf.train.Checkpoint(model=model).write(checkpoint)
  config_file = str(root / "albert_config.json")
  config.to_json_file(config_file)
  return dict(root=root, tokens=tokens, vocab_file=vocab_file, config=config,
              model=model, checkpoint=checkpoint, config_file=config_file)


@pytest.fixture(scope="module")
def exported(wordpiece_model):
  export_dir = str(wordpiece_model["root"] / "exported")
  line = exports.export_savedmodel(
      wordpiece_model["config"], wordpiece_model["checkpoint"], None,
      export_dir, seq_length=SEQ, vocab_file=wordpiece_model["vocab_file"])
  assert "preprocessor (seq_length 24)" in line
  return export_dir


@pytest.mark.slow  # a WordPiece export pipeline; make test keeps the CLI checks
def test_assets_carry_the_vocab_file(exported):
  for part, extra in (("encoder", []),
                      ("preprocessor", ["length_buckets.json"])):
    assets = sorted(os.listdir(os.path.join(exported, part, "assets")))
    assert assets == sorted(["albert_config.json", "vocab_chinese.txt"] +
                            extra)
  encoder = tf.saved_model.load(os.path.join(exported, "encoder"))
  assert encoder.vocab_file.asset_path.numpy().decode().endswith(
      "vocab_chinese.txt")


@pytest.mark.slow  # a WordPiece export pipeline; make test keeps the CLI checks
def test_preprocessor_ids_equal_python_on_every_line(exported, wordpiece_model,
                                                     multilingual_lines):
  python = wp.WordPieceTokenizer(wordpiece_model["vocab_file"])
  preprocessor = exports.load_saved_model(
      os.path.join(exported, "preprocessor"))
  texts = tf.constant(multilingual_lines)
  tokens = preprocessor.tokenize(texts)
  packed = preprocessor(texts)
  for i, line in enumerate(multilingual_lines):
    ids = python.encode(line)
    assert tokens[i].numpy().tolist() == ids, repr(line)
    body = ids[:SEQ - 2]
    expected = [101] + body + [102] + [0] * (SEQ - 2 - len(body))
    assert packed["input_word_ids"][i].numpy().tolist() == expected
  special = preprocessor.tokenize.get_special_tokens_dict()
  assert [int(special[k]) for k in (
      "start_of_sequence_id", "end_of_segment_id", "padding_id",
      "mask_id")] == [101, 102, 0, 103]
  pair = preprocessor.signatures["two_segments"](
      text_a=texts[:3], text_b=texts[3:6])
  assert pair["input_type_ids"].numpy().max() == 1
  # The preprocessor feeds the encoder, which computes what the model does.
  encoder = exports.load_saved_model(os.path.join(exported, "encoder"))
  inputs = {k: v[:4] for k, v in packed.items()}
  np.testing.assert_allclose(
      encoder(inputs, training=False)["pooled_output"],
      wordpiece_model["model"].encoder(inputs, training=False)[
          "pooled_output"], atol=1e-5)


def test_vocab_larger_than_config_is_refused(wordpiece_model, tmp_path):
  import dataclasses
  small = dataclasses.replace(wordpiece_model["config"],
                              vocab_size=len(wordpiece_model["tokens"]) - 1)
  with pytest.raises(UserInputError, match=(
      f"--vocab_file=.*vocab_chinese.txt has {len(wordpiece_model['tokens'])}"
      " tokens, more than the config's vocab_size")):
    exports.export_savedmodel(small, wordpiece_model["checkpoint"], None,
                              str(tmp_path / "x"), seq_length=SEQ,
                              vocab_file=wordpiece_model["vocab_file"])
  with pytest.raises(UserInputError, match="--spm_model_file.*--vocab_file"):
    exports.export_savedmodel(wordpiece_model["config"],
                              wordpiece_model["checkpoint"], None,
                              str(tmp_path / "y"), seq_length=SEQ)
  assert not os.listdir(tmp_path)


def _cli(*args):
  code = ("import runpy, sys\n"
          f"sys.argv = ['export_savedmodel'] + {list(args)!r}\n"
          "try:\n"
          "  runpy.run_module('tools.export_savedmodel', run_name='__main__')\n"
          "finally:\n"
          "  print('tensorflow' in sys.modules, file=sys.stderr)\n")
  return subprocess.run([sys.executable, "-c", code], cwd=REPO,
                        capture_output=True, text=True, timeout=300,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2",
                                 PYTHONPATH=REPO))


@pytest.mark.parametrize("case", ["neither", "no_mask", "size"])
def test_cli_bad_vocabulary_one_line_before_tensorflow(case, wordpiece_model,
                                                       tmp_path):
  config_file = wordpiece_model["config_file"]
  vocab = wordpiece_model["vocab_file"]
  if case == "neither":
    vocab_args = []
    expected = "give --spm_model_file (SentencePiece) or --vocab_file"
  elif case == "no_mask":
    bad = tmp_path / "vocab.txt"
    bad.write_text("\n".join(t for t in wordpiece_model["tokens"]
                             if t != "[MASK]"), encoding="utf-8")
    vocab_args = [f"--vocab_file={bad}"]
    expected = f"vocab file {bad} has no [MASK] token"
  else:
    config = wordpiece_model["config"].to_dict()
    config["vocab_size"] = 120
    config_file = tmp_path / "small_config.json"
    config_file.write_text(json.dumps(config))
    vocab_args = [f"--vocab_file={vocab}"]
    expected = "tokens, more than the config's vocab_size (120)"
  result = _cli(f"--albert_config_file={config_file}",
                f"--init_checkpoint={wordpiece_model['checkpoint']}",
                f"--export_dir={tmp_path / 'out'}", *vocab_args)
  assert result.returncode == 1
  lines = result.stderr.strip().splitlines()
  assert lines[-1] == "False", result.stderr[-3000:]  # No TensorFlow.
  errors = [line for line in lines if line.startswith("error:")]
  assert errors == [lines[-2]] and expected in errors[0], result.stderr
  assert not os.path.exists(tmp_path / "out")


@pytest.mark.slow
def test_cli_exports_with_vocab_file(wordpiece_model, tmp_path,
                                     multilingual_lines):
  out = tmp_path / "cli_export"
  result = _cli(f"--albert_config_file={wordpiece_model['config_file']}",
                f"--init_checkpoint={wordpiece_model['checkpoint']}",
                f"--vocab_file={wordpiece_model['vocab_file']}",
                f"--export_dir={out}", "--seq_length=16")
  assert result.returncode == 0, result.stderr[-3000:]
  preprocessor = exports.load_saved_model(str(out / "preprocessor"))
  python = wp.WordPieceTokenizer(wordpiece_model["vocab_file"])
  tokens = preprocessor.tokenize(tf.constant(multilingual_lines[:8]))
  assert tokens.to_list() == [python.encode(t)
                              for t in multilingual_lines[:8]]
