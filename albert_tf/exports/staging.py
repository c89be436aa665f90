"""Building an export where nobody sees it, then publishing it whole.

Every export is built in a hidden folder `.<name>.tmp-<pid>` next to its
`export_dir` and renamed into place when complete (on object stores file by
file, each `saved_model.pb` last), so nothing half-written ever has the
final name; `export_dir` may be on any TensorFlow filesystem (`gs://`).
"""

import contextlib
from typing import Iterator, Tuple

from data_pipeline import file_io
from data_pipeline.shared import UserInputError

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
