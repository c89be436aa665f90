"""Where the parts of our fine-tuning run dir or export are, without
TensorFlow (the settings checks read the config and vocabulary from here
before TensorFlow is imported; task_sources reads the weights).

  a run dir (a fine-tuning run's --output_dir): albert_config.json,
    labels.json, and export.json naming the export it wrote, if any;
  an export (run_* --export_dir): saved_model.pb, assets/ holding
    albert_config.json, the vocabulary (`*.model` or a WordPiece `*.txt`),
    labels.txt, labels.json.
"""

import dataclasses
from typing import Dict, Optional, Tuple

from albert_common import file_io
from albert_common.run_constants import EXPORT_TOKENIZER_FILE
from data_pipeline.tasks import label_list as label_list_lib

CONFIG_FILE = "albert_config.json"
EXPORT_RECORD = "export.json"  # finetuning.export_once.RECORD
LABELS_TEXT = "labels.txt"
TOKENIZER_FILE = EXPORT_TOKENIZER_FILE  # {"do_lower_case": bool}


@dataclasses.dataclass(frozen=True)
class SourcePaths:
  """Where a run dir's or export's parts are.

  Attributes:
    prefix: the task model's checkpoint prefix ("" until task_sources
      finds it: a run dir's).
    config_file: its albert_config.json.
    label_dirs: folders that may hold labels.json / labels.txt, in order.
    asset_dir: a folder holding the vocabulary (an export's assets), or "".
    kind: "run" or "export".
  """
  prefix: str
  config_file: str
  label_dirs: Tuple[str, ...]
  asset_dir: str
  kind: str


def export_paths(folder: str) -> Optional[SourcePaths]:
  """The parts of our export at `folder`, or None if it is none."""
  assets = file_io.join(folder, "assets")
  if not (file_io.exists(file_io.join(folder, "saved_model.pb")) and
          file_io.exists(file_io.join(assets, CONFIG_FILE))):
    return None
  return SourcePaths(prefix=file_io.join(folder, "variables", "variables"),
                     config_file=file_io.join(assets, CONFIG_FILE),
                     label_dirs=(assets,), asset_dir=assets, kind="export")


def recorded_export(run_dir: str) -> Optional[SourcePaths]:
  """The export a run recorded in export.json, if it still exists."""
  record = file_io.join(run_dir, EXPORT_RECORD)
  if not file_io.exists(record):
    return None
  export_dir = file_io.read_json_object(record, "export record").get(
      "export_dir", "")
  return export_paths(export_dir) if export_dir else None


def run_paths(run_dir: str, prefix: str = "") -> SourcePaths:
  """The parts of the run dir `run_dir` (its checkpoint `prefix`)."""
  export = recorded_export(run_dir)
  label_dirs = (run_dir,) + (export.label_dirs if export else ())
  return SourcePaths(prefix=prefix,
                     config_file=file_io.join(run_dir, CONFIG_FILE),
                     label_dirs=label_dirs,
                     asset_dir=export.asset_dir if export else "",
                     kind="run")


def vocabulary_of(paths: SourcePaths) -> Tuple[str, str]:
  """(SentencePiece model, WordPiece vocab.txt) among the source's assets
  ("" each when it has none: a run dir that exported nothing)."""
  if not paths.asset_dir:
    return "", ""
  files = sorted(file_io.listdir(paths.asset_dir))
  spm = [f for f in files if f.endswith(".model")]
  if spm:
    return file_io.join(paths.asset_dir, spm[0]), ""
  vocab = [f for f in files if f.endswith(".txt") and f != LABELS_TEXT]
  return "", file_io.join(paths.asset_dir, vocab[0]) if vocab else ""


def recorded_do_lower_case(paths: SourcePaths) -> Optional[bool]:
  """The do_lower_case the source's export recorded, or None (none
  recorded: an export written before it was)."""
  if not paths.asset_dir:
    return None
  path = file_io.join(paths.asset_dir, TOKENIZER_FILE)
  if not file_io.exists(path):
    return None
  value = file_io.read_json_object(path, "tokenizer settings").get(
      "do_lower_case")
  return value if isinstance(value, bool) else None


def find_paths(path: str) -> Optional[SourcePaths]:
  """The parts of a run dir, an export or a checkpoint prefix in a run dir
  (run/ckpt-800, run/best/ckpt-600) at `path`, or None for anything else.
  A run dir's `prefix` is "" (task_sources.find_source picks its
  checkpoint)."""
  if file_io.isdir(path):
    export = export_paths(path)
    if export is not None:
      return export
    if file_io.exists(file_io.join(path, CONFIG_FILE)):
      return run_paths(path)
    return None
  if not file_io.exists(path + ".index"):
    return None
  folder = file_io.dirname(path)
  for run_dir in (folder, file_io.dirname(folder)):
    if run_dir and file_io.exists(file_io.join(run_dir, CONFIG_FILE)):
      return run_paths(run_dir, path)
  return None


def saved_labels(path: str):
  """The labels.json (data_pipeline.tasks.label_list.LabelList) of our run
  dir, export or checkpoint in a run dir at `path`, or None."""
  paths = find_paths(path)
  for folder in paths.label_dirs if paths else ():
    saved = label_list_lib.read(folder)
    if saved is not None:
      return saved
  return None


def folder_files(folder: str) -> Optional[Dict[str, object]]:
  """{"albert_config_file", "spm_model_file" / "vocab_file",
  "do_lower_case"} that our export or run dir `folder` carries (the
  vocabulary and do_lower_case: the export's, a run dir's recorded
  export's), or None when `folder` is neither an export nor a run dir
  that recorded one (a run that exported nothing is read as any folder
  with albert_config.json: encoder_files)."""
  paths = find_paths(folder)
  if paths is None or (paths.kind == "run" and not paths.asset_dir):
    return None  # read as any folder with albert_config.json beside a model
  found = {"albert_config_file": paths.config_file}
  spm_model_file, vocab_file = vocabulary_of(paths)
  if spm_model_file:
    found["spm_model_file"] = spm_model_file
  elif vocab_file:
    found["vocab_file"] = vocab_file
  do_lower_case = recorded_do_lower_case(paths)
  if do_lower_case is not None:
    found["do_lower_case"] = do_lower_case
  return found
