"""The shared-layer A/B harness runs at a tiny size: the old tree's modules
load beside this tree's without replacing them, both models get the same
weights and give the same outputs, and a row per workload is timed."""

import json
import os
import shutil

import numpy as np

from benchmarks.investigations import layer_redesign

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def test_the_ab_harness_times_every_workload_on_two_module_sets(tmp_path):
  import albert_tf
  before = tmp_path / "before"  # a copy of this tree as the old one
  for package in ("albert_tf", "albert_common", "data_pipeline"):
    shutil.copytree(os.path.join(REPO, package), before / package)
  old, _, _ = layer_redesign.import_before(str(before))
  assert old is not albert_tf and old.AlbertEncoder is not (
      albert_tf.AlbertEncoder)
  import tf_keras
  assert tf_keras.saving.get_registered_object(
      "albert_tf>AlbertEncoder") is albert_tf.AlbertEncoder
  config = dict(vocab_size=50, embedding_size=8, hidden_size=32,
                num_hidden_layers=2, num_attention_heads=2,
                intermediate_size=32, max_position_embeddings=32)
  path = tmp_path / "tiny.json"
  path.write_text(json.dumps(config))
  rows = layer_redesign.main([
      f"--before_dir={before}", f"--size={path}", "--batch_size=2",
      "--seq_length=16", "--patience=1", "--repeats=2"])
  assert [row[0] for row in rows] == [
      "pretraining step 2 x 16", "serving batch 1 x 16",
      "serving batch 32 x 16", "early exit, patience 1, 32 x 16"]
  for _, before, after, ratio in rows:
    assert float(before) > 0 and float(after) > 0
    np.testing.assert_allclose(float(ratio), float(after) / float(before),
                               rtol=0.02)
