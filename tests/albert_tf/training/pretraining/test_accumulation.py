"""--gradient_accumulation_steps in pretraining: K slices of the batch give
the gradient and the updates of the whole batch (losses normalised over the
whole update), where a mean of per-micro-batch means does not."""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from albert_common.errors import UserInputError
from albert_tf import optimization
from albert_tf.config import AlbertConfig
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.networks.albert_encoder import AlbertEncoder
from albert_tf.training.pretraining.objective import replica_loss
from albert_tf.training.pretraining.runner import PretrainingRunner
from albert_tf.training.runtime_params import RuntimeParams
from albert_tf.training.runtime_params import check_accumulation

CONFIG = AlbertConfig(vocab_size=100, embedding_size=16, hidden_size=32,
                      num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=32,
                      hidden_dropout_prob=0.0,
                      attention_probs_dropout_prob=0.0)
# Pretraining configs have no dropout; users may set it (ALBERT v1: 0.1).
DROPOUT_CONFIG = dataclasses.replace(CONFIG, hidden_dropout_prob=0.1,
                                     attention_probs_dropout_prob=0.1)
BATCH, SEQ, P, K = 8, 32, 6, 4
# Masked tokens per sequence: micro-batches (pairs) hold 11, 1, 0 and 9.
MASKS = [6, 5, 1, 0, 0, 0, 3, 6]


def make_batch(seed=0):
  """A pretraining batch of 8 sequences with uneven mask counts."""
  rng = np.random.default_rng(seed)
  weights = np.array([[1.0] * n + [0.0] * (P - n) for n in MASKS],
                     np.float32)
  return dict(
      input_word_ids=tf.constant(rng.integers(5, 100, (BATCH, SEQ)),
                                 tf.int32),
      input_mask=tf.ones((BATCH, SEQ), tf.int32),
      input_type_ids=tf.constant(np.repeat([[0] * 16 + [1] * 16], BATCH, 0),
                                 tf.int32),
      masked_lm_positions=tf.constant(rng.integers(1, SEQ, (BATCH, P)),
                                      tf.int32),
      masked_lm_ids=tf.constant(rng.integers(5, 100, (BATCH, P)), tf.int32),
      masked_lm_weights=tf.constant(weights),
      next_sentence_labels=tf.constant(rng.integers(0, 2, (BATCH, 1)),
                                       tf.int32))


def make_model(seed=1, config=CONFIG, recompute=False):
  tf_keras.utils.set_random_seed(seed)
  model = AlbertPretrainer(AlbertEncoder(config, recompute_layers=recompute))
  model({k: v for k, v in make_batch().items()
         if k in ("input_word_ids", "input_mask", "input_type_ids",
                  "masked_lm_positions")})
  return model


def runner_for(model, optimizer, steps):
  return PretrainingRunner(tf.distribute.get_strategy(), model, optimizer,
                           global_batch_size=BATCH, clip_norm=0.05,
                           gradient_accumulation_steps=steps)


def test_accumulated_gradient_equals_the_whole_batch():
  model = make_model()
  runner = runner_for(model, optimization.create_optimizer("lamb", 1e-3, 10),
                      K)
  batch = make_batch()
  weight = tf.reduce_sum(batch["masked_lm_weights"])
  whole = tf.function(runner._forward_backward_fn)(batch, weight)[0]
  accumulated = tf.function(runner._accumulated_gradients)(batch, weight)

  def naive_gradients():
    """HF's pre-#34191 way: each micro-batch its own mean, then averaged."""
    total = [tf.zeros_like(v) for v in model.trainable_variables]
    for i in range(K):
      micro = {k: v[2 * i:2 * i + 2] for k, v in batch.items()}
      with tf.GradientTape() as tape:
        outputs = model({k: micro[k] for k in runner_inputs}, training=True)
        loss, _ = replica_loss(
            micro, outputs, tf.reduce_sum(micro["masked_lm_weights"]), 2)
      grads = tape.gradient(loss, model.trainable_variables)
      total = [t + tf.convert_to_tensor(g) / K for t, g in zip(total, grads)]
    return total

  runner_inputs = ("input_word_ids", "input_mask", "input_type_ids",
                   "masked_lm_positions")
  naive = naive_gradients()
  assert len(accumulated) == len(whole) > 20
  for a, w in zip(accumulated, whole):
    np.testing.assert_allclose(a.numpy(), tf.convert_to_tensor(w).numpy(),
                               rtol=1e-5, atol=1e-6)
  naive_ok = [np.allclose(n.numpy(), tf.convert_to_tensor(w).numpy(),
                          rtol=1e-5, atol=1e-6) for n, w in zip(naive, whole)]
  assert not all(naive_ok)
  table = [i for i, v in enumerate(model.trainable_variables)
           if "word_embeddings" in v.name][0]
  # The word table (MLM decoder and input) is off by a large margin.
  gap = np.abs(naive[table].numpy() -
               tf.convert_to_tensor(whole[table]).numpy()).max()
  assert gap > 1e-3


def _three_updates(name, steps, config, recompute=False):
  """(weights, metrics) after 3 updates of K=`steps` micro-batches."""
  model = make_model(config=config, recompute=recompute)
  optimizer = optimization.create_optimizer(name, 1e-2, 10, 2,
                                            weight_decay_rate=0.1)
  runner = runner_for(model, optimizer, steps)
  step = tf.function(runner.replica_train_step)
  for seed in range(3):
    step(make_batch(seed))
  assert int(optimizer.iterations.numpy()) == 3
  assert float(runner.gradient_norm.result()) > 0.05  # clipping active
  metrics = {k: float(v) for k, v in runner.train_metrics.result().items()}
  return [v.numpy() for v in model.trainable_variables], metrics


@pytest.mark.parametrize("name,recompute", [
    ("lamb", False), ("lamb", True),  # make test
    pytest.param("adamw", False, marks=pytest.mark.slow)])
def test_three_updates_equal_the_whole_batch(name, recompute):
  """Clipping (norm 0.05 is below every step's), weight decay with its
  exclusions, a warmup of 2 steps and dropout 0.1: after 3 updates K=4
  equals K=1 (each sequence's masks from its position in the update),
  also with --recompute_layers (each block reruns inside tape.gradient,
  after the update scope closed), and the dropout changes the weights."""
  runs = {steps: _three_updates(name, steps, DROPOUT_CONFIG, recompute)
          for steps in (1, K)}
  start = [v.numpy() for v in make_model().trainable_variables]
  for one, accumulated, first in zip(runs[1][0], runs[K][0], start):
    np.testing.assert_allclose(accumulated, one, rtol=1e-5, atol=1e-5)
  moved = max(np.abs(a - b).max() for a, b in zip(runs[1][0], start))
  assert moved > 1e-3
  for key, value in runs[1][1].items():
    assert runs[K][1][key] == pytest.approx(value, rel=1e-5), key
  without_dropout, _ = _three_updates(name, 1, CONFIG, recompute)
  assert max(np.abs(a - b).max()
             for a, b in zip(runs[1][0], without_dropout)) > 1e-4


@pytest.mark.slow  # XLA compiles for about 20 s
def test_accumulated_step_compiles_with_xla_and_equals_the_whole_batch():
  """The K-slice loop, its updates and the metrics: one XLA cluster (as a
  TPU runs it), with the weights of the uncompiled whole-batch step."""
  runs = {}
  for steps, jit in ((1, False), (K, True)):
    model = make_model()
    optimizer = optimization.create_optimizer("lamb", 1e-2, 10, 2)
    runner = runner_for(model, optimizer, steps)
    step = tf.function(runner.replica_train_step, jit_compile=jit)
    if jit:
      hlo = step.experimental_get_compiler_ir(make_batch())(stage="hlo")
      assert "while" in hlo and "dot(" in hlo
    for seed in range(3):
      step(make_batch(seed))
    assert int(optimizer.iterations.numpy()) == 3
    runs[steps] = [v.numpy() for v in model.trainable_variables]
  for one, accumulated in zip(runs[1], runs[K]):
    np.testing.assert_allclose(accumulated, one, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_accumulates_in_float32(policy):
  """float16: the loss scale multiplies each slice's loss and is divided
  out once from the float32 sum; the update is K=1's up to 16-bit
  rounding."""
  runs = {}
  for steps in (1, K):
    tf_keras.utils.set_random_seed(1)
    model = AlbertPretrainer(AlbertEncoder(CONFIG, dtype=policy))
    optimizer = optimization.create_optimizer("adamw", 1e-3, 10, 2)
    if policy == "mixed_float16":
      optimizer = tf_keras.mixed_precision.LossScaleOptimizer(optimizer)
    runner = runner_for(model, optimizer, steps)
    step = tf.function(runner.replica_train_step)
    for seed in range(2):
      step(make_batch(seed))
    assert int(optimizer.iterations.numpy()) == 2
    runs[steps] = [v.numpy() for v in model.trainable_variables]
  assert all(v.dtype == np.float32 for v in runs[K])
  worst = max(float(np.abs(a - b).max()) for a, b in zip(runs[1], runs[K]))
  assert worst < 1e-4, worst  # one update moves weights by about 1e-3


def test_steps_must_divide_the_per_replica_batch():
  runtime = RuntimeParams(output_dir="x", gradient_accumulation_steps=4)
  check_accumulation(runtime, 16, 2)  # 8 sequences a replica: 4 slices of 2
  with pytest.raises(UserInputError, match=(
      r"^--gradient_accumulation_steps=4 does not divide the per-replica "
      r"batch 6 \(--train_batch_size=12 over 2 replicas\)$")):
    check_accumulation(runtime, 12, 2)


@pytest.mark.slow  # make test: the whole-batch test above
def test_length_bucketed_batches_accumulate_exactly():
  """--length_buckets: the step is traced with an unknown sequence length
  (a batch of 32 tokens, then one of 16); the slices keep it dynamic."""
  runs = {}
  for steps in (1, K):
    model = make_model()
    runner = runner_for(model, optimization.create_optimizer("lamb", 1e-2,
                                                             10, 2), steps)
    spec = {k: tf.TensorSpec([BATCH] + [None] * (v.shape.rank - 1), v.dtype)
            for k, v in make_batch().items()}
    step = tf.function(runner.replica_train_step, input_signature=[spec])
    step(make_batch(0))
    short = dict(make_batch(1))
    for name in ("input_word_ids", "input_mask", "input_type_ids"):
      short[name] = short[name][:, :16]
    short["masked_lm_positions"] = tf.minimum(short["masked_lm_positions"], 15)
    step(short)
    runs[steps] = [v.numpy() for v in model.trainable_variables]
  for one, accumulated in zip(runs[1], runs[K]):
    np.testing.assert_allclose(accumulated, one, rtol=1e-5, atol=1e-5)
