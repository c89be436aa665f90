"""The run's plan, kept in its output folder, and its manifest.

The plan decides every shard from the inputs alone: shard k of input file
f holds that file's records k*R .. (k+1)*R - 1 (R = --rows_per_shard) and
is named `part-<f>-<k>.<ext>` (its bad rows, with --skip_bad_rows,
`rejects-<f>-<k>.jsonl`, written before the shard). A shard under its
final name is finished, so a rerun after a crash or SIGKILL recomputes only
the missing ones and ends with the same files as an uninterrupted run.

`predict_run.json` records the plan's inputs (the model, each input file
with its size and modification time, the settings that change the output)
at the first run; a rerun with other inputs or settings into the same
folder is refused rather than mixing two runs' shards.

`manifest.json`, written last, lists per input file its records, good rows
written, bad rows and shards. It has no timestamps: an interrupted run,
resumed, writes the same manifest as an uninterrupted one.
"""

import dataclasses
import json
from typing import Any, Dict, List, Sequence

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf.prediction.options import PredictOptions
from albert_tf.prediction.writers import EXTENSIONS

PLAN_FILE = "predict_run.json"
MANIFEST_FILE = "manifest.json"
# Settings that change the output files (the others change only speed or
# what is logged).
_PLAN_SETTINGS = ("model", "output_format", "input_format", "text_column",
                  "text_b_column", "context_column", "question_column",
                  "id_column", "embeddings", "choices_column", "runtime",
                  "rows_per_shard", "skip_bad_rows")


def shard_name(file_index: int, shard: int, output_format: str) -> str:
  return f"part-{file_index:05d}-{shard:05d}{EXTENSIONS[output_format]}"


def rejects_name(file_index: int, shard: int) -> str:
  return f"rejects-{file_index:05d}-{shard:05d}.jsonl"


def plan(options: PredictOptions, files: Sequence[str]) -> Dict[str, Any]:
  """What a rerun must find unchanged."""
  inputs = []
  for path in files:
    size, mtime = file_io.stat(path)
    inputs.append({"path": path, "size": size, "mtime_ns": mtime})
  settings = dataclasses.asdict(options)
  return {"settings": {k: settings[k] for k in _PLAN_SETTINGS},
          "inputs": inputs}


def check_plan(output_dir: str, current: Dict[str, Any]) -> bool:
  """Whether the folder holds this run's plan (a resumed run); False when
  it holds none.

  Raises:
    UserInputError: the folder holds another run's plan.
  """
  path = file_io.join(output_dir, PLAN_FILE)
  if not file_io.exists(path):
    return False
  saved = file_io.read_json_object(path, "prediction plan")
  if saved == json.loads(json.dumps(current)):
    return True
  what = "the input files (or their sizes or times)"
  for key, value in current["settings"].items():
    if saved.get("settings", {}).get(key) != value:
      what = f"--{key}"
      break
  raise UserInputError(
      f"--output_dir={output_dir} holds the shards of another run ({what} "
      f"changed since {path} was written); use a new --output_dir, or "
      "remove it to start over")


def write_plan(output_dir: str, current: Dict[str, Any]) -> None:
  """predict_run.json (a first run's), published atomically."""
  file_io.write_json_atomic(file_io.join(output_dir, PLAN_FILE), current)


@dataclasses.dataclass
class FileCounts:
  """What one input file gave."""
  path: str
  records: int = 0
  bad_rows: int = 0
  shards: List[str] = dataclasses.field(default_factory=list)
  rejects: List[str] = dataclasses.field(default_factory=list)

  @property
  def rows(self) -> int:
    return self.records - self.bad_rows


def write_manifest(output_dir: str, kind: str, output_format: str,
                   counts: Sequence[FileCounts]) -> Dict[str, Any]:
  """manifest.json (module docstring), published atomically; its value."""
  manifest = {
      "kind": kind, "output_format": output_format,
      "rows": sum(c.rows for c in counts),
      "bad_rows": sum(c.bad_rows for c in counts),
      "inputs": [{"path": c.path, "records": c.records, "rows": c.rows,
                  "bad_rows": c.bad_rows, "shards": c.shards,
                  "rejects": c.rejects} for c in counts]}
  file_io.write_json_atomic(file_io.join(output_dir, MANIFEST_FILE),
                            manifest)
  return manifest
