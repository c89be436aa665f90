"""--export_dir of a fine-tuning run: someone else's folder stops the run
before training; a rerun finds its own export and leaves or replaces it."""

import json
import os

import pytest

from albert_common.errors import UserInputError
from albert_tf.training.finetuning import export_once


def _export(folder):
  os.makedirs(folder)
  with open(os.path.join(folder, "saved_model.pb"), "w") as f:
    f.write(os.path.basename(folder))


def test_first_export_then_rerun_then_a_newer_best(tmp_path):
  out, export = str(tmp_path / "run"), str(tmp_path / "export")
  os.makedirs(out)
  calls = []

  def export_fn(folder):
    calls.append(folder)
    _export(folder)

  export_once.check_export_dir(export, out)  # missing: fine
  assert export_once.export_restored(export, out, f"{out}/best/ckpt-200",
                                     export_fn)
  with open(os.path.join(out, "export.json")) as f:
    assert json.load(f) == {"export_dir": export, "checkpoint": "ckpt-200"}
  export_once.check_export_dir(export, out)  # its own: fine
  assert not export_once.export_restored(export, out, f"{out}/best/ckpt-200",
                                         export_fn)
  assert calls == [export]
  assert export_once.export_restored(export, out, f"{out}/best/ckpt-300",
                                     export_fn)
  assert calls == [export, export]
  with open(os.path.join(out, "export.json")) as f:
    assert json.load(f)["checkpoint"] == "ckpt-300"


def test_someone_elses_folder_is_refused_before_training(tmp_path):
  out, export = str(tmp_path / "run"), str(tmp_path / "export")
  os.makedirs(out)
  _export(export)
  with pytest.raises(UserInputError, match=(
      f"--export_dir {export} already exists and the run in "
      f"--output_dir={out} did not write it; remove it or choose another")):
    export_once.check_export_dir(export, out)
  with pytest.raises(UserInputError, match="did not write it"):
    export_once.export_restored(export, out, "ckpt-1", _export)
  assert os.listdir(export) == ["saved_model.pb"]
