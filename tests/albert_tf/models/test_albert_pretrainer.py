"""AlbertPretrainer: MLM at masked positions with a tied decoder, SOP head."""

import math

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import AlbertEncoder
from albert_tf import AlbertPretrainer


@pytest.fixture
def pretrainer(tiny_config):
  return AlbertPretrainer(AlbertEncoder(tiny_config))


@pytest.fixture
def pretrain_inputs(encoder_inputs):
  positions = np.array([[1, 4, 7, 0], [2, 3, 0, 0], [5, 0, 0, 0]], np.int32)
  return dict(encoder_inputs, masked_lm_positions=positions)


def _layer_norm(x, gamma, beta):
  mean = x.mean(-1, keepdims=True)
  var = ((x - mean) ** 2).mean(-1, keepdims=True)
  return (x - mean) / np.sqrt(var + 1e-12) * gamma + beta


def test_output_shapes(pretrainer, pretrain_inputs):
  outputs = pretrainer(pretrain_inputs)
  assert outputs["mlm_logits"].shape == (3, 4, 97)
  assert outputs["sop_logits"].shape == (3, 2)
  assert outputs["mlm_logits"].dtype == tf.float32


def test_mlm_logits_match_official_head(pretrainer, pretrain_inputs):
  """cls/predictions of the official model, in NumPy, at the positions."""
  outputs = pretrainer(pretrain_inputs)
  w = {v.name[:-2]: v.numpy().astype(np.float64)
       for v in pretrainer.trainable_variables}
  encoder_outputs = pretrainer.encoder(
      {k: v for k, v in pretrain_inputs.items() if k != "masked_lm_positions"})
  sequence = encoder_outputs["sequence_output"].numpy().astype(np.float64)
  positions = pretrain_inputs["masked_lm_positions"]
  gathered = np.take_along_axis(sequence, positions[..., None], axis=1)
  x = gathered @ w["masked_lm/transform/kernel"] + w["masked_lm/transform/bias"]
  x = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
  x = _layer_norm(x, w["masked_lm/layer_norm/gamma"],
                  w["masked_lm/layer_norm/beta"])
  logits = x @ w["embeddings/word_embeddings/embeddings"].T + w[
      "masked_lm/output_bias"]
  np.testing.assert_allclose(outputs["mlm_logits"], logits, atol=1e-5)
  sop = encoder_outputs["pooled_output"].numpy() @ w[
      "sentence_order/dense/kernel"] + w[
      "sentence_order/dense/bias"]
  np.testing.assert_allclose(outputs["sop_logits"], sop, atol=1e-5)


def test_decoder_is_tied_to_word_embeddings(pretrainer, pretrain_inputs):
  table = pretrainer.encoder.get_embedding_table()
  names = [v.name for v in pretrainer.trainable_variables]
  assert len(names) == len(set(names))
  assert sum("word_embeddings" in n for n in names) == 1
  # Encoder variables + transform (2) + LayerNorm (2) + output bias + SOP (2).
  assert len(names) == len(pretrainer.encoder.trainable_variables) + 7
  with tf.GradientTape() as tape:
    logits = pretrainer(pretrain_inputs)["mlm_logits"]
    # Only the decoder path touches rows never fed as input ids.
    loss = tf.reduce_sum(logits[..., :5])
  gradient = tf.convert_to_tensor(tape.gradient(loss, table))
  assert gradient.shape == (97, 16)
  assert np.abs(gradient.numpy()[:5]).sum() > 0  # rows 0-4: decoder only


def test_changing_the_table_changes_the_logits(pretrainer, pretrain_inputs):
  before = pretrainer(pretrain_inputs)["mlm_logits"].numpy()
  table = pretrainer.encoder.get_embedding_table()
  table.assign(table * 2.0)
  after = pretrainer(pretrain_inputs)["mlm_logits"].numpy()
  assert np.abs(after - before).max() > 1e-2


def test_get_config_round_trip(pretrainer, pretrain_inputs):
  clone = AlbertPretrainer.from_config(pretrainer.get_config())
  clone.set_weights(pretrainer.get_weights())
  for key in ("mlm_logits", "sop_logits"):
    np.testing.assert_allclose(clone(pretrain_inputs)[key],
                               pretrainer(pretrain_inputs)[key], atol=1e-6)


def test_mixed_precision_logits_are_float32(tiny_config, pretrain_inputs):
  full = AlbertPretrainer(AlbertEncoder(tiny_config))
  mixed = AlbertPretrainer(AlbertEncoder(tiny_config, dtype="mixed_bfloat16"))
  mixed.set_weights(full.get_weights())
  outputs = mixed(pretrain_inputs)
  assert outputs["mlm_logits"].dtype == tf.float32
  assert outputs["sop_logits"].dtype == tf.float32
  np.testing.assert_allclose(outputs["mlm_logits"],
                             full(pretrain_inputs)["mlm_logits"], atol=0.15)


@pytest.mark.parametrize("overrides", [
    dict(),
    dict(inner_group_num=2),
    dict(num_hidden_layers=3, num_hidden_groups=3),
    dict(share_parameters="none"),
    dict(share_parameters="attention"),
    dict(num_hidden_layers=1),
])
def test_last_block_at_positions_equals_full_encoder(tiny_config, overrides,
                                                     pretrain_inputs):
  """The pretrainer's encoder computes its last block only at [CLS] and the
  masked positions; outputs and gradients equal the full encoder's."""
  import dataclasses
  config = dataclasses.replace(tiny_config, **overrides)
  encoder = AlbertEncoder(config)
  inputs = {k: v for k, v in pretrain_inputs.items()
            if k != "masked_lm_positions"}
  positions = pretrain_inputs["masked_lm_positions"]
  with tf.GradientTape(persistent=True) as tape:
    full = encoder(inputs)
    gathered = tf.gather(full["sequence_output"], positions, batch_dims=1)
    fast = encoder(inputs, output_positions=positions)
    full_loss = tf.reduce_sum(gathered ** 2) + tf.reduce_sum(
        full["pooled_output"] ** 3)
    fast_loss = tf.reduce_sum(
        fast["sequence_output_at_positions"] ** 2) + tf.reduce_sum(
            fast["pooled_output"] ** 3)
  assert fast["sequence_output_at_positions"].shape == (3, 4, 32)
  np.testing.assert_allclose(fast["sequence_output_at_positions"], gathered,
                             atol=1e-5)
  np.testing.assert_allclose(fast["pooled_output"], full["pooled_output"],
                             atol=1e-5)
  variables = encoder.trainable_variables
  for full_grad, fast_grad, v in zip(tape.gradient(full_loss, variables),
                                     tape.gradient(fast_loss, variables),
                                     variables):
    np.testing.assert_allclose(tf.convert_to_tensor(fast_grad),
                               tf.convert_to_tensor(full_grad), atol=1e-4,
                               err_msg=v.name)
