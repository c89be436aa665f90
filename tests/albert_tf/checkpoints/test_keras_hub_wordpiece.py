"""keras-hub presets of a WordPiece model (the Chinese ALBERTs' layout):
the backbone loads, the tokenizer is keras-hub's BertTokenizer, and the
classifier fits on raw strings, with keras-hub alone (python -I, albert_tf
not importable)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.checkpoints import converter
from albert_tf.config import AlbertConfig
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.networks.albert_encoder import AlbertEncoder
from data_pipeline.tokenization.wordpiece_tokenizer import WordPieceTokenizer

pytestmark = pytest.mark.slow  # a Keras 3 subprocess (~40 s)

# Runs with keras-hub alone: inputs and texts in, outputs and ids out.
KERAS_HUB_ONLY = r"""
import importlib.abc, json, sys
class Refuse(importlib.abc.MetaPathFinder):
  def find_spec(self, name, path=None, target=None):
    if name.split(".")[0] in ("albert_tf", "data_pipeline", "tools"):
      raise ImportError(f"{name} is not installed here")
sys.meta_path.insert(0, Refuse())
import keras, keras_hub, numpy as np, tensorflow as tf
preset, out_path, data = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
inputs = np.load(data["inputs"])
backbone = keras_hub.models.AlbertBackbone.from_preset(preset)
sequence = backbone({"token_ids": inputs["ids"], "segment_ids":
                     inputs["types"], "padding_mask": inputs["mask"]})
tokenizer = keras_hub.tokenizers.Tokenizer.from_preset(preset)
ids = [[int(i) for i in tokenizer(line)] for line in data["lines"]]
keras.utils.set_random_seed(1)
classifier = keras_hub.models.AlbertTextClassifier.from_preset(
    preset, num_classes=2)
train = tf.data.Dataset.from_tensor_slices(
    (data["texts"], data["labels"])).shuffle(64, seed=0).batch(16)
classifier.compile(optimizer=keras.optimizers.Adam(3e-3),
                   loss=keras.losses.SparseCategoricalCrossentropy(
                       from_logits=True), metrics=["accuracy"])
history = classifier.fit(train, epochs=data["epochs"], verbose=0)
json.dump(dict(
    difference=float(np.abs(np.asarray(sequence["sequence_output"]) -
                            inputs["expected"]).max()),
    ids=ids, loss=[float(x) for x in history.history["loss"]],
    accuracy=float(classifier.evaluate(train, verbose=0,
                                       return_dict=True)["accuracy"]),
    tokenizer=type(classifier.preprocessor.tokenizer).__name__),
    open(out_path, "w"))
"""


def _task(words):
  """Label 1: the text holds "北京"; fillers are vocabulary words."""
  rng = np.random.default_rng(0)
  texts, labels = [], []
  for i in range(64):
    filler = " ".join(rng.choice(words, 4))
    texts.append(f"{filler} 北京" if i % 2 else f"{filler} 上海")
    labels.append(i % 2)
  return texts, labels


@pytest.fixture(scope="module")
def preset(tmp_path_factory, wordpiece_kit, multilingual_lines):
  root = tmp_path_factory.mktemp("wordpiece_preset")
  tokens = wordpiece_kit.bert_layout(wordpiece_kit.learn(True))
  vocab_file = root / "vocab_chinese.txt"
  vocab_file.write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
  config = AlbertConfig(vocab_size=len(tokens), embedding_size=16,
                        hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=64,
                        max_position_embeddings=32)
  tf.random.set_seed(0)
  model = AlbertPretrainer(AlbertEncoder(config))  # a fresh initialisation
  rng = np.random.default_rng(0)
  source = str(root / "ours" / "ckpt")
  tf.train.Checkpoint(model=model).write(source)
  line = converter.convert_checkpoint(
      config, source, str(root / "preset"), "keras_hub",
      vocab_file=str(vocab_file), do_lower_case=True)
  ids = rng.integers(0, len(tokens), (2, 12)).astype(np.int32)
  mask = np.ones_like(ids)
  mask[1, 8:] = 0
  types = np.zeros_like(ids)
  expected = model.encoder({"input_word_ids": ids, "input_mask": mask,
                            "input_type_ids": types})["sequence_output"]
  np.savez(root / "inputs.npz", ids=ids, mask=mask, types=types,
           expected=np.asarray(expected))
  ours = WordPieceTokenizer(str(vocab_file), do_lower_case=True)
  chars = sorted({c for c in "".join(multilingual_lines)
                  if c in ours.vocab and "\u4e00" <= c <= "\u9fff"})
  texts, labels = _task(chars)
  data = dict(inputs=str(root / "inputs.npz"), lines=multilingual_lines,
              texts=texts, labels=labels, epochs=15)
  out = root / "out.json"
  process = subprocess.run(
      [sys.executable, "-I", "-c", KERAS_HUB_ONLY, str(root / "preset"),
       str(out), json.dumps(data)], cwd=str(root), capture_output=True,
      text=True, timeout=900, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert process.returncode == 0, process.stderr[-3000:]
  return dict(line=line, result=json.loads(out.read_text()), ours=ours,
              lines=multilingual_lines, root=root, config=config)


def test_backbone_equals_ours(preset):
  assert preset["result"]["difference"] < 1e-5


def test_the_tokenizer_is_keras_hubs_bert_tokenizer(preset):
  assert preset["result"]["tokenizer"] == "BertTokenizer"
  assert "keras-hub's BertTokenizer (loads with keras-hub alone" in (
      preset["line"])


def test_ids_differ_only_where_the_conversion_line_says(preset):
  ours = [preset["ours"].encode(line) for line in preset["lines"]]
  differ = [i for i, (a, b) in enumerate(zip(ours, preset["result"]["ids"]))
            if a != b]
  assert f"{len(differ)} of {len(ours)}" in preset["line"], (differ,
                                                             preset["line"])
  # Measured: full-width punctuation (3-6, 16), Hangul (8, 9), control
  # characters and separators (11, 12), words over 100 characters (14, 15),
  # Unicode folding (18); English, accented Latin and Japanese agree.
  assert differ == [3, 4, 5, 6, 8, 9, 11, 12, 14, 15, 16, 18]


def test_the_classifier_fits_raw_strings(preset):
  result = preset["result"]
  assert result["loss"][-1] < result["loss"][0]
  assert result["accuracy"] >= 0.9, result


def test_preset_back_to_ours_writes_its_vocabulary(preset, tmp_path):
  line = converter.convert_checkpoint(
      preset["config"], str(preset["root"] / "preset"),
      str(tmp_path / "back" / "ckpt"), "ours")
  assert "vocab.txt" in line
  assert (tmp_path / "back" / "vocab.txt").read_text(encoding="utf-8") == (
      (preset["root"] / "vocab_chinese.txt").read_text(encoding="utf-8"))
