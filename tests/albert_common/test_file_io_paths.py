"""file_io's path arithmetic on every kind of path, roots included.

"gs://bucket" is a root (the bucket has no parent or siblings), "ram://name"
an entry of the folder "ram://" (TensorFlow's in-memory filesystem is
flat); nothing here touches gs://: its glob is answered by a stand-in.
"""

import os
import uuid

import pytest

from albert_common import file_io

PID = os.getpid()


@pytest.mark.parametrize("path, folder, name", [
    ("gs://bucket", "gs://bucket", ""),
    ("gs://bucket/", "gs://bucket", ""),
    ("gs://bucket/x", "gs://bucket", "x"),
    ("gs://bucket/x/y.txt", "gs://bucket/x", "y.txt"),
    ("gs://bucket/x/", "gs://bucket", "x"),
    ("s3://bucket/x", "s3://bucket", "x"),
    ("hdfs://host:8020/x/y", "hdfs://host:8020/x", "y"),
    ("hdfs:///x", "hdfs:///", "x"),
    ("hdfs:///", "hdfs:///", ""),
    ("ram://", "ram://", ""),
    ("ram://name", "ram://", "name"),
    ("ram://name/", "ram://", "name"),
    ("ram://name/x", "ram://name", "x"),
    ("ram://name/x/y", "ram://name/x", "y"),
    ("out", "", "out"),
    ("out/", "", "out"),
    ("runs/out", "runs", "out"),
    ("runs/out/", "runs", "out"),
    ("/abs/out", "/abs", "out"),
    ("/", "/", ""),
])
def test_dirname_and_basename(path, folder, name):
  assert file_io.dirname(path) == folder
  assert file_io.basename(path) == name
  assert file_io.is_root(path) == (name == "")


@pytest.mark.parametrize("path, temp", [
    ("gs://bucket/export", "gs://bucket/.export.tmp-{pid}"),
    ("gs://bucket/x/export/", "gs://bucket/x/.export.tmp-{pid}"),
    # A bucket has no siblings: its temporary is inside it.
    ("gs://bucket", "gs://bucket/.tmp-{pid}"),
    ("hdfs:///exp", "hdfs:///.exp.tmp-{pid}"),
    ("ram://exp", "ram://.exp.tmp-{pid}"),
    ("ram://exp/", "ram://.exp.tmp-{pid}"),
    ("ram://name/x", "ram://name/.x.tmp-{pid}"),
    ("exp", ".exp.tmp-{pid}"),
    ("runs/exp/", "runs/.exp.tmp-{pid}"),
])
def test_temp_name_is_a_sibling_on_the_same_filesystem(path, temp):
  # The pid is filled in here, not in the ids: every pytest-xdist worker
  # must collect the same test names.
  assert file_io.temp_name(path) == temp.format(pid=PID)
  assert file_io.temp_name(path, "beam-7") == temp.format(pid="beam-7")


@pytest.mark.parametrize("parts, joined", [
    (("gs://bucket", "x", "y"), "gs://bucket/x/y"),
    (("gs://bucket/", "x"), "gs://bucket/x"),
    (("ram://", "name"), "ram://name"),
    (("ram://name", "x"), "ram://name/x"),
    (("ram://name", "gs://bucket/x"), "gs://bucket/x"),
    (("runs", "gs://bucket/x", "y"), "gs://bucket/x/y"),
    (("runs", "out"), os.path.join("runs", "out")),
    ((file_io.dirname("ram://name"), ".name.stats.json"),
     "ram://.name.stats.json"),
    ((file_io.dirname("gs://bucket/f"), ".f.stats.json"),
     "gs://bucket/.f.stats.json"),
])
def test_join(parts, joined):
  assert file_io.join(*parts) == joined


@pytest.mark.parametrize("path, normal", [
    ("ram://name/..", "ram://"),
    ("ram://name/./x/", "ram://name/x"),
    ("gs://bucket/a/../..", "gs://bucket"),
    ("gs://bucket/a/./b/", "gs://bucket/a/b"),
    ("a/./b/", os.path.join("a", "b")),
])
def test_normpath_stops_at_the_root(path, normal):
  assert file_io.normpath(path) == normal


class _FakeGfile:
  """Answers glob as a bucket listing would (no gs:// access)."""

  def __init__(self, names):
    self.names = names
    self.patterns = []

  def glob(self, pattern):
    import fnmatch
    self.patterns.append(pattern)
    depth = pattern.count("/")
    return [n for n in self.names
            if n.count("/") == depth and fnmatch.fnmatchcase(n, pattern)]


def test_glob_in_a_bucket_root_skips_hidden_names(monkeypatch):
  fake = _FakeGfile(["gs://bucket/a.txt", "gs://bucket/.a.txt.tmp-3",
                     "gs://bucket/b.txt", "gs://bucket/sub/c.txt",
                     "gs://bucket/.tmp-3/d.txt"])
  monkeypatch.setattr(file_io, "_gfile", lambda: fake)
  assert file_io.glob("gs://bucket/*.txt") == ["gs://bucket/a.txt",
                                               "gs://bucket/b.txt"]
  assert file_io.glob("gs://bucket/*/*.txt") == ["gs://bucket/sub/c.txt"]
  assert file_io.glob("gs://bucket/.a*") == ["gs://bucket/.a.txt.tmp-3"]
  assert fake.patterns == ["gs://bucket/*.txt", "gs://bucket/*/*.txt",
                           "gs://bucket/.a*"]


def test_top_level_ram_paths_write_glob_and_move():
  name = f"top-{uuid.uuid4().hex[:8]}"
  top = f"ram://{name}"
  assert not file_io.exists(top)
  assert file_io.exists("ram://") and file_io.isdir("ram://")
  file_io.makedirs(file_io.dirname(top))  # The root: nothing to make.
  file_io.write_atomic(top + ".json", "{}")
  file_io.write_atomic(f"ram://.{name}.hidden", "x")
  assert file_io.read_text(top + ".json") == "{}"
  assert file_io.isfile(top + ".json") and not file_io.isdir(top + ".json")
  assert file_io.glob(f"ram://{name}*") == [top + ".json"]
  assert f"ram://.{name}.hidden" not in file_io.glob("ram://*")
  assert "ram://" not in file_io.glob("ram://*")
  assert name + ".json" in file_io.listdir("ram://")

  # A folder built under its temporary name and moved to ram://<name>.
  staging = file_io.temp_name(top)
  assert staging.startswith("ram://.")
  file_io.write_atomic(file_io.join(staging, "sub", "a.bin"), b"\x01")
  file_io.write_atomic(file_io.join(staging, "b.bin"), b"\x02")
  file_io.rename_tree(staging, top, last=("b.bin",))
  assert file_io.isdir(top) and not file_io.exists(staging)
  assert file_io.read_bytes(file_io.join(top, "sub", "a.bin")) == b"\x01"
  assert file_io.glob(file_io.join(top, "*")) == [
      file_io.join(top, "b.bin"), file_io.join(top, "sub")]
  assert not [n for n in file_io.listdir("ram://") if name in n and ".tmp"
              in n]


def test_a_folder_moves_into_a_bucket_root(monkeypatch):
  """With ram:// treated as bucketed (ram://<name> a root, as gs://bucket),
  the temporary of the root is inside it and moves into it."""
  monkeypatch.setattr(file_io, "_FLAT_SCHEMES", ())
  bucket = f"ram://bucket-{uuid.uuid4().hex[:8]}"
  assert file_io.is_root(bucket) and file_io.dirname(bucket) == bucket
  file_io.write_atomic(file_io.join(bucket, "old.txt"), "kept")
  staging = file_io.temp_name(bucket)
  assert staging == f"{bucket}/.tmp-{PID}"
  file_io.write_atomic(file_io.join(staging, "encoder", "saved_model.pb"),
                       b"pb")
  file_io.rename_tree(staging, bucket)
  assert file_io.listdir(bucket) == ["encoder", "old.txt"]
  assert file_io.read_bytes(
      file_io.join(bucket, "encoder", "saved_model.pb")) == b"pb"


def test_local_stat_keeps_nanoseconds_with_tensorflow_loaded(tmp_path):
  """Shard fingerprints hold (size, mtime): the same whether or not
  TensorFlow (whose local stat rounds to seconds) is loaded."""
  import tensorflow as tf  # noqa: F401  (loaded, as in most runs)
  path = tmp_path / "f.txt"
  path.write_bytes(b"abc")
  os.utime(path, ns=(1_700_000_000_123_456_789, 1_700_000_000_123_456_789))
  assert file_io.stat(str(path)) == (3, 1_700_000_000_123_456_789)
