"""File access for user paths on any TensorFlow filesystem.

Every path a user gives may be local, on Cloud Storage (`gs://`), or on any
other filesystem TensorFlow knows (`ram://` in tests). Writes and remote
reads go through `tf.io.gfile`; a *local* read made before TensorFlow is
imported (the checks a CLI runs on its flags in its first second) uses
Python's own file API, so those checks do not wait for TensorFlow's ~5 s
import. Nothing here imports TensorFlow at module load.

Publishing is atomic: `write_atomic` writes `<dir>/.<name>.tmp-<pid>` and
renames it over `path` (on object stores a rename is copy + delete, and the
object appears whole). Files and folders get the modes the user's umask
gives ordinary ones (typically 0644 / 0755).
"""

import json
import os
import posixpath
import sys
from typing import Any, List, Union


def is_remote(path: str) -> bool:
  """Whether `path` names a non-local filesystem (`gs://`, `ram://`, ...)."""
  return "://" in str(path) and not str(path).startswith("file://")


def _gfile():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.io.gfile


def _local_ok(path: str) -> bool:
  """Local paths are read without TensorFlow unless it is already loaded."""
  return not is_remote(path) and "tensorflow" not in sys.modules


def join(*parts: str) -> str:
  """Joins path parts with "/" for remote paths, os.path.join otherwise."""
  if parts and is_remote(parts[0]):
    return posixpath.join(*parts)
  return os.path.join(*parts)


def dirname(path: str) -> str:
  return posixpath.dirname(path) if is_remote(path) else os.path.dirname(path)


def basename(path: str) -> str:
  return (posixpath.basename(path) if is_remote(path)
          else os.path.basename(path))


def exists(path: str) -> bool:
  if _local_ok(path):
    return os.path.exists(path)
  return _gfile().exists(path)


def isdir(path: str) -> bool:
  if _local_ok(path):
    return os.path.isdir(path)
  return _gfile().isdir(path)


def isfile(path: str) -> bool:
  return exists(path) and not isdir(path)


def read_bytes(path: str) -> bytes:
  """The file's bytes. Raises OSError (FileNotFoundError if missing)."""
  if _local_ok(path):
    with open(path, "rb") as f:
      return f.read()
  gfile = _gfile()
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  try:
    with gfile.GFile(path, "rb") as f:
      return f.read()
  except tf.errors.NotFoundError as e:
    raise FileNotFoundError(2, "No such file or directory", path) from e
  except tf.errors.OpError as e:
    raise OSError(5, e.message, path) from e


def read_text(path: str) -> str:
  """The file as UTF-8 text. Raises OSError, UnicodeDecodeError."""
  return read_bytes(path).decode("utf-8")


def glob(pattern: str) -> List[str]:
  """Sorted matches of a glob pattern (files and folders)."""
  return sorted(_gfile().glob(pattern))


def makedirs(path: str) -> None:
  if path:
    _gfile().makedirs(path)


def temp_name(path: str) -> str:
  """A hidden temporary name next to `path`, unique to this process."""
  return join(dirname(path), f".{basename(path)}.tmp-{os.getpid()}")


def write_atomic(path: str, data: Union[str, bytes]) -> None:
  """Writes `data` to `path` through a temporary name and a rename."""
  gfile = _gfile()
  parent = dirname(path)
  if parent:
    gfile.makedirs(parent)
  tmp = temp_name(path)
  try:
    with gfile.GFile(tmp, "wb" if isinstance(data, bytes) else "w") as f:
      f.write(data)
    gfile.rename(tmp, path, overwrite=True)
  finally:
    if gfile.exists(tmp):
      gfile.remove(tmp)


def write_json_atomic(path: str, value: Any) -> None:
  """`value` as indented JSON (a trailing newline), published atomically."""
  write_atomic(path, json.dumps(value, indent=2, sort_keys=False) + "\n")


def copy(source: str, target: str) -> None:
  """Copies a file across filesystems (overwriting `target`)."""
  _gfile().copy(source, target, overwrite=True)


def rmtree(path: str) -> None:
  """Removes a folder and its contents; no error if it does not exist."""
  gfile = _gfile()
  if gfile.exists(path):
    gfile.rmtree(path)
