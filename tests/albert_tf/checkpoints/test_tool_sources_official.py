"""Official TF1 fine-tuned SQuAD and RACE checkpoints through the tools.

Each is written with tf.compat.v1 variables under the names
google-research/albert's scripts give them (run_squad_v1.py
`cls/squad/output_*`; run_squad_v2.py / squad_utils.create_v2_model
`start_logits/dense`, `end_logits/dense_0`, `end_logits/LayerNorm`,
`end_logits/dense_1`, `answer_class/dense_0`, `answer_class/dense_1`
(no bias); run_race.py `output_weights` [1, H] / `output_bias`, for
run_race and run_multiple_choice), in a folder as released:
albert_config.json and the SentencePiece model beside the prefix, no
`checkpoint` state file. The folder alone is given to the tool. --do_eval
scores what the checkpoint computes (each head by hand, in numpy, from the
encoder's output: v2.0 as squad_utils.create_v2_model computes its beam
and answer-class logit); --export_dir's
token_ids signature gives the same logits (1e-5); --do_train runs an
update from it.
"""

import json
import os
import random
import shutil

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.checkpoints import weight_loading
from albert_tf.networks.albert_encoder import AlbertEncoder
from tests.albert_tf.checkpoints import tool_sources_kit as kit
from tests.albert_tf.checkpoints.test_task_models_in import write_official

# Four runs of three tools, each evaluating, exporting and (but the
# last) training: ~3 minutes on 2 cores.
pytestmark = pytest.mark.slow

H = kit.CONFIG.hidden_size
SQUAD_V2_HEAD = {
    "start_logits/dense/kernel": (H, 1), "start_logits/dense/bias": (1,),
    "end_logits/dense_0/kernel": (2 * H, H), "end_logits/dense_0/bias": (H,),
    "end_logits/LayerNorm/gamma": (H,), "end_logits/LayerNorm/beta": (H,),
    "end_logits/dense_1/kernel": (H, 1), "end_logits/dense_1/bias": (1,),
    "answer_class/dense_0/kernel": (2 * H, H),
    "answer_class/dense_0/bias": (H,), "answer_class/dense_1/kernel": (H, 1)}
HEADS = {
    "squad_v1": {"cls/squad/output_weights": (2, H),
                 "cls/squad/output_bias": (2,)},
    "squad_v2": SQUAD_V2_HEAD,
    "race": {"output_weights": (1, H), "output_bias": (1,)},
}


def _folder(root, name, spm_model, seed):
  """A released-style official folder; returns (folder, stored values)."""
  folder = root / name
  folder.mkdir()
  kit.CONFIG.to_json_file(str(folder / "albert_config.json"))
  shutil.copy(spm_model, folder / "30k-clean.model")
  values = write_official(str(folder / "model.ckpt-best"), kit.CONFIG,
                          HEADS[name], seed=seed)
  os.remove(folder / "checkpoint")  # released downloads ship none
  return folder, values


@pytest.fixture(scope="module")
def setup(tmp_path_factory, english_corpus, spm_model):
  root = tmp_path_factory.mktemp("official_tools")
  out = {"root": root}
  for seed, name in enumerate(HEADS):
    out[name] = _folder(root, name, spm_model, seed)
  out["v1"] = kit.squad_files(root, english_corpus, False)
  out["v2"] = kit.squad_files(root, english_corpus, True, count=12)
  return out


def _model_inputs(arrays, *extra):
  names = ("input_word_ids", "input_mask", "input_type_ids", *extra)
  return {k: arrays[k] for k in names}


def test_official_squad_v1_through_run_squad(setup, spm_model, tmp_path):
  folder, values = setup["squad_v1"]
  examples, features, arrays = kit.squad_features(setup["v1"], spm_model)
  inputs = _model_inputs(arrays)
  encoder = AlbertEncoder(kit.CONFIG)
  weight_loading.load_weights_into(encoder, str(folder))
  sequence = encoder(inputs, training=False)["sequence_output"].numpy()
  logits = (sequence @ values["cls/squad/output_weights"].T +
            values["cls/squad/output_bias"])
  start, end = logits[..., 0], logits[..., 1]
  common = kit.squad_tool_equals(folder, setup["v1"], tmp_path, examples,
                                 features, arrays, inputs, start, end)
  _train(tmp_path, "run_squad", *common, f"--train_file={setup['v1']}")


def _train(tmp_path, tool, *args):
  out = tmp_path / "train"
  assert kit.run_tool(tool, *args, f"--output_dir={out}", "--do_train",
                      "--train_step=1", "--warmup_step=0",
                      "--train_batch_size=4",
                      "--save_checkpoints_steps=1") == 0
  assert tf.train.latest_checkpoint(str(out)).endswith("ckpt-1")


def _log_softmax(x):
  x = x - x.max(-1, keepdims=True)
  return x - np.log(np.exp(x).sum(-1, keepdims=True))


def _official_v2(sequence, p_mask, w, n_top=5):
  """squad_utils.create_v2_model's inference outputs, in numpy: the
  start / end beam log-probabilities [B, K], [B, K * K] and the
  answer-class logit [B]."""
  def dense(x, name, bias=True):
    y = x @ w[f"{name}/kernel"]
    return y + w[f"{name}/bias"] if bias else y
  mask = p_mask.astype(np.float32)
  start = dense(sequence, "start_logits/dense")[..., 0]
  start_masked = start * (1 - mask) - 1e30 * mask
  start_log_probs = _log_softmax(start_masked)
  start_top = np.argsort(-start_log_probs, -1, kind="stable")[:, :n_top]
  start_features = np.take_along_axis(sequence, start_top[..., None], 1)
  seq = sequence.shape[1]
  end_input = np.concatenate([  # [B, K, L, 2H]
      np.broadcast_to(sequence[:, None], (len(sequence), n_top, seq,
                                          sequence.shape[-1])),
      np.broadcast_to(start_features[:, :, None],
                      (len(sequence), n_top, seq, sequence.shape[-1]))], -1)
  hidden = np.tanh(dense(end_input, "end_logits/dense_0"))
  mean = hidden.mean(-1, keepdims=True)
  var = ((hidden - mean) ** 2).mean(-1, keepdims=True)
  hidden = ((hidden - mean) / np.sqrt(var + 1e-12) *
            w["end_logits/LayerNorm/gamma"] + w["end_logits/LayerNorm/beta"])
  end = dense(hidden, "end_logits/dense_1")[..., 0]  # [B, K, L]
  end_masked = end * (1 - mask[:, None]) - 1e30 * mask[:, None]
  end_log_probs = _log_softmax(end_masked)
  end_top = -np.sort(-end_log_probs, -1)[..., :n_top]
  start_p = np.exp(_log_softmax(start_masked))
  answer = np.concatenate([np.einsum("blh,bl->bh", sequence, start_p),
                           sequence[:, 0]], -1)
  cls_logits = dense(np.tanh(dense(answer, "answer_class/dense_0")),
                     "answer_class/dense_1", bias=False)[:, 0]
  top = np.take_along_axis(start_log_probs, start_top, -1)
  return top, end_top.reshape(len(sequence), -1), cls_logits


def test_official_squad_v2_through_run_squad(setup, spm_model, tmp_path,
                                             capsys):
  """The official v2.0 head is our answer-class head, exactly: the tool's
  predictions and null odds are those of the head's beam."""
  from albert_tf.models.albert_squad_v2 import AlbertSquadV2
  from data_pipeline.tasks.squad import postprocess
  folder, values = setup["squad_v2"]
  examples, features, arrays = kit.squad_features(setup["v2"], spm_model,
                                                  v2=True)
  inputs = _model_inputs(arrays, "p_mask")
  model = AlbertSquadV2(AlbertEncoder(kit.CONFIG))
  report = weight_loading.load_weights_into(model, str(folder))
  assert report.head_from == sorted(SQUAD_V2_HEAD)
  outputs = {k: v.numpy() for k, v in model(inputs, training=False).items()}
  sequence = model.encoder(_model_inputs(arrays), training=False)[
      "sequence_output"].numpy()
  by_hand = _official_v2(sequence, arrays["p_mask"], values)
  for name, want in zip(("start_top_log_probs", "end_top_log_probs",
                         "cls_logits"), by_hand):
    np.testing.assert_allclose(outputs[name], want, atol=1e-5,
                               err_msg=name)
  results = {int(u): {k: v[i] for k, v in outputs.items()}
             for i, u in enumerate(arrays["unique_ids"])}
  want = postprocess.postprocess_v2(examples, features, results)
  out, export_dir = tmp_path / "eval", tmp_path / "export"
  common = [f"--init_checkpoint={folder}", f"--predict_file={setup['v2']}",
            "--version_2_with_negative", *kit.SQUAD_FLAGS]  # answer_class
  assert kit.run_tool("run_squad", *common, f"--output_dir={out}",
                      "--do_eval", f"--export_dir={export_dir}") == 0
  null_odds = json.loads((out / "null_odds.json").read_text())
  assert null_odds.keys() == want.null_odds.keys()
  np.testing.assert_allclose([null_odds[q] for q in want.null_odds],
                             list(want.null_odds.values()), atol=1e-5)
  best = json.loads((out / "nbest_predictions.json").read_text())
  assert {q: e[0]["text"] for q, e in best.items()} == want.best_non_null
  served = kit.serving_token_ids(export_dir, inputs)
  for name in ("cls_logits", "start_top_log_probs", "end_top_log_probs"):
    np.testing.assert_allclose(served[name], outputs[name], atol=1e-5,
                               err_msg=name)
  _train(tmp_path, "run_squad", *common, f"--train_file={setup['v2']}")
  # Without --version_2_with_negative run_squad builds a span head, which
  # this head is not: one line, nothing written.
  capsys.readouterr()
  bad = tmp_path / "v1_run"
  assert kit.run_tool("run_squad", *common[:2], *kit.SQUAD_FLAGS,
                      f"--output_dir={bad}", "--do_eval") == 1
  errors = [line for line in capsys.readouterr().err.splitlines()
            if line.startswith("error:")]
  assert len(errors) == 1 and "official SQuAD v2.0 head" in errors[0], errors
  assert not bad.exists() or not any(bad.iterdir())


def _write_race(data_dir, english_corpus, count=6):
  """RACE-layout questions (4 options) of corpus words, dev and train."""
  from tests.albert_tf.training.finetuning import own_data_kit
  lines = own_data_kit.corpus_lines(english_corpus, count * 6, seed=5)
  rng = random.Random(0)
  for split in ("train", "dev"):
    level_dir = os.path.join(data_dir, "RACE", split, "middle")
    os.makedirs(level_dir)
    for i in range(count):
      words = lines[i * 6:(i + 1) * 6]
      record = {"id": f"{split}{i}.txt", "article": " ".join(words[0]),
                "questions": [" ".join(words[1][:4]) + "?"],
                "options": [[" ".join(w[:3]) for w in words[2:]]],
                "answers": ["ABCD"[rng.randrange(4)]]}
      with open(os.path.join(level_dir, f"{i}.txt"), "w") as f:
        json.dump(record, f)


def test_official_race_through_run_race(setup, spm_model, english_corpus,
                                        tmp_path):
  from albert_tf.models.albert_multiple_choice import AlbertMultipleChoice
  from data_pipeline.tasks.race import examples as race_examples
  from data_pipeline.tasks.race import features as race_features
  from data_pipeline.tokenization.factory import make_tokenizer
  folder, values = setup["race"]
  data_dir = str(tmp_path / "data")
  _write_race(data_dir, english_corpus)
  examples = race_examples.read_race_examples(data_dir, "dev")
  arrays = race_features.convert_examples_to_arrays(
      examples, make_tokenizer(spm_model), kit.SEQ * 2, 16)
  inputs = _model_inputs(arrays)
  encoder = AlbertEncoder(kit.CONFIG)
  model = AlbertMultipleChoice(encoder, 4)
  weight_loading.load_weights_into(model, str(folder))
  logits = model(inputs, training=False)["logits"].numpy()
  pooled = encoder({k: v.reshape(-1, kit.SEQ * 2) for k, v in inputs.items()},
                   training=False)["pooled_output"].numpy()
  np.testing.assert_allclose(  # the official head: pooled @ W.T + b
      logits, (pooled @ values["output_weights"].T +
               values["output_bias"]).reshape(-1, 4), atol=1e-5)
  out, export_dir = tmp_path / "eval", tmp_path / "export"
  common = [f"--init_checkpoint={folder}", f"--data_dir={data_dir}",
            f"--max_seq_length={kit.SEQ * 2}", "--max_qa_length=16"]
  assert kit.run_tool("run_race", *common, f"--output_dir={out}",
                      "--do_eval", f"--export_dir={export_dir}") == 0
  predictions = json.loads((out / "dev_predictions.json").read_text())
  got = np.array([predictions[e.example_id]["probabilities"]
                  for e in examples])
  np.testing.assert_allclose(got, tf.nn.softmax(logits).numpy(), atol=1e-5)
  served = kit.serving_token_ids(export_dir, inputs)
  np.testing.assert_allclose(served["logits"], logits, atol=1e-5)
  _train(tmp_path, "run_race", *common)


def test_official_race_through_run_multiple_choice(setup, spm_model,
                                                   english_corpus, tmp_path):
  """run_race.py's head scores any number of choices: one's own 3-choice
  questions, scored as the stored head does and exported."""
  from albert_tf.models.albert_multiple_choice import AlbertMultipleChoice
  from data_pipeline.tasks import choice_inputs
  from data_pipeline.tokenization.factory import make_tokenizer
  from tests.albert_tf.training.finetuning import own_data_kit
  folder, _ = setup["race"]
  rows = own_data_kit.choice_rows(
      own_data_kit.corpus_lines(english_corpus, 30, seed=2), 3, 5)
  dev = own_data_kit.write_jsonl(tmp_path / "mc.jsonl", rows)
  inputs = _model_inputs(choice_inputs.pack_choices(
      make_tokenizer(spm_model), [r["context"] for r in rows],
      [r["question"] for r in rows], [r["choices"] for r in rows],
      kit.SEQ, 16))
  model = AlbertMultipleChoice(AlbertEncoder(kit.CONFIG), 3)
  weight_loading.load_weights_into(model, str(folder))
  logits = model(inputs, training=False)["logits"].numpy()
  out, export_dir = tmp_path / "eval", tmp_path / "export"
  assert kit.run_tool("run_multiple_choice", f"--init_checkpoint={folder}",
                      f"--dev_file={dev}", f"--max_seq_length={kit.SEQ}",
                      "--max_qa_length=16", "--length_buckets=none",
                      f"--output_dir={out}", "--do_eval",
                      f"--export_dir={export_dir}") == 0
  got = np.array([r["probabilities"] for r in kit.read_jsonl(
      out / "dev_predictions.jsonl")])
  np.testing.assert_allclose(got, tf.nn.softmax(logits).numpy(), atol=1e-5)
  served = kit.serving_token_ids(export_dir, inputs)
  np.testing.assert_allclose(served["logits"], logits, atol=1e-5)
