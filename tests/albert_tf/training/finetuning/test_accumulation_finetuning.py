"""--gradient_accumulation_steps in fine-tuning: 3 updates at K=4 give the
weights of K=1 (to 1e-5) for a classifier in two length buckets, a packed
classifier, regression, multi-label, NER (a token mean over the whole
batch, one micro-batch with no tagged piece), SQuAD spans (v1 and v2's
answer-class head), multiple choice (RACE, SWAG), early exit (PABEE), and
--recompute_layers (a classifier and early exit); clipping, weight decay
and warmup on, and dropout on as users run it (encoder 0.1, heads 0.1):
each example's masks come from the update's seed and its position in the
update (albert_tf.training.update_dropout), also where a recomputed block
reruns inside tape.gradient. Each equality is checked to hold with a
dropout that changes the weights."""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from albert_tf import optimization
from albert_tf.config import AlbertConfig
from albert_tf.models.albert_classifier import AlbertClassifier
from albert_tf.models.albert_early_exit_classifier import (
  AlbertEarlyExitClassifier,
)
from albert_tf.models.albert_early_exit_classifier import early_exit_loss
from albert_tf.models.albert_multiple_choice import AlbertMultipleChoice
from albert_tf.models.albert_span_labeler import AlbertSpanLabeler
from albert_tf.models.albert_squad_v2 import AlbertSquadV2
from albert_tf.models.albert_token_classifier import AlbertTokenClassifier
from albert_tf.networks.albert_encoder import AlbertEncoder
from albert_tf.training.finetuning.model import FinetuningTrainer
from albert_tf.training.finetuning.tasks.ner import token_loss
from albert_tf.training.finetuning.tasks.own_data import (
  loss_fn as own_data_loss,
)
from albert_tf.training.finetuning.tasks.race import multiple_choice_loss
from albert_tf.training.finetuning.tasks.squad import span_loss
from albert_tf.training.finetuning.tasks.squad import squad_v2_loss
from data_pipeline.tasks import packing
from tests.data_pipeline.tasks.test_length_buckets import _run
from tests.data_pipeline.tasks.test_length_buckets import glue_setup  # noqa: F401 (fixture)

CONFIG = AlbertConfig(vocab_size=100, embedding_size=16, hidden_size=32,
                      num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=32,
                      hidden_dropout_prob=0.1,
                      attention_probs_dropout_prob=0.1)
BATCH, K, CLIP = 8, 4, 0.05
HEAD_DROPOUT = 0.1  # the official heads' (and ours by default)


def _features(rng, shape):
  """input_word_ids / input_mask / input_type_ids int32 `shape` [..., seq],
  uneven lengths."""
  seq = shape[-1]
  lengths = rng.integers(3, seq + 1, shape[:-1])[..., None]
  mask = (np.arange(seq) < lengths).astype(np.int32)
  ids = mask * rng.integers(5, 100, shape).astype(np.int32)
  return dict(input_word_ids=ids, input_mask=mask,
              input_type_ids=(np.arange(seq) >= lengths // 2).astype(
                  np.int32) * mask)


def _classifier_batches():
  """Two length buckets, as --length_buckets=auto trains."""
  rng = np.random.default_rng(0)
  return [(_features(rng, (BATCH, seq)), rng.integers(0, 3, BATCH))
          for seq in (16, 32, 16)]


def _ner_batches():
  rng = np.random.default_rng(1)
  batches = []
  for seq in (32, 32, 32):
    features = _features(rng, (BATCH, seq))
    tags = rng.integers(0, 5, (BATCH, seq))
    tagged = (rng.random((BATCH, seq)) < 0.5) & (features["input_mask"] > 0)
    tagged[4:6] = False  # micro-batch 2 has no tagged piece
    tagged[0] = features["input_mask"][0] > 0  # micro-batch 0 many
    batches.append((features, {"label_ids": np.where(tagged, tags, -1)}))
  return batches


def _squad_batches():
  rng = np.random.default_rng(2)
  return [(_features(rng, (BATCH, 32)),
           {"start_positions": rng.integers(0, 32, BATCH),
            "end_positions": rng.integers(0, 32, BATCH),
            "is_impossible": rng.integers(0, 2, BATCH)}) for _ in range(3)]


def _squad_v2_batches():
  """v2's model takes p_mask and (training) the start positions."""
  batches = _squad_batches()
  for features, labels in batches:
    features["p_mask"] = 1 - features["input_mask"]
    features["start_positions"] = labels["start_positions"]
  return batches


def _regression_batches():
  rng = np.random.default_rng(5)
  return [(_features(rng, (BATCH, 32)), rng.random(BATCH).astype(np.float32))
          for _ in range(3)]


def _multi_label_batches():
  rng = np.random.default_rng(6)
  return [(_features(rng, (BATCH, 32)),
           rng.integers(0, 2, (BATCH, 3)).astype(np.float32))
          for _ in range(3)]


def _choice_batches():
  rng = np.random.default_rng(3)
  return [(_features(rng, (BATCH, 3, 16)),
           {"label_ids": rng.integers(0, 3, BATCH)}) for _ in range(3)]


def _packed_batches():
  """3 packed batches, rows a multiple of K (what run_classifier plans)."""
  rng = np.random.default_rng(4)
  n = 200
  features = _features(rng, (n, 32))
  features["input_word_ids"][:, 0] = 2
  lengths = features["input_mask"].sum(-1)
  plan = packing.plan(lengths, 24, 32, rows_multiple=K)
  assert plan.rows % K == 0
  dataset = tf.data.Dataset.from_tensor_slices(
      (features, rng.integers(0, 3, n).astype(np.int32)))
  batches = list(packing.packed_batches(dataset, plan).take(3))
  assert len(batches) == 3
  return batches


def _classifier(encoder, head_dropout):
  return AlbertClassifier(encoder, 3, dropout_rate=head_dropout)


def _classifier_loss(labels, outputs):
  return tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=tf.cast(labels, tf.int32), logits=outputs["logits"])


def _early_exit_loss(labels, outputs):
  return early_exit_loss(labels, outputs, regression=False)


def _ner_mean_of_slice_means(labels, outputs):
  """token_loss without its whole-batch normaliser: each micro-batch a
  token mean of its own (Hugging Face's loss before transformers#34191)."""
  return token_loss(labels, outputs)


# case: (model of (encoder, head dropout), loss, batches). Each model's
# heads drop out at the official 0.1 unless the run turns dropout off.
CASES = {
    "classifier_buckets": (_classifier, _classifier_loss,
                           _classifier_batches),
    "packed_classifier": (_classifier, _classifier_loss, _packed_batches),
    "regression": (lambda e, rate: AlbertClassifier(e, 1, rate),
                   own_data_loss("regression"), _regression_batches),
    "multi_label": (lambda e, rate: AlbertClassifier(e, 3, rate),
                    own_data_loss("multi_label"), _multi_label_batches),
    "ner": (lambda e, rate: AlbertTokenClassifier(e, 5, rate),
            token_loss, _ner_batches),
    "ner_mean_of_means": (
        lambda e, rate: AlbertTokenClassifier(e, 5, rate),
        _ner_mean_of_slice_means, _ner_batches),
    "squad": (lambda e, rate: AlbertSpanLabeler(e), span_loss,
              _squad_batches),
    "squad_v2": (lambda e, rate: AlbertSquadV2(
        e, 3, 3, rate, hidden_size=CONFIG.hidden_size),
                 squad_v2_loss, _squad_v2_batches),
    "multiple_choice": (
        lambda e, rate: AlbertMultipleChoice(e, num_choices=3,
                                             dropout_rate=rate),
        multiple_choice_loss, _choice_batches),
    # PABEE: one classifier per application, their dropout one call over
    # [batch, applications, H].
    "early_exit": (lambda e, rate: AlbertEarlyExitClassifier(e, 3, rate),
                   _early_exit_loss, _regression_batches),
    # --recompute_layers: each block reruns inside tape.gradient, after
    # the update scope has closed; its masks must still be its rows'.
    "classifier_recomputed": (_classifier, _classifier_loss,
                              _regression_batches),
    "early_exit_recomputed": (
        lambda e, rate: AlbertEarlyExitClassifier(e, 3, rate),
        _early_exit_loss, _regression_batches),
}


def _train(case, steps, strategy=None, dropout=True):
  """(weights after 3 updates, optimizer iterations, last gradient norm),
  trained under `strategy` (default: the default strategy); `dropout`
  False: encoder and heads without dropout."""
  build, loss_fn, make_batches = CASES[case]
  batches = make_batches()
  if case in ("early_exit", "early_exit_recomputed",
              "classifier_recomputed"):  # class labels of 3
    batches = [(features, (labels * 3).astype(np.int32) % 3)
               for features, labels in batches]
  config = CONFIG if dropout else dataclasses.replace(
      CONFIG, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
  strategy = strategy or tf.distribute.get_strategy()
  tf_keras.utils.set_random_seed(7)
  with strategy.scope():
    encoder = AlbertEncoder(config,
                            recompute_layers=case.endswith("_recomputed"))
    model = build(encoder, HEAD_DROPOUT if dropout else 0.0)
    if case == "packed_classifier":
      model.packed_call(batches[0][0])
    else:
      model(tf.nest.map_structure(tf.constant, batches[0][0]))
    trainer = FinetuningTrainer(model, loss_fn, CLIP,
                                per_shape_steps=case == "classifier_buckets",
                                accumulation_steps=steps)
    optimizer = optimization.create_optimizer("adamw", 1e-2, 10, 2,
                                              weight_decay_rate=0.1)
    trainer.compile(optimizer=optimizer)
  dataset = tf.data.Dataset.from_tensors(batches[0])
  for batch in batches[1:]:
    dataset = dataset.concatenate(tf.data.Dataset.from_tensors(batch))
  history = trainer.fit(dataset, epochs=1, steps_per_epoch=3, verbose=0)
  return ([v.numpy() for v in model.trainable_variables],
          int(optimizer.iterations.numpy()),
          history.history["gradient_norm"][-1])


# _train(case, 1) of each case already run in this process: the K=1 runs
# of the tests below are also the mirrored test's one-device reference.
_WHOLE = {}


def _whole(case):
  """_train(case, 1), once a process (the runs are seeded: a rerun gives
  the same weights)."""
  if case not in _WHOLE:
    _WHOLE[case] = _train(case, 1)
  return _WHOLE[case]


def _largest_difference(a, b):
  return max(float(np.abs(x - y).max()) for x, y in zip(a, b))


@pytest.mark.parametrize("case", [
    "classifier_buckets", "packed_classifier", "regression", "multi_label",
    "ner", "squad", "squad_v2", "multiple_choice", "early_exit",
    "classifier_recomputed", "early_exit_recomputed"])
def test_four_micro_batches_equal_the_whole_batch(case):
  whole, iterations, norm = _whole(case)
  accumulated, accumulated_iterations, accumulated_norm = _train(case, K)
  assert iterations == accumulated_iterations == 3
  assert norm > CLIP  # clipping is active
  assert accumulated_norm == pytest.approx(norm, rel=1e-5)
  assert len(whole) == len(accumulated) > 20
  for a, w in zip(accumulated, whole):
    np.testing.assert_allclose(a, w, rtol=1e-5, atol=1e-5)
  # The dropout the equality holds under is on: the same updates without
  # it end elsewhere.
  without_dropout, _, _ = _train(case, 1, dropout=False)
  assert _largest_difference(whole, without_dropout) > 1e-4


def test_ner_micro_batch_token_means_are_not_the_whole_batch_mean():
  """Without the whole batch's tagged-piece count, the same check fails:
  the micro-batches weigh equally whatever their tagged pieces."""
  whole, _, _ = _whole("ner")
  naive, _, _ = _train("ner_mean_of_means", K)
  gap = max(float(np.abs(a - w).max()) for a, w in zip(naive, whole))
  assert gap > 1e-3


@pytest.mark.slow
def test_run_classifier_packed_with_accumulation(glue_setup):  # noqa: F811
  """run_classifier --pack_examples --gradient_accumulation_steps=2 on
  SST-2-like data: packed rows a multiple of K (else the slices could not
  be cut), updates counted as steps. (Its classifier has dropout, which a
  micro-batch draws for itself: the equality with K=1 is the tests above.)"""
  params, _ = _run(glue_setup, "accumulated_packed", pack_examples=True,
                   gradient_accumulation_steps=2, train_step=10,
                   warmup_step=2, save_checkpoints_steps=10,
                   iterations_per_loop=5, do_eval=False, do_predict=False)
  latest = tf.train.latest_checkpoint(params.runtime.output_dir)
  assert latest.endswith("ckpt-10"), latest
  reader = tf.train.load_checkpoint(latest)
  names = [n for n in reader.get_variable_to_shape_map()
           if n.startswith("optimizer/iter")]
  assert int(reader.get_tensor(names[0])) == 10


MIRRORED_CASES = ("packed_classifier", "ner", "squad_v2", "multiple_choice",
                  "early_exit", "classifier_recomputed")


@pytest.mark.slow
def test_mirrored_two_replicas_equal_one_device_and_accumulate_exactly(
    tmp_path):
  """2 logical CPUs (tests/scripts/distributed_script.py
  finetuning_accumulated), dropout on: 2 replicas give the one-device
  weights (each example's masks from its position in the update; NER's
  mean over the tagged pieces of both replicas), and each replica's 4
  rows in 2 slices give those of K=1; also for early exit and for a
  recomputed classifier. The one-device weights are this process's K=1
  runs (those of the tests above when they ran here), handed over in a
  .npz file."""
  import json
  import os
  import subprocess
  import sys
  one_device = str(tmp_path / "one_device.npz")
  np.savez(one_device, **{f"{case}.{i}": w for case in MIRRORED_CASES
                          for i, w in enumerate(_whole(case)[0])})
  root = os.path.abspath(os.path.join(__file__, "../../../../.."))
  process = subprocess.run(
      [sys.executable, os.path.join(root, "tests", "scripts",
                                    "distributed_script.py"),
       "finetuning_accumulated", one_device], cwd=root,
      capture_output=True, text=True, timeout=900, check=False)
  assert process.returncode == 0, process.stderr[-3000:]
  result = json.loads(process.stdout.strip().splitlines()[-1])
  assert result.pop("replicas") == 2
  assert set(result) == set(MIRRORED_CASES)
  for case, worst in result.items():
    assert worst["k2_vs_k1"] < 1e-5, (case, worst)
    assert worst["mirrored_vs_one_device"] < 1e-5, (case, worst)
