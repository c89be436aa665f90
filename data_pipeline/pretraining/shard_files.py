"""Shard files of a pretraining run: names, fingerprints, sidecars, resume.

A shard is written under a hidden temporary name (`ShardWriter`) and renamed
when complete, after its stats are written to a hidden sidecar
`.<shard name>.stats.json` holding the shard's fingerprint: a digest of the
input files (path, size, mtime), the vocabulary's bytes, the settings and the
shard's name. A rerun with the same fingerprint skips the shard
(`completed_shards`). Used by the local writer (`pretraining_writer`) and the
Beam pipeline (`beam_pipeline`) alike.

Output names. `output_file` is a path or a comma-separated list of paths (as
the official flag). One path and `num_output_shards` = 1: that file. One path
and N > 1 shards: `<path>-00000-of-0000N` ... A list of K paths: K shards with
those names. Stats of the whole run go to `<first output>.stats.json`, or
`<path>.stats.json` for numbered shards.
"""

import hashlib
import json
import os
from typing import Dict, List, Optional, Sequence

from absl import logging

from albert_common import file_io
from albert_common.errors import UserInputError
from data_pipeline.pretraining.stats import PretrainingStats
from data_pipeline.pretraining.stats import write_json


def output_paths(output_file: str,
                 num_output_shards: Optional[int] = None) -> List[str]:
  """Shard paths for `--output_file` and `--num_output_shards` (see above)."""
  paths = [p.strip() for p in (output_file or "").split(",") if p.strip()]
  if not paths:
    raise UserInputError("no output file given (--output_file)")
  if len(paths) > 1:
    if num_output_shards not in (None, len(paths)):
      raise UserInputError(
          f"--num_output_shards={num_output_shards} does not match the "
          f"{len(paths)} paths in --output_file")
    return paths
  num = num_output_shards or 1
  if num < 1:
    raise UserInputError(f"--num_output_shards={num} must be at least 1")
  if num == 1:
    return paths
  return [f"{paths[0]}-{i:05d}-of-{num:05d}" for i in range(num)]


def stats_path(output_file: str, num_output_shards: Optional[int]) -> str:
  first = output_paths(output_file, num_output_shards)[0]
  if (num_output_shards or 1) > 1 and "," not in output_file:
    first = output_file.strip()
  return first + ".stats.json"


def _sidecar(path: str) -> str:
  return file_io.join(file_io.dirname(path),
                      f".{file_io.basename(path)}.stats.json")


def shard_fingerprints(files, vocabulary_file, settings: Dict,
                  paths: Sequence[str], fs) -> List[str]:
  """One digest per shard of everything its bytes depend on."""
  digest = hashlib.sha256()
  digest.update(fs.read_bytes(vocabulary_file))
  for path in files:
    size, mtime_ns = fs.stat(path)
    where = path if file_io.is_remote(path) else os.path.abspath(path)
    digest.update(f"{where}|{size}|{mtime_ns}|".encode())
  digest.update(json.dumps(settings, sort_keys=True).encode())
  out = []
  for path in paths:
    shard = digest.copy()
    shard.update(file_io.basename(path).encode())
    out.append(shard.hexdigest())
  return out


def _remove_stale_temps(path: str, fs) -> None:
  """Deletes temporaries of `path` left by runs that were killed."""
  head, prefix = file_io.dirname(path), f".{file_io.basename(path)}.tmp-"
  for name in fs.listdir(head or "."):
    if name.startswith(prefix):
      fs.remove(file_io.join(head, name))


def _complete_shard_stats(path: str, fingerprint: str, fs):
  """Stats of a shard a previous run completed, or None."""
  try:
    sidecar = json.loads(fs.read_text(_sidecar(path)))
  except (OSError, ValueError):
    return None
  if not fs.isfile(path) or sidecar.get("fingerprint") != fingerprint:
    return None
  return PretrainingStats.from_dict(sidecar["stats"])


def publish_shard(temp: str, path: str, fingerprint: str,
                  stats: PretrainingStats, fs=None) -> None:
  """Writes the shard's stats sidecar, then renames `temp` to `path`."""
  fs = fs or file_io
  write_json(_sidecar(path), {"fingerprint": fingerprint,
                              "stats": stats.to_dict()}, fs)
  fs.rename(temp, path)


def completed_shards(paths: Sequence[str], fingerprints: Sequence[str],
                      fs) -> Dict[int, PretrainingStats]:
  """{shard: stats} of the shards a previous run completed.

  Temporaries that killed runs left next to the shards are deleted.
  """
  done = {}
  for shard, path in enumerate(paths):
    _remove_stale_temps(path, fs)
    previous = _complete_shard_stats(path, fingerprints[shard], fs)
    if previous is not None:
      done[shard] = previous
  if done:
    logging.info("skipping %d complete shard(s) of a previous run", len(done))
  return done


class ShardWriter:
  """Appends pieces to a hidden temporary file; publishes it when complete."""

  def __init__(self, path: str, fingerprint: str):
    self.path = path
    self.fingerprint = fingerprint
    self.temp = file_io.temp_name(path)
    self.file = file_io.open_write(self.temp)
    self.closed = False
    self.stats = PretrainingStats()

  def write(self, data: bytes, stats: PretrainingStats):
    self.file.write(data)
    self.stats.add(stats)

  def close(self):
    if not self.closed:
      self.closed = True
      self.file.close()

  def publish(self):
    publish_shard(self.temp, self.path, self.fingerprint, self.stats)

  def discard(self):
    self.close()
    file_io.remove(self.temp)
