"""Every way to run the shared layer gives what it gave before issue 49's
redesign (one block, one loop), on weights and files written by the code
before it (tests/data/shared_layer/write_fixtures.py): the layers' path,
the fused path, packed rows, output_positions, seeded dropout, recomputed
gradients and every form of the early-exit loop, to 1e-6; and the
checkpoint and tf_keras SavedModel written then still load."""

import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from albert_tf.layers.checkpointed_dropout import seeded
from tests.data.shared_layer import write_fixtures as fixtures

HERE = os.path.dirname(os.path.abspath(fixtures.__file__))
# Relative to the largest recorded value (1 for activations; gradients run
# to ~700 here, where float32 rounding alone is ~1e-4).
TOLERANCE = 1e-6


@pytest.fixture(scope="module")
def recorded():
  with np.load(os.path.join(HERE, "outputs.npz")) as data:
    return dict(data)


@pytest.fixture(scope="module")
def models():
  model = fixtures.build()
  tf.train.Checkpoint(model=model).read(
      os.path.join(HERE, "checkpoint", "model")).assert_consumed()
  dropout_model = fixtures.build(dropout=0.1)
  dropout_model.dropout.rate = 0.0
  fixtures.copy_weights(model, dropout_model)
  return model, dropout_model


def _unchanged(actual, expected, name):
  assert actual.shape == expected.shape, name
  if actual.dtype.kind in "iu":
    np.testing.assert_array_equal(actual, expected, err_msg=name)
  else:
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    np.testing.assert_allclose(actual, expected, rtol=0,
                               atol=TOLERANCE * scale, err_msg=name)


def test_every_way_to_run_the_layer_gives_the_recorded_outputs(models,
                                                                recorded):
  # The early-exit classifier's training outputs draw their dropout per
  # block now (test_early_exit checks them against the encoder's).
  actual = fixtures.outputs(*models)
  compared = sorted(set(recorded) - {k for k in recorded
                                     if k.startswith("dropout_classifier/")})
  assert len(compared) > 80 and set(compared) <= set(actual)
  for name in compared:
    _unchanged(actual[name], recorded[name], name)


def test_the_saved_model_written_before_loads_with_todays_classes(recorded):
  encoder = tf_keras.models.load_model(os.path.join(HERE, "savedmodel"))
  data = {k: tf.constant(v) for k, v in fixtures.inputs().items()}
  assert type(encoder).__module__ == "albert_tf.networks.albert_encoder"
  for prefix, fused in (("layers", False), ("fused", True)):
    encoder.fused_inference = fused
    out = encoder(data, training=False)
    for key in ("sequence_output", "pooled_output"):
      _unchanged(np.asarray(out[key]), recorded[f"{prefix}/{key}"], key)
  with seeded(tf.constant(fixtures.SEED, tf.int64)):
    out = encoder(data, output_positions=fixtures.positions())
  _unchanged(np.asarray(out["sequence_output_at_positions"]),
             recorded["fused_positions/sequence_output_at_positions"],
             "at positions")
