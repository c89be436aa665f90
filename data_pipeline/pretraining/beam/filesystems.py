"""`albert_common.file_io`'s functions on every filesystem Apache Beam knows.

The Beam pipeline (`beam_pipeline`) plans, reads pieces and writes shards
through a `BeamFileIO`, handed as `fs=` to the code it shares with the local
path (`corpus_pieces`, `pretraining_writer`), so inputs and outputs may be on
any filesystem of Beam's `FileSystems`: local, `gs://` (apache-beam[gcp]),
`s3://` (apache-beam[aws]), `hdfs://`, `azfs://`.

Local paths go to `file_io` itself, so a local corpus is globbed, stat'ed
and fingerprinted exactly as the local path does (a rerun with either path
reuses the other's complete shards). Paths with a scheme go to Beam.
Compression is never inferred from a name: bytes are read and written as
they are.
"""

from typing import BinaryIO, List, Optional, Tuple, Union

from albert_common import file_io
from albert_common.errors import UserInputError

join = file_io.join
dirname = file_io.dirname
basename = file_io.basename
is_remote = file_io.is_remote


def _beam():
  """(FileSystems, CompressionTypes); imported on first remote use."""
  from apache_beam.io.filesystem import CompressionTypes
  from apache_beam.io.filesystems import FileSystems
  return FileSystems, CompressionTypes


def _visible(pattern: str, path: str) -> bool:
  """False where a wildcard matched a hidden name (as file_io.glob)."""
  return not any(name.startswith(".") and not part.startswith(".")
                 for part, name in zip(pattern.split("/"), path.split("/")))


def _folder(path: str) -> str:
  """`path` ending in one "/" ("gs://bucket/a/", "gs://bucket/")."""
  return file_io.join(file_io.normpath(path), "")


class BeamFileIO:
  """The subset of `file_io` the data pipeline uses, on Beam's filesystems.

  Args:
    pipeline_options: optional `PipelineOptions`; filesystems that need
      settings (hdfs host, S3 credentials) read them from here.
  """

  join = staticmethod(join)
  dirname = staticmethod(dirname)
  basename = staticmethod(basename)
  is_remote = staticmethod(is_remote)

  def __init__(self, pipeline_options=None):
    self._options = pipeline_options
    self._configured = False
    # (size, mtime ns) of the remote files `glob` listed: one listing, not
    # one request per file, answers the planner's isfile / stat calls.
    self._listed = {}

  def __getstate__(self):
    # Workers configure Beam's filesystems from their own pipeline options.
    return {"_options": None, "_configured": True, "_listed": {}}

  def _fs(self, path: str):
    file_systems, _ = _beam()
    if not self._configured:
      if self._options is not None:
        file_systems.set_options(self._options)
      self._configured = True
    try:
      file_systems.get_filesystem(path)
    except ValueError as e:
      raise UserInputError(
          f"{path}: no Apache Beam filesystem for this scheme (gs:// needs "
          "apache-beam[gcp], s3:// apache-beam[aws]): "
          f"{str(e).splitlines()[0]}") from None
    return file_systems

  def _metadata(self, pattern: str):
    return self._fs(pattern).match([pattern])[0].metadata_list

  def glob(self, pattern: str) -> List[str]:
    """Sorted files matching `pattern`; wildcards skip hidden names."""
    if not is_remote(pattern):
      return file_io.glob(pattern)
    files = []
    for m in self._metadata(pattern):
      if not m.path.endswith("/") and _visible(pattern, m.path):
        self._listed[m.path] = (m.size_in_bytes,
                                int(m.last_updated_in_seconds * 1e9))
        files.append(m.path)
    return sorted(files)

  def stat(self, path: str) -> Tuple[int, int]:
    """(size in bytes, modification time in ns). Raises FileNotFoundError."""
    if not is_remote(path):
      return file_io.stat(path)
    if path in self._listed:
      return self._listed[path]
    for m in self._metadata(path):
      if m.path == path:
        return m.size_in_bytes, int(m.last_updated_in_seconds * 1e9)
    raise FileNotFoundError(2, "No such file or directory", path)

  def getsize(self, path: str) -> int:
    return self.stat(path)[0]

  def exists(self, path: str) -> bool:
    if not is_remote(path):
      return file_io.exists(path)
    return self._fs(path).exists(path)

  def isdir(self, path: str) -> bool:
    # Object stores have no folders; a path with a scheme names an object.
    return not is_remote(path) and file_io.isdir(path)

  def isfile(self, path: str) -> bool:
    if not is_remote(path):
      return file_io.isfile(path)
    if path in self._listed:
      return True
    return any(m.path == path for m in self._metadata(path))

  def listdir(self, path: str) -> List[str]:
    if not is_remote(path):
      return file_io.listdir(path)
    prefix = _folder(path)
    return sorted({m.path[len(prefix):].split("/")[0]
                   for m in self._metadata(prefix + "*")})

  def open_read(self, path: str) -> BinaryIO:
    """A seekable binary reader. Raises FileNotFoundError."""
    if not is_remote(path):
      return file_io.open_read(path)
    file_systems, compression = _beam()
    if not self.exists(path):
      raise FileNotFoundError(2, "No such file or directory", path)
    return file_systems.open(path,
                             compression_type=compression.UNCOMPRESSED)

  def open_write(self, path: str) -> BinaryIO:
    if not is_remote(path):
      return file_io.open_write(path)
    _, compression = _beam()
    return self._fs(path).create(path,
                                 compression_type=compression.UNCOMPRESSED)

  def read_bytes(self, path: str) -> bytes:
    with self.open_read(path) as f:
      return f.read()

  def read_text(self, path: str) -> str:
    return self.read_bytes(path).decode("utf-8")

  def rename(self, source: str, target: str) -> None:
    """Renames a file, replacing `target` (object stores: copy + delete)."""
    if not is_remote(source) and not is_remote(target):
      file_io.rename(source, target)
    else:
      self._fs(source).rename([source], [target])

  def remove(self, path: str) -> None:
    """Deletes a file; no error if it does not exist."""
    if not is_remote(path):
      file_io.remove(path)
    elif self.exists(path):
      self._fs(path).delete([path])

  def makedirs(self, path: str) -> None:
    if not path or file_io.is_root(path):
      return
    if not is_remote(path):
      file_io.makedirs(path)
      return
    try:
      self._fs(path).mkdirs(path)
    except OSError:  # Exists already (object stores: nothing to make).
      pass

  def rmtree(self, path: str) -> None:
    """Deletes a folder (or object prefix) and everything in it."""
    if not is_remote(path):
      file_io.rmtree(path)
      return
    paths = [m.path for m in self._metadata(_folder(path) + "**")]
    if paths:
      self._fs(path).delete(paths)

  def temp_name(self, path: str, token: Optional[str] = None) -> str:
    """Hidden `.<name>.tmp-<token or pid>` next to `path` (as file_io's)."""
    return file_io.temp_name(path, token)

  def write_atomic(self, path: str, data: Union[str, bytes]) -> None:
    """Writes `data` under a temporary name, then renames it to `path`."""
    if not is_remote(path):
      file_io.write_atomic(path, data)
      return
    tmp = self.temp_name(path)
    try:
      with self.open_write(tmp) as f:
        f.write(data if isinstance(data, bytes) else data.encode("utf-8"))
      self.rename(tmp, path)
    finally:
      self.remove(tmp)
