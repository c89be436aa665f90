"""run_race with a WordPiece vocabulary: a Chinese RACE-layout task learned,
and the raw-text export (WordPiece in-graph) answers as the Python path."""

import dataclasses
import json
import os
import random

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import exports
from albert_tf.config import AlbertConfig
from albert_tf.training.finetuning.params import FinetuningParams
from albert_tf.training.finetuning.tasks import race as race_finetuning
from data_pipeline.tasks.race import examples as race_examples

WORDS = ["苹果", "西瓜", "葡萄", "橘子", "草莓", "桃子", "梨", "芒果", "樱桃"]
KEYWORD = "香蕉"  # The right option, always mentioned by the article.


def _write_race(root, chinese_kit, sizes, seed=0):
  rng = random.Random(seed)
  for split, n in sizes.items():
    for level in race_examples.LEVELS:
      os.makedirs(os.path.join(root, split, level), exist_ok=True)
      for i in range(n):
        options = rng.sample(WORDS, 4)
        answer = rng.randrange(4)
        options[answer] = KEYWORD
        sentences = [chinese_kit.sentence(rng) for _ in range(2)]
        article = sentences[0] + "他买了" + KEYWORD + "。" + sentences[1]
        record = {"id": f"{level}{i}.txt", "article": article,
                  "questions": ["文章里提到了哪种水果？", "他买了 _ 。"],
                  "options": [options, options],
                  "answers": ["ABCD"[answer]] * 2}
        with open(os.path.join(root, split, level, f"{i}.txt"), "w",
                  encoding="utf-8") as f:
          json.dump(record, f, ensure_ascii=False)


@pytest.mark.slow
def test_chinese_race_learns_and_exports(tmp_path, chinese_kit):
  root = str(tmp_path / "RACE")
  _write_race(root, chinese_kit, {"train": 60, "dev": 10})
  corpus = tmp_path / "text.txt"
  texts = []
  for dirpath, _, names in os.walk(root):
    for name in names:
      with open(os.path.join(dirpath, name), encoding="utf-8") as f:
        record = json.load(f)
      texts += [record["article"], *record["questions"],
                *record["options"][0]]
  corpus.write_text("\n".join(texts) + "\n", encoding="utf-8")
  tokens = chinese_kit.vocab_tokens(str(corpus))
  vocab_file = tmp_path / "vocab_chinese.txt"
  vocab_file.write_text("\n".join(tokens) + "\n", encoding="utf-8")
  config = tmp_path / "albert_config.json"
  AlbertConfig(vocab_size=len(tokens), embedding_size=16, hidden_size=32,
               num_hidden_layers=2, num_attention_heads=4,
               intermediate_size=64, max_position_embeddings=64,
               hidden_dropout_prob=0.0,
               attention_probs_dropout_prob=0.0).to_json_file(str(config))
  params = FinetuningParams.from_flat(
      output_dir=str(tmp_path / "out"), vocab_file=str(vocab_file),
      albert_config_file=str(config), do_train=True, do_eval=True,
      max_seq_length=64, train_batch_size=16, eval_batch_size=32,
      learning_rate=1e-3, train_step=100, warmup_step=10,
      save_checkpoints_steps=50, iterations_per_loop=50, seed=1)
  options = race_finetuning.RaceOptions(data_dir=str(tmp_path),
                                        max_qa_length=16)
  export_dir = str(tmp_path / "export")
  results = race_finetuning.run_race(
      params, dataclasses.replace(options, export_dir=export_dir))
  assert results["accuracy"] > 0.9, results  # Chance is 0.25.
  with open(os.path.join(params.runtime.output_dir,
                         "dev_predictions.json")) as f:
    expected = json.load(f)
  examples = race_examples.read_race_examples(str(tmp_path), "dev")
  serving = exports.load_saved_model(export_dir)
  assert serving.vocab_file.asset_path.numpy().decode().endswith(
      "vocab_chinese.txt")
  out = serving.signatures["serving_default"](
      article=tf.constant([e.article for e in examples]),
      question=tf.constant([e.question for e in examples]),
      options=tf.constant([e.options for e in examples]))
  assert [a.decode() for a in out["answer"].numpy()] == [
      expected[e.example_id]["answer"] for e in examples]
  np.testing.assert_allclose(
      out["probabilities"].numpy(),
      [expected[e.example_id]["probabilities"] for e in examples], atol=1e-5)
