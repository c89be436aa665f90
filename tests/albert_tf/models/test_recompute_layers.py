"""--recompute_layers: the same gradients and dropout masks, recomputed."""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from albert_tf.layers.checkpointed_dropout import seeded
from albert_tf.layers.feed_forward_sublayer import FeedForwardSublayer
from albert_tf.networks.albert_encoder import AlbertEncoder

POSITIONS = np.array([[1, 4, 6], [2, 3, 9], [0, 5, 7]], np.int32)


def _encoder(config, recompute, dropout=0.0, dtype=None):
  tf_keras.utils.set_random_seed(3)  # the same weights and generator seeds
  config = dataclasses.replace(config, hidden_dropout_prob=dropout,
                               attention_probs_dropout_prob=dropout)
  return AlbertEncoder(config, dtype=dtype, recompute_layers=recompute)


def _gradients(encoder, inputs, mode, at_positions=False):
  """Gradients [per trainable variable] of a loss reading every output."""

  def step():
    with tf.GradientTape() as tape:
      if at_positions:
        outputs = encoder(inputs, training=True, output_positions=POSITIONS)
        sequence = outputs["sequence_output_at_positions"]
      else:
        outputs = encoder(inputs, training=True)
        sequence = outputs["sequence_output"]
      loss = (tf.reduce_sum(tf.square(tf.cast(sequence, tf.float32)))
              + tf.reduce_sum(tf.cast(outputs["pooled_output"], tf.float32)))
    grads = tape.gradient(loss, encoder.trainable_variables)
    assert all(g is not None for g in grads)
    return [tf.convert_to_tensor(g) for g in grads]

  if mode == "eager":
    return step()
  return tf.function(step, jit_compile=mode == "jit")()


def _relative_error(expected, actual):
  """||actual - expected|| / ||expected|| over all gradients (float32)."""
  diff = [tf.cast(a, tf.float32) - tf.cast(e, tf.float32)
          for e, a in zip(expected, actual)]
  return float(tf.linalg.global_norm(diff)
               / tf.linalg.global_norm([tf.cast(e, tf.float32)
                                        for e in expected]))


@pytest.mark.parametrize("mode", ["eager", "function", "jit"])
def test_recomputed_gradients_equal(tiny_config, encoder_inputs, mode):
  plain = _encoder(tiny_config, recompute=False)
  recomputed = _encoder(tiny_config, recompute=True)
  num_variables = len(recomputed.variables)
  expected = _gradients(plain, encoder_inputs, mode)
  actual = _gradients(recomputed, encoder_inputs, mode)
  assert _relative_error(expected, actual) < 1e-6
  # Every variable got a gradient; none was created inside the recomputation.
  assert len(recomputed.variables) == num_variables
  assert min(float(tf.reduce_max(tf.abs(g))) for g in actual[-4:]) > 0


@pytest.mark.parametrize("mode", ["function"])
def test_recomputed_dropout_draws_the_same_masks(tiny_config, encoder_inputs,
                                                 mode):
  plain = _encoder(tiny_config, recompute=False, dropout=0.2)
  recomputed = _encoder(tiny_config, recompute=True, dropout=0.2)
  expected = _gradients(plain, encoder_inputs, mode, at_positions=True)
  actual = _gradients(recomputed, encoder_inputs, mode, at_positions=True)
  assert _relative_error(expected, actual) < 1e-6
  # Dropout was on: the gradients are not those without it.
  no_dropout = _gradients(_encoder(tiny_config, recompute=False),
                          encoder_inputs, mode, at_positions=True)
  assert _relative_error(no_dropout, expected) > 1e-2


def test_naive_recomputation_of_stateful_dropout_differs():
  """Recomputing a generator-drawn dropout draws a new mask in the backward
  pass; one seed drawn outside and `seeded` inside draws the same one."""
  tf_keras.utils.set_random_seed(5)
  ffn = FeedForwardSublayer(hidden_size=16, intermediate_size=32,
                            hidden_act="gelu", initializer_range=0.2,
                            dropout_rate=0.3)
  x = tf.random.stateless_normal([2, 8, 16], seed=[1, 2])
  ffn(x)  # built before any recomputation

  def grads(run):
    state = ffn.dropout.rng.state.numpy()
    with tf.GradientTape() as tape:
      loss = tf.reduce_sum(tf.square(run(x)))
    result = tape.gradient(loss, ffn.trainable_variables)
    ffn.dropout.rng.reset(state)  # the next run draws as this one did
    return result

  def plain(x):
    return ffn(x, training=True)

  def seeded_run(x, seed):
    with seeded(seed):
      return ffn(x, training=True)

  expected = grads(plain)
  naive = grads(tf.recompute_grad(plain))
  assert _relative_error(expected, naive) > 0.05

  seed = ffn.dropout.rng.make_seeds(1)[:, 0]
  seeded_expected = grads(lambda x: seeded_run(x, seed))
  seeded_recomputed = grads(tf.recompute_grad(lambda x: seeded_run(x, seed)))
  assert _relative_error(seeded_expected, seeded_recomputed) < 1e-6


def test_recomputed_mixed_bfloat16(tiny_config, encoder_inputs):
  plain = _encoder(tiny_config, recompute=False, dtype="mixed_bfloat16")
  recomputed = _encoder(tiny_config, recompute=True, dtype="mixed_bfloat16")
  expected = _gradients(plain, encoder_inputs, "function", at_positions=True)
  actual = _gradients(recomputed, encoder_inputs, "function",
                      at_positions=True)
  assert recomputed.trainable_variables[0].dtype == tf.float32
  assert _relative_error(expected, actual) < 1e-2


def test_recompute_layers_is_a_constructor_option(tiny_config):
  encoder = AlbertEncoder(tiny_config, recompute_layers=True)
  config = encoder.get_config()
  assert config["recompute_layers"] is True
  assert "recompute_layers" not in config["config"]  # not albert_config.json
  assert AlbertEncoder.from_config(config).recompute_layers


def test_finetuning_builds_the_encoder_with_recompute_layers(tiny_config):
  from albert_common.errors import UserInputError
  from albert_tf.training.finetuning import params as finetuning_params
  from albert_tf.training.finetuning.runner import build_encoder
  from albert_tf.training.runtime_params import RuntimeParams
  params = finetuning_params.FinetuningParams(
      runtime=RuntimeParams(output_dir="ram://ft", recompute_layers=True),
      do_train=True)
  assert build_encoder(params, tiny_config).recompute_layers
  exported = dataclasses.replace(params, init_savedmodel="ram://export")
  with pytest.raises(UserInputError,
                     match="--recompute_layers needs the encoder built here"):
    finetuning_params._check_actions_and_sources(exported)


@pytest.mark.slow
def test_the_recomputed_training_step_compiles_with_xla_in_bfloat16(
    pretraining_records):
  """The whole pretraining step with dropout, recomputation, bfloat16 and
  jit_compile (as a TPU runs it): every variable gets a finite gradient."""
  from albert_tf import optimization
  from albert_tf.config import AlbertConfig
  from albert_tf.models.albert_pretrainer import AlbertPretrainer
  from albert_tf.training.pretraining.runner import PretrainingRunner
  from data_pipeline.pretraining import reader as pretraining_input
  config = AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=32,
                        hidden_dropout_prob=0.1,
                        attention_probs_dropout_prob=0.1)
  model = AlbertPretrainer(AlbertEncoder(config, dtype="mixed_bfloat16",
                                         recompute_layers=True))
  optimizer = optimization.create_optimizer("lamb", 1e-2, 100, 10)
  runner = PretrainingRunner(tf.distribute.get_strategy(), model, optimizer,
                             global_batch_size=8)
  batch = next(iter(pretraining_input.pretraining_dataset(
      pretraining_records["path"], 8, pretraining_records["max_seq_length"],
      pretraining_records["max_predictions_per_seq"], seed=1)))
  step = tf.function(runner.replica_train_step, jit_compile=True)
  before = [v.numpy() for v in model.trainable_variables]
  num_variables = len(model.variables)
  for _ in range(2):
    step(batch)
  assert int(optimizer.iterations.numpy()) == 2
  assert len(model.variables) == num_variables
  assert np.isfinite(float(runner.gradient_norm.result()))
  moved = [np.abs(v.numpy() - b).max()
           for v, b in zip(model.trainable_variables, before)]
  assert min(moved) > 0  # every variable had a gradient
  tf_keras.backend.clear_session()


@pytest.mark.parametrize("recompute", [False, True])
def test_an_encoder_with_dropout_saves_after_training(tiny_config,
                                                      encoder_inputs,
                                                      recompute, tmp_path):
  """Keras traces each sublayer's call on its own when saving; the seeded
  dropout's seed (a tensor of the encoder's trace) must not be captured
  there, or every export of a model with dropout fails ('captures graph
  tensor ... from a parent function')."""
  encoder = _encoder(tiny_config, recompute, dropout=0.1)
  encoder(encoder_inputs, training=True)
  tf.saved_model.save(encoder, str(tmp_path / "encoder"))
  reloaded = tf.saved_model.load(str(tmp_path / "encoder"))
  np.testing.assert_allclose(
      reloaded(encoder_inputs, training=False)["pooled_output"],
      encoder(encoder_inputs, training=False)["pooled_output"], atol=1e-5)
