"""run_classifier --vocab_file: a Chinese GLUE-format task learned with a
WordPiece vocabulary in BERT's Chinese layout; the exported raw-text model
against the Python path; one-line errors."""

import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import exports
from albert_tf.config import AlbertConfig
from albert_tf.models.albert_classifier import AlbertClassifier
from albert_tf.networks.albert_encoder import AlbertEncoder
from data_pipeline.tasks.glue import examples as glue_examples
from data_pipeline.tasks.glue import features as glue_features
from data_pipeline.tokenization import wordpiece_tokenizer as wp

ROOT = os.path.abspath(os.path.join(__file__, "../../../../.."))
KEYWORD = "香蕉"  # banana


def _cli(tool, *args):
  env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2")
  return subprocess.run([sys.executable, "-m", f"tools.{tool}", *args],
                        cwd=ROOT, env=env, capture_output=True, text=True,
                        timeout=600)


def _rows(sentences, rng):
  """SST-2 rows: label 1 iff the keyword was put between two characters."""
  rows = []
  for text in sentences:
    label = rng.randint(0, 1)
    if label:
      at = rng.randint(0, len(text) - 1)
      text = text[:at] + KEYWORD + text[at:]
    rows.append((text, str(label)))
  return rows


def _released_checkpoint(root, config, vocab_file):
  """A random-init pretrainer in the released TF1 layout, with its
  vocab_chinese.txt beside it (convert_checkpoint --vocab_file)."""
  from albert_tf.checkpoints import converter
  from albert_tf.models.albert_pretrainer import AlbertPretrainer
  model = AlbertPretrainer(AlbertEncoder(config))
  ours = str(root / "init" / "ckpt")
  tf.train.Checkpoint(model=model).write(ours)
  official = str(root / "albert_tiny_zh" / "model.ckpt-best")
  converter.convert_checkpoint(config, ours, official, "official",
                               vocab_file=str(vocab_file))
  assert converter.detect_format(official) == "official"
  return official, str(root / "albert_tiny_zh" / "vocab_chinese.txt")


@pytest.fixture(scope="module")
def zh_run(tmp_path_factory, chinese_kit):
  """A tiny ALBERT in the released TF1 layout with a vocab_chinese.txt-style
  vocabulary ([UNK] at 100), fine-tuned through the CLI with --vocab_file."""
  root = tmp_path_factory.mktemp("zh_sst2")
  rng = random.Random(0)
  sentences = [chinese_kit.sentence(rng) for _ in range(1300)]
  corpus = root / "text.txt"
  corpus.write_text("\n".join(sentences) + "\n" + KEYWORD + "\n",
                    encoding="utf-8")
  tokens = chinese_kit.vocab_tokens(str(corpus))
  vocab_file = root / "vocab_chinese.txt"
  vocab_file.write_text("\n".join(tokens) + "\n", encoding="utf-8")
  data_dir = root / "SST-2"
  data_dir.mkdir()
  splits = {"train": _rows(sentences[:1000], rng),
            "dev": _rows(sentences[1000:1200], rng)}
  for split, rows in splits.items():
    with open(data_dir / f"{split}.tsv", "w", encoding="utf-8") as f:
      f.write("sentence\tlabel\n")
      f.writelines(f"{s}\t{label}\n" for s, label in rows)
  config = AlbertConfig(vocab_size=len(tokens), embedding_size=16,
                        hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=64,
                        max_position_embeddings=64, initializer_range=0.02)
  config_file = str(root / "albert_config.json")
  config.to_json_file(config_file)
  init_checkpoint, vocab_file = _released_checkpoint(root, config,
                                                     vocab_file)
  output_dir, export_dir = root / "run", root / "export"
  result = _cli("run_classifier", "--task_name=sst-2",
                f"--data_dir={data_dir}", f"--albert_config_file={config_file}",
                f"--vocab_file={vocab_file}", f"--output_dir={output_dir}",
                f"--init_checkpoint={init_checkpoint}",
                f"--export_dir={export_dir}", "--do_train", "--do_eval",
                "--max_seq_length=32", "--train_batch_size=32",
                "--eval_batch_size=64", "--learning_rate=1e-3",
                "--train_step=300", "--warmup_step=30",
                "--save_checkpoints_steps=100", "--iterations_per_loop=50",
                "--seed=0")
  assert result.returncode == 0, result.stderr[-3000:]
  return dict(output_dir=str(output_dir), export_dir=str(export_dir),
              config=config, vocab_file=str(vocab_file),
              dev=[s for s, _ in splits["dev"]])


@pytest.mark.slow
def test_chinese_keyword_task_learns(zh_run):
  with open(os.path.join(zh_run["output_dir"], "eval_results.json")) as f:
    results = json.load(f)
  assert results["accuracy"] > 0.9, results


@pytest.mark.slow
def test_serving_export_equals_python_path(zh_run, multilingual_lines):
  config = zh_run["config"]
  model = AlbertClassifier(AlbertEncoder(config), num_classes=2)
  best = tf.train.latest_checkpoint(os.path.join(zh_run["output_dir"],
                                                 "best"))
  tf.train.Checkpoint(model=model).restore(best).expect_partial()
  texts = zh_run["dev"][:8] + multilingual_lines[:12]
  tokenizer = wp.WordPieceTokenizer(zh_run["vocab_file"])
  task = glue_examples.get_task("SST-2")
  features = glue_features.featurize(
      task, [glue_examples.Example(str(i), t) for i, t in enumerate(texts)],
      tokenizer, 32)
  padded = features.padded(32, tokenizer.pad_id)
  assert np.all(padded["input_word_ids"][:, 0] == 101)  # [CLS] by name.
  probabilities = tf.nn.softmax(model(padded)["logits"]).numpy()
  serving = exports.load_saved_model(zh_run["export_dir"])
  assert serving.vocab_file.asset_path.numpy().decode().endswith(
      "vocab_chinese.txt")
  got = serving.signatures["serving_default"](sentences=tf.constant(texts))
  np.testing.assert_allclose(got["probabilities"], probabilities, atol=1e-5)


@pytest.mark.parametrize("tool,args,expected", [
    ("run_classifier", ["--task_name=sst-2", "--data_dir=DIR"],
     "give --spm_model_file (SentencePiece) or --vocab_file (WordPiece "
     "vocab.txt)"),
    ("run_classifier", ["--task_name=sst-2", "--data_dir=DIR",
                        "--vocab_file=BIG", "--do_train"],
     "--vocab_file=BIG has 6 tokens, more than the model's vocab_size (5)"),
])
def test_cli_vocabulary_errors_are_one_line(tool, args, expected, tmp_path,
                                            chinese_kit):
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
  big = tmp_path / "big_vocab.txt"
  big.write_text(vocab.read_text() + "\n中")
  config = tmp_path / "albert_config.json"
  AlbertConfig(vocab_size=5, embedding_size=8, hidden_size=8,
               num_hidden_layers=1, num_attention_heads=1,
               intermediate_size=8).to_json_file(str(config))
  def paths(text):
    return (text.replace("VOCAB", str(vocab)).replace("BIG", str(big))
            .replace("DIR", str(tmp_path)))
  args, expected = [paths(a) for a in args], paths(expected)
  result = _cli(tool, f"--albert_config_file={config}",
                f"--output_dir={tmp_path / 'out'}", *args)
  assert result.returncode == 1
  lines = result.stderr.strip().splitlines()
  assert lines == [f"error: {expected}"], result.stderr[-3000:]


@pytest.mark.slow
def test_litert_export_and_reference_runner(zh_run, tmp_path,
                                            multilingual_lines):
  from albert_tf.exports.litert import converter as tflite
  from albert_tf.exports.litert.runner import TextRunner
  out = str(tmp_path / "zh.tflite")
  described = tflite.export_tflite(zh_run["export_dir"], out, seq_length=32)
  assert described["vocab_file"] == "vocab_chinese.txt"
  runner = TextRunner.from_file(out)
  assert isinstance(runner.tokenizer, wp.WordPieceTokenizer)
  texts = zh_run["dev"][:6] + multilingual_lines[:4]
  serving = exports.load_saved_model(zh_run["export_dir"])
  expected = serving.signatures["serving_default"](
      sentences=tf.constant(texts))
  logits = np.concatenate([runner.model(runner.classify_inputs([t]))["logits"]
                           for t in texts])
  np.testing.assert_allclose(logits, expected["logits"], atol=1e-4)
  assert runner.classify(texts[:1]) == [
      expected["labels"].numpy()[0].decode()]
