"""Length buckets for SQuAD and RACE: the same trained model evaluated with
and without buckets gives equal outputs, official metrics and prediction
files (the runs themselves train bucketed, the default)."""

import json
import os
import random

import numpy as np
import pytest

from albert_common import settings_fields
from albert_tf.config import AlbertConfig
from albert_tf.training.finetuning import params as finetuning_params
from albert_tf.training.finetuning import runner as finetuning_runner
from albert_tf.training.finetuning.tasks import race as race_finetuning
from albert_tf.training.finetuning.tasks import squad as squad_finetuning
from data_pipeline.tasks.race import examples as race_examples
from data_pipeline.tasks.race import features as race_features
from data_pipeline.tasks.squad import examples as squad_examples
from data_pipeline.tokenization.sentencepiece_tokenizer import (
  SentencePieceTokenizer,
)
from tests.albert_tf.training.finetuning.test_squad_finetuning import (
  _options as squad_options,
)
from tests.albert_tf.training.finetuning.test_squad_finetuning import (
  _params as squad_params,
)
from tests.albert_tf.training.finetuning.test_squad_finetuning import (
  squad_setup,  # noqa: F401 (fixture)
)

BUCKETED, PADDED = "auto", "none"


def _both_buckets_used(mask, seq):
  lengths = mask.reshape(len(mask), -1, seq).sum(-1).max(-1)
  assert lengths.min() <= 32 < lengths.max(), lengths


@pytest.mark.slow
@pytest.mark.parametrize("v2", [False, True])
def test_squad_bucketed_evaluation_equals_unbucketed(squad_setup, v2):  # noqa: F811
  params = squad_params(squad_setup, f"buckets_v2_{v2}")
  assert params.length_buckets == BUCKETED and params.max_seq_length == 64
  options = squad_options(squad_setup, v2)
  results = squad_finetuning.run_squad(params, options)
  tokenizer = SentencePieceTokenizer(params.spm_model_file,
                                     params.do_lower_case)
  data = squad_finetuning.SquadData(options.predict_file, tokenizer, params,
                                    options, is_training=False)
  _both_buckets_used(data.arrays["input_mask"], 64)
  eval_params = settings_fields.replace(params, do_train=False)
  runner = finetuning_runner.FinetuningRunner(
      eval_params, squad_finetuning.build_squad_task(eval_params, options,
                                                     None, data))
  runner.restore_best()
  predictions, metrics = {}, {}
  dataset_json = squad_examples.load_squad_json(options.predict_file)
  for name in (BUCKETED, PADDED):
    buckets = (32, 64) if name == BUCKETED else (64,)
    predictions[name] = squad_finetuning.predict_answers(
        runner.predict, data, options, 64, threshold=None, buckets=buckets)
    metrics[name], _ = squad_finetuning.score(dataset_json,
                                              predictions[name], options)
  print(metrics)
  assert predictions[BUCKETED].predictions == predictions[PADDED].predictions
  texts = {name: {q: [e["text"] for e in entries]
                  for q, entries in p.nbest.items()}
           for name, p in predictions.items()}
  assert texts[BUCKETED] == texts[PADDED]
  for key, value in metrics[PADDED].items():
    assert metrics[BUCKETED][key] == pytest.approx(value, abs=1e-6), key
  main = "f1"
  assert results[main] == pytest.approx(metrics[PADDED][main], abs=1e-6)
  assert metrics[PADDED][main] > 40.0


def _write_race(root, english_corpus, sizes, seed=0):
  """RACE layout with articles of 2 to 24 words (both buckets of 48 used);
  the right option is "banana", which the article mentions."""
  with open(english_corpus, encoding="utf-8") as f:
    filler = [w for w in f.read().split() if w.isalpha()][:3000]
  rng = random.Random(seed)
  words_list = ["alpha", "beta", "gamma", "delta", "theta", "kappa"]
  for split, n in sizes.items():
    for level in race_examples.LEVELS:
      os.makedirs(os.path.join(root, split, level), exist_ok=True)
      for i in range(n):
        options = rng.sample(words_list, 4)
        answer = rng.randrange(4)
        options[answer] = "banana"
        words = [rng.choice(filler) for _ in range(rng.randint(2, 24))]
        words.insert(rng.randrange(len(words)), "banana")
        record = {"id": f"{level}{i}.txt", "article": " ".join(words),
                  "questions": ["which word is in the article?"],
                  "options": [options], "answers": ["ABCD"[answer]]}
        with open(os.path.join(root, split, level, f"{i}.txt"), "w") as f:
          json.dump(record, f)


@pytest.mark.slow
def test_race_bucketed_evaluation_equals_unbucketed(tmp_path, english_corpus,
                                                    spm_model):
  _write_race(str(tmp_path / "RACE"), english_corpus,
              {"train": 100, "dev": 30})
  config = tmp_path / "albert_config.json"
  AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
               num_hidden_layers=2, num_attention_heads=4,
               intermediate_size=64, max_position_embeddings=64,
               hidden_dropout_prob=0.0,
               attention_probs_dropout_prob=0.0).to_json_file(str(config))
  params = finetuning_params.FinetuningParams.from_flat(
      output_dir=str(tmp_path / "out"), spm_model_file=spm_model,
      albert_config_file=str(config), do_train=True, do_eval=True,
      max_seq_length=48, train_batch_size=16, eval_batch_size=32,
      learning_rate=1e-3, train_step=100, warmup_step=10,
      save_checkpoints_steps=50, iterations_per_loop=25, seed=1)
  options = race_finetuning.RaceOptions(data_dir=str(tmp_path),
                                        max_qa_length=16)
  results = race_finetuning.run_race(params, options)
  assert results["accuracy"] > 0.9, results
  tokenizer = SentencePieceTokenizer(spm_model)
  dev = {name: race_finetuning.RaceData(
      "dev", tokenizer, settings_fields.replace(params, length_buckets=name),
      options) for name in (BUCKETED, PADDED)}
  assert dev[BUCKETED].buckets == (32, 48) and dev[PADDED].buckets == (48,)
  _both_buckets_used(dev[PADDED].arrays["input_mask"], 48)
  eval_params = settings_fields.replace(params, do_train=False)
  runner = finetuning_runner.FinetuningRunner(
      eval_params, race_finetuning.build_race_task(options, None,
                                                   dev[PADDED], 32))
  runner.restore_best()
  logits = {name: data.logits(runner.predict, 32)
            for name, data in dev.items()}
  np.testing.assert_allclose(logits[BUCKETED], logits[PADDED], atol=1e-5)
  examples = dev[PADDED].examples
  accuracy = {name: race_features.accuracy(examples, value.argmax(-1))
              for name, value in logits.items()}
  assert accuracy[BUCKETED] == accuracy[PADDED]
  assert results["accuracy"] == accuracy[PADDED]["accuracy"]
  files = {}
  for name, value in logits.items():
    path = str(tmp_path / f"{name}.json")
    race_features.write_predictions(path, examples, value)
    with open(path, encoding="utf-8") as f:
      files[name] = json.load(f)
  assert files[BUCKETED].keys() == files[PADDED].keys()
  for key, padded in files[PADDED].items():
    assert files[BUCKETED][key]["answer"] == padded["answer"]
    np.testing.assert_allclose(files[BUCKETED][key]["probabilities"],
                               padded["probabilities"], atol=1e-6)
