"""The exports of the shared-layer fixture's checkpoint give what they gave
before issue 49's redesign (one block, one loop), to 1e-6: the encoder's
SavedModel export and its LiteRT float32 and ONNX files; the early-exit
classifier's export (its exit loop at patience 1, full depth, the
unbranched loop), its LiteRT file (the unbranched loop) and ONNX files (full
depth, and the exit loop as an ONNX Loop). The recorded outputs were
written by the code before it (tests/data/shared_layer/
write_export_fixtures.py): each export is compared with the same export
then, so a runtime's own rounding (LiteRT and ONNX Runtime differ from the
SavedModel by up to 7e-7 here) does not count against the redesign."""

import numpy as np
import pytest

from tests.data.shared_layer import write_export_fixtures as writer

TOLERANCE = 1e-6  # relative to the largest recorded value (1 if below)
# Exports whose recorded graph computed something in another op form than
# today's, which moves the runtime's own rounding: the early-exit loop's
# embeddings were the Keras layers' [B, S, E] ops and are 2-D rows now
# (AlbertEmbeddings, the one form every path runs). TensorFlow, LiteRT and
# the full-depth ONNX file give the recorded values exactly; ONNX Runtime's
# Loop differs by 1.07e-6 on one logit of nine (probabilities 2.4e-7).
RUNTIME_ROUNDING = {"classifier_onnx_loop": 2e-6}


@pytest.fixture(scope="module")
def recorded():
  with np.load(writer.OUTPUTS) as data:
    return dict(data)


def _exports_of(kind, recorded, folder):
  model = writer.restored_model((recorded["head/kernel"],
                                 recorded["head/bias"]))
  return writer.run_exports(writer.write_exports(model, str(folder), kind))


def _assert_unchanged(actual, recorded, kind):
  names = sorted(k for k in recorded if k.split("/")[0].startswith(
      (f"savedmodel_{kind}", f"{kind}_")))
  assert names and set(names) <= set(actual), (names, sorted(actual))
  assert len({k.split("/")[0] for k in names}) == (3 if kind == "encoder"
                                                   else 6), names
  for name in names:
    expected = recorded[name]
    assert actual[name].shape == expected.shape, name
    if expected.dtype.kind in "iu":
      np.testing.assert_array_equal(actual[name], expected, err_msg=name)
    else:
      scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
      tolerance = RUNTIME_ROUNDING.get(name.split("/")[0], TOLERANCE)
      np.testing.assert_allclose(actual[name], expected, rtol=0,
                                 atol=tolerance * scale, err_msg=name)


def test_encoder_exports_give_the_recorded_outputs(recorded, tmp_path):
  _assert_unchanged(_exports_of("encoder", recorded, tmp_path), recorded,
                    "encoder")


@pytest.mark.slow  # make test: the encoder's exports above
def test_early_exit_classifier_exports_give_the_recorded_outputs(
    recorded, tmp_path):
  # The recorded heads make the loop exit at different depths.
  exits = recorded["savedmodel_classifier_token_ids/exit_layer"]
  assert sorted(set(exits.tolist())) == [2, 3], exits
  np.testing.assert_array_equal(
      recorded["savedmodel_classifier_token_ids_full_depth/exit_layer"],
      [3, 3, 3])
  _assert_unchanged(_exports_of("classifier", recorded, tmp_path), recorded,
                    "classifier")

