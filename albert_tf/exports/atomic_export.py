"""Building an export where nobody sees it, then publishing it whole.

Every export is built in a hidden folder `.<name>.tmp-<pid>` next to its
`export_dir` and renamed into place when complete (on object stores file by
file, each `saved_model.pb` last), so nothing half-written ever has the
final name; `export_dir` may be on any TensorFlow filesystem (`gs://`).

`staging_dir` is that folder; `save_serving_model` is the whole of it for
the one-SavedModel serving exports (classifier, SQuAD, RACE): assets in,
SavedModel written, published.
"""

import contextlib
import json
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import tensorflow as tf

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_common.run_constants import EXPORT_TOKENIZER_FILE

# Renamed last when an export moves file by file: each makes a SavedModel
# visible (tf.saved_model.contains_saved_model).
SAVED_MODEL_LAST = ("saved_model.pb", "saved_model.pbtxt")


@contextlib.contextmanager
def staging_dir(export_dir: str) -> Iterator[Tuple[str, str]]:
  """Yields (tmp_dir, assets_dir): a fresh folder `.<name>.tmp-<pid>` next
  to `export_dir` (any filesystem; an ordinary folder, 0755 under umask 022)
  to build an export in, and a folder in it for asset files to copy from.
  The caller renames its finished result to `export_dir`
  (`file_io.rename_tree`, so nothing half-written ever has the final name);
  what is left is removed on exit, also on failure.

  Raises:
    UserInputError: export_dir's parent cannot be written.
  """
  tmp_dir = file_io.temp_name(export_dir)
  assets = file_io.join(tmp_dir, "assets_src")
  try:
    file_io.rmtree(tmp_dir)  # Left by a killed run with our pid.
    file_io.makedirs(assets)
  except OSError as e:
    raise UserInputError(
        f"--export_dir={export_dir} is not writable: {e}") from None
  try:
    yield tmp_dir, assets
  finally:
    file_io.rmtree(tmp_dir)


def save_serving_model(
    export_dir: str, spm_model_file: str,
    build: Callable[[str], Tuple[tf.Module, Dict[str, Callable]]],
    albert_config_file: str = "",
    text_assets: Sequence[Tuple[str, str, str]] = (),
    vocab_attribute: str = "sp_model_file",
    do_lower_case: Optional[bool] = None) -> str:
  """Writes one serving SavedModel to `export_dir`, published atomically.

  Stages, in a `staging_dir`: the SentencePiece model is copied and each text
  asset written; `build` makes the serving module and its signatures; the
  files become the module's assets (`sp_model_file`, each text asset's
  attribute, then `albert_config_file`, a copy of that file when given);
  `tf.saved_model.save`; the folder is renamed to `export_dir`.

  Args:
    export_dir: must not exist (the caller checks first, with
      options.check_export_dir_free); any filesystem.
    spm_model_file: the model's vocabulary: its SentencePiece model, or a
      WordPiece vocab.txt (with vocab_attribute "vocab_file").
    build: called with the path of the staged SentencePiece copy (for
      graphs that read it as a file); returns (tf.Module to save, signatures
      {name: tf.function}).
    albert_config_file: copied as the asset `albert_config.json` when given.
    text_assets: (attribute, file name, text) rows, e.g. the classifier's
      ("labels_file", "labels.txt", "entailment\n...").
    vocab_attribute: the module attribute of the vocabulary asset.
    do_lower_case: the tokenizer's, recorded as the asset tokenizer.json
      (EXPORT_TOKENIZER_FILE: a fine-tuning tool given the export as
      --init_checkpoint takes it); None: not recorded.

  Returns:
    export_dir.

  Raises:
    UserInputError: export_dir's parent cannot be written.
  """
  if do_lower_case is not None:
    text_assets = list(text_assets) + [(
        "tokenizer_file", EXPORT_TOKENIZER_FILE,
        json.dumps({"do_lower_case": bool(do_lower_case)}) + "\n")]
  with staging_dir(export_dir) as (tmp_dir, assets):
    sp_copy = file_io.join(assets, file_io.basename(spm_model_file))
    file_io.copy(spm_model_file, sp_copy)
    text_files = []
    for attribute, name, text in text_assets:
      path = file_io.join(assets, name)
      file_io.write_atomic(path, text)
      text_files.append((attribute, path))

    serving, signatures = build(sp_copy)
    setattr(serving, vocab_attribute, tf.saved_model.Asset(sp_copy))
    for attribute, path in text_files:
      setattr(serving, attribute, tf.saved_model.Asset(path))
    if albert_config_file:
      config_copy = file_io.join(assets, "albert_config.json")
      file_io.copy(albert_config_file, config_copy)
      serving.albert_config_file = tf.saved_model.Asset(config_copy)

    out = file_io.join(tmp_dir, "model")
    tf.saved_model.save(serving, out, signatures=signatures)
    file_io.rename_tree(out, export_dir, last=SAVED_MODEL_LAST)
  return export_dir


def copy_assets(saved_model: str, output_file: str) -> List[str]:
  """Copies the export's asset files (vocabulary, labels.txt,
  albert_config.json) next to a converted file; their paths. tokenizer.json
  stays: the converted file's description records do_lower_case."""
  assets = file_io.join(saved_model, "assets")
  copied = []
  if file_io.isdir(assets):
    for name in sorted(file_io.listdir(assets)):
      source = file_io.join(assets, name)
      if file_io.isfile(source) and name != EXPORT_TOKENIZER_FILE:
        target = file_io.join(file_io.dirname(output_file), name)
        file_io.write_atomic(target, file_io.read_bytes(source))
        copied.append(target)
  return copied
