"""run_squad / run_race --export_dir: SavedModels answering raw strings the
way predictions.json / dev_predictions.json do."""

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
from albert_tf.training.finetuning.task_settings import SquadOptions
from albert_tf.training.finetuning.tasks import race as race_finetuning
from albert_tf.training.finetuning.tasks import squad as squad_finetuning
from data_pipeline.tasks.race import examples as race_examples

ANSWERS = ["alpha", "beta", "gamma", "delta", "theta", "kappa"]
# Text the Python and in-graph paths must treat alike: case, accents,
# whitespace runs, `` '' quotes, digit-comma pieces, unknown characters,
# compatibility characters.
TRICKY = ["Héllo", "WÖRLD", "``quoted''", "1,000,", "naïve", "café", "🙂",
          "中文", "ﬁne", "e\u0301", "  ", "\t", "3,14", "'''", "```"]


def _words(english_corpus):
  with open(english_corpus, encoding="utf-8") as f:
    return [w for w in f.read().split() if w.isalpha()][:3000]


def _squad_json(words, n, v2, seed, tricky):
  rng = random.Random(seed)

  def filler(k):
    return " ".join(rng.choice(TRICKY) if tricky and rng.random() < 0.2
                    else rng.choice(words) for _ in range(k))

  articles = []
  for i in range(n):
    # Long enough for several windows at max_seq_length 64, doc_stride 16.
    before, after = filler(rng.randint(2, 50)), filler(rng.randint(2, 50))
    answer = rng.choice(ANSWERS)
    qa = {"id": f"q{i}", "question": "which word follows the marker?"}
    if v2 and i % 3 == 0:
      context = f"{before} {answer} {after}."
      qa.update(answers=[], is_impossible=True)
    else:
      context = f"{before} marker {answer} {after}."
      qa["answers"] = [{"text": answer,
                        "answer_start": len(before) + len(" marker ")}]
      qa["is_impossible"] = False
    articles.append({"title": f"t{i}",
                     "paragraphs": [{"context": context, "qas": [qa]}]})
  return {"version": "v2.0" if v2 else "1.1", "data": articles}


@pytest.fixture(scope="module")
def tiny_config(tmp_path_factory):
  path = str(tmp_path_factory.mktemp("config") / "albert_config.json")
  AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
               num_hidden_layers=2, num_attention_heads=4,
               intermediate_size=64, max_position_embeddings=64,
               hidden_dropout_prob=0.0,
               attention_probs_dropout_prob=0.0).to_json_file(path)
  return path


def _params(root, spm_model, config, **kwargs):
  values = dict(output_dir=str(root / "out"), spm_model_file=spm_model,
                albert_config_file=config, do_train=True, do_eval=True,
                train_batch_size=16, eval_batch_size=64, learning_rate=1e-3,
                train_step=6, warmup_step=2, save_checkpoints_steps=6,
                iterations_per_loop=6, seed=1)
  values.update(kwargs)
  return FinetuningParams.from_flat(**values)


@pytest.mark.slow
@pytest.mark.parametrize("v2", [False, True], ids=["v1.1", "v2.0"])
def test_squad_export_answers_as_predictions_json(v2, tmp_path, spm_model,
                                                  english_corpus,
                                                  tiny_config):
  words = _words(english_corpus)
  train, dev = tmp_path / "train.json", tmp_path / "dev.json"
  train.write_text(json.dumps(_squad_json(words, 48, v2, 0, False)))
  dev_json = _squad_json(words, 40, v2, 1, True)
  dev.write_text(json.dumps(dev_json))
  params = _params(tmp_path, spm_model, tiny_config, max_seq_length=64)
  options = SquadOptions(train_file=str(train), predict_file=str(dev),
                         version_2_with_negative=v2, doc_stride=16,
                         max_query_length=12, max_answer_length=10,
                         start_n_top=3, end_n_top=3)
  export_dir = str(tmp_path / "export")
  squad_finetuning.run_squad(
      params, dataclasses.replace(options, export_dir=export_dir))
  with open(os.path.join(params.runtime.output_dir, "predictions.json")) as f:
    expected = json.load(f)

  serving = exports.load_saved_model(export_dir).signatures["serving_default"]
  qas = [(p["qas"][0], p["context"]) for a in dev_json["data"]
         for p in a["paragraphs"]]
  out = serving(question=tf.constant([q["question"] for q, _ in qas]),
                context=tf.constant([c for _, c in qas]))
  answers = [a.decode("utf-8") for a in out["answer"].numpy()]
  for (qa, context), answer, start, end in zip(
      qas, answers, out["start"].numpy(), out["end"].numpy()):
    assert answer == expected[qa["id"]], (qa["id"], context)
    if answer:
      assert context[start:end] == answer
    else:
      assert start == end == -1
  best = answers
  if v2:
    # The best non-empty span: nbest_predictions.json's first entry.
    best = [a.decode("utf-8") for a in out["best_answer"].numpy()]
    with open(os.path.join(params.runtime.output_dir,
                           "nbest_predictions.json")) as f:
      nbest = json.load(f)
    assert best == [nbest[q["id"]][0]["text"] for q, _ in qas]
    with open(os.path.join(params.runtime.output_dir, "null_odds.json")) as f:
      null_odds = json.load(f)
    np.testing.assert_allclose(out["null_odds"].numpy(),
                               [null_odds[q["id"]] for q, _ in qas],
                               atol=1e-4)
    # The probability is the sigmoid of those odds.
    np.testing.assert_allclose(
        out["no_answer_probability"].numpy(),
        1 / (1 + np.exp(-out["null_odds"].numpy().astype(np.float64))),
        atol=1e-6)
  assert len(set(best)) > 3  # not one degenerate answer
  if v2:  # another threshold, answering some questions and not others
    median = float(np.median(out["null_odds"].numpy()))
    signature = exports.load_saved_model(export_dir).signatures[
        "with_threshold"]
    again = signature(question=tf.constant([q["question"] for q, _ in qas]),
                      context=tf.constant([c for _, c in qas]),
                      null_score_diff_threshold=tf.constant(median))
    got = [a.decode("utf-8") for a in again["answer"].numpy()]
    assert got == [("" if null_odds[q["id"]] > median else
                    nbest[q["id"]][0]["text"]) for q, _ in qas]
    assert 0 < got.count("") < len(got)


@pytest.mark.slow
def test_race_export_picks_the_models_option(tmp_path, spm_model,
                                             english_corpus, tiny_config):
  words = _words(english_corpus)
  rng = random.Random(0)
  for split, n in (("train", 8), ("dev", 10)):
    for level in race_examples.LEVELS:
      os.makedirs(tmp_path / "race" / split / level)
      for i in range(n):
        options = [" ".join(rng.choice(words + TRICKY)
                            for _ in range(rng.randint(1, 6)))
                   for _ in range(4)]
        article = " ".join(rng.choice(words + TRICKY)
                           for _ in range(rng.randint(5, 60)))
        record = {"id": f"{level}{i}.txt", "article": article,
                  "questions": ["which words are in the article?",
                                "the article mentions _ , not _ ."],
                  "options": [options, options[::-1]], "answers": ["A", "C"]}
        (tmp_path / "race" / split / level / f"{i}.txt").write_text(
            json.dumps(record))
  params = _params(tmp_path, spm_model, tiny_config, max_seq_length=48)
  options = race_finetuning.RaceOptions(data_dir=str(tmp_path / "race"),
                                        max_qa_length=16)
  export_dir = str(tmp_path / "export")
  race_finetuning.run_race(
      params, dataclasses.replace(options, export_dir=export_dir))
  with open(os.path.join(params.runtime.output_dir,
                         "dev_predictions.json")) as f:
    expected = json.load(f)

  examples = race_examples.read_race_examples(str(tmp_path / "race"), "dev")
  serving = exports.load_saved_model(export_dir).signatures["serving_default"]
  out = serving(article=tf.constant([e.article for e in examples]),
                question=tf.constant([e.question for e in examples]),
                options=tf.constant([e.options for e in examples]))
  letters = [a.decode() for a in out["answer"].numpy()]
  assert letters == [expected[e.example_id]["answer"] for e in examples]
  np.testing.assert_allclose(
      out["probabilities"].numpy(),
      [expected[e.example_id]["probabilities"] for e in examples], atol=1e-5)
  chosen = [o.decode() for o in out["option"].numpy()]
  assert chosen == [e.options[race_examples.LABELS.index(letter)]
                    for e, letter in zip(examples, letters)]
