"""Accumulation's claims that the slow tests prove on whole runs, each on
the tiny pretrainer of test_accumulation.py in seconds: K=4 slices give
the whole batch's gradients compiled by XLA and under mixed_bfloat16, and
K=2 under MirroredStrategy (2 logical CPUs) gives one device's update.

Gradients are compared, not only weights after an update: LAMB and AdamW
normalise the update, so a gradient off by a constant factor would leave
the weights nearly unchanged."""

import json
import os
import subprocess
import sys

import numpy as np
import tensorflow as tf
import tf_keras

from albert_tf import optimization
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.networks.albert_encoder import AlbertEncoder
from tests.albert_tf.training.pretraining import test_accumulation as case

ROOT = os.path.abspath(os.path.join(__file__, "../../../../.."))


def _whole_and_accumulated(model, jit_compile: bool):
  """float32 gradients [per variable] of the whole batch (uncompiled) and
  of its K=4 slices (the accumulation loop, compiled when asked)."""
  runner = case.runner_for(
      model, optimization.create_optimizer("lamb", 1e-3, 10), case.K)
  batch = case.make_batch()
  weight = tf.reduce_sum(batch["masked_lm_weights"])
  whole = tf.function(runner._forward_backward_fn)(batch, weight)[0]
  accumulated = tf.function(runner._accumulated_gradients,
                            jit_compile=jit_compile)(batch, weight)
  return ([tf.cast(tf.convert_to_tensor(g), tf.float32).numpy()
           for g in whole],
          [tf.cast(tf.convert_to_tensor(g), tf.float32).numpy()
           for g in accumulated])


def _relative_error(want, got):
  """||got - want|| / ||want|| over all gradients."""
  return float(np.sqrt(sum(np.sum((g - w) ** 2) for w, g in zip(want, got))
                       / sum(np.sum(w ** 2) for w in want)))


def test_xla_compiled_slices_give_the_whole_batch_gradients():
  whole, accumulated = _whole_and_accumulated(case.make_model(),
                                              jit_compile=True)
  assert len(whole) == len(accumulated) > 20
  for w, a in zip(whole, accumulated):
    np.testing.assert_allclose(a, w, rtol=1e-5, atol=1e-6)
  assert _relative_error(whole, accumulated) < 1e-5


def test_mixed_bfloat16_slices_give_the_whole_batch_gradients():
  """In float32 sums of bfloat16 slices: within 1% of the whole batch's
  gradients (bfloat16 keeps 8 bits of mantissa: the slices' matmuls round
  differently from the whole batch's)."""
  tf_keras.utils.set_random_seed(1)
  model = AlbertPretrainer(AlbertEncoder(case.CONFIG,
                                         dtype="mixed_bfloat16"))
  model({k: v for k, v in case.make_batch().items()
         if k in ("input_word_ids", "input_mask", "input_type_ids",
                  "masked_lm_positions")})
  whole, accumulated = _whole_and_accumulated(model, jit_compile=False)
  error = _relative_error(whole, accumulated)
  assert error < 1e-2, error


def test_mirrored_two_replicas_accumulate_as_one_device():
  """tests/scripts/mirrored_accumulation_script.py: one LAMB update under
  MirroredStrategy with K=2 equals the one-device K=1 update, and the
  gradient norms (clipping off) are the one device's."""
  process = subprocess.run(
      [sys.executable, os.path.join(ROOT, "tests", "scripts",
                                    "mirrored_accumulation_script.py")],
      cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
  assert process.returncode == 0, process.stderr[-3000:]
  result = json.loads(process.stdout.strip().splitlines()[-1])
  assert result["replicas"] == 2
  assert result["moved"] > 1e-3  # the update moved the weights
  assert result["mirrored_k2_difference"] < 1e-6, result
  assert abs(result["mirrored_k2_norm"] - result["one_device_norm"]) <= (
      1e-5 * result["one_device_norm"]), result
