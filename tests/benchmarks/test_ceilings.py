"""benchmarks.ceilings: one FLOPs count for every speed row, against
albert_tf.parameters_and_flops and a count by hand of the skipped work."""

import pytest

from albert_tf import parameters_and_flops
from albert_tf.config import AlbertConfig
from benchmarks import ceilings

CONFIG = AlbertConfig(vocab_size=100, embedding_size=8, hidden_size=16,
                      num_hidden_layers=3, num_attention_heads=2,
                      intermediate_size=32, max_position_embeddings=64)


def test_every_position_equals_the_model_flops_per_token():
  # 2 H^2 = 512 divides by 16: the per-token pooler is exact.
  per_token = parameters_and_flops.flops_per_token(CONFIG, 16)
  assert ceilings.encoder_flops(CONFIG, 16) == 16 * per_token[
      "encoder_forward"]
  assert ceilings.encoder_flops(CONFIG, 16, training=True) == 16 * (
      per_token["encoder_training"])
  assert ceilings.encoder_flops(CONFIG, 16, last_positions=16) == (
      ceilings.encoder_flops(CONFIG, 16))


def test_a_last_block_at_cls_is_credited_its_keys_and_values_only():
  # H=16, I=32, S=16: a position's block work 8 H^2 + 4 H I + 4 S H
  # = 2048 + 2048 + 1024 = 5120; keys and values 4 H^2 = 1024. At one
  # position the last block does 16 x 1024 + 1 x (5120 - 1024).
  full = ceilings.encoder_flops(CONFIG, 16)
  cls = ceilings.encoder_flops(CONFIG, 16, last_positions=1)
  assert full - cls == 16 * 5120 - (16 * 1024 + 4096)
  assert ceilings.encoder_flops(CONFIG, 16, 5, training=True) == (
      3 * ceilings.encoder_flops(CONFIG, 16, 5))
  assert ceilings.rate_at_peak(1e12, 2e9) == pytest.approx(500.0)


def test_the_pretraining_ceiling_counts_ours_own_work():
  from benchmarks.pretraining import step
  ours = step.ours_training_flops(CONFIG, 2, 16)
  model = step.training_flops(CONFIG, 2, 16)
  # The last block at [CLS] and the 20 masked positions (>= 16: all).
  assert ours == pytest.approx(model, rel=1e-9)
  ours = step.ours_training_flops(CONFIG, 2, 64)
  assert ours < step.training_flops(CONFIG, 2, 64)


def test_the_early_exit_ceiling_is_the_faster_of_scaled_depth_and_cut():
  """A static cut faster than full depth scaled (per-layer time that
  grows with depth) becomes the ceiling; otherwise the scaled figure is.
  Either way no static cut at the mean depth runs under it."""
  from benchmarks.serving import early_exit_report
  # Cut times: 1.0, 1.5, 2.0, 2.5 ms; full depth (4) 8.0 ms.
  curve = {"static cut": [(1.0, 0.5, 1), (1.5, 0.5, 2), (2.0, 0.5, 3),
                          (8.0, 0.5, 4)]}
  ms, label = early_exit_report.ceiling(curve, 2.5, 4)
  assert abs(ms - 1.75) < 1e-9 and label.startswith("static cut")
  curve = {"static cut": [(3.0, 0.5, 1), (5.0, 0.5, 2), (6.5, 0.5, 3),
                          (8.0, 0.5, 4)]}
  ms, label = early_exit_report.ceiling(curve, 2.0, 4)
  assert ms == 4.0 and label.startswith("full depth x 2.00/4")
  assert early_exit_report.cut_at_depth(curve, 4.0) == 8.0
  assert early_exit_report.cut_at_depth(curve, 1.0) == 3.0
