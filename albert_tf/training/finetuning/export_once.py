"""A fine-tuning run's --export_dir: checked before training, written once.

A rerun of the same command resumes (or finds nothing left to do), so it
must not fail on the export the first run published. The run records what
it exported in <output_dir>/export.json; an --export_dir that exists
without that record is someone else's folder and stops the run before any
training, not after it.

  {"export_dir": "runs/sst2_export", "checkpoint": "ckpt-800"}
"""

import json
from typing import Callable

from absl import logging

from albert_common import file_io
from albert_common.errors import UserInputError

RECORD = "export.json"


def _recorded(output_dir: str) -> dict:
  path = file_io.join(output_dir, RECORD)
  if not file_io.exists(path):
    return {}
  try:
    return json.loads(file_io.read_text(path))
  except (OSError, ValueError):
    return {}


def check_export_dir(export_dir: str, output_dir: str) -> None:
  """Before training: an existing --export_dir must be this run's own.

  Raises:
    UserInputError: it exists and the run in output_dir did not write it.
  """
  if (export_dir and file_io.exists(export_dir) and
      _recorded(output_dir).get("export_dir") != export_dir):
    raise UserInputError(
        f"--export_dir {export_dir} already exists and the run in "
        f"--output_dir={output_dir} did not write it; remove it or choose "
        "another")


def export_restored(export_dir: str, output_dir: str, restored: str,
                    export: Callable[[str], None]) -> bool:
  """Calls export(export_dir) with the weights `restored` (a checkpoint
  path, as FinetuningRunner.restore_best returns it) unless this run already
  exported that checkpoint there. An export of an older checkpoint of this
  run is replaced. Returns whether it exported."""
  checkpoint = file_io.basename(restored)
  record = _recorded(output_dir)
  if file_io.exists(export_dir):
    if record.get("export_dir") != export_dir:  # checked before training too
      check_export_dir(export_dir, output_dir)
    if record.get("checkpoint") == checkpoint:
      logging.info("%s already holds the export of %s", export_dir,
                   checkpoint)
      return False
    logging.info("replacing %s (the export of %s) with that of %s",
                 export_dir, record.get("checkpoint"), checkpoint)
    file_io.rmtree(export_dir)
  export(export_dir)
  file_io.write_json_atomic(file_io.join(output_dir, RECORD),
                            {"export_dir": export_dir,
                             "checkpoint": checkpoint})
  return True
