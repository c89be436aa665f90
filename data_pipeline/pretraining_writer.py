"""Corpus -> sharded pretraining TFRecords, in parallel and in bounded memory.

How a run goes (`create_pretraining_data`):

1. The corpus is cut into pieces of `piece_bytes` input bytes
   (`corpus_pieces`); a piece is the unit of work. Worker processes
   (`pretraining_worker`) read a piece, tokenize it (one batched
   SentencePiece call), make its instances for every dupe
   (`pretraining_data`), shuffle them, encode them as `tf.train.Example`s
   and frame them as TFRecords (`tfrecord_io`, no TensorFlow in workers).
2. The main process writes piece results in corpus order. Shards hold
   consecutive pieces (piece p goes to shard p * num_shards // num_pieces), so
   shards complete one after another: each is written under a hidden
   temporary name and renamed when complete, with its stats in a hidden
   sidecar `.<shard name>.stats.json`. A rerun skips every shard whose file
   and sidecar exist for the same inputs and settings.
3. At most `2 * num_workers` pieces are in flight, so memory does not grow
   with the corpus: at worst about 2 * num_workers piece results, each
   roughly piece_bytes * dupe_factor * 4 bytes for max_seq_length 128 (e.g.
   ~85 MB for 8 workers, dupe_factor 5); lower `piece_bytes` to shrink it.

Shuffling. The official script holds every instance in memory and shuffles
them globally. Here the instances of a piece (all dupes of ~`piece_bytes` of
text) are shuffled together; the input pipeline (`pretraining_input`) then
interleaves shards and shuffles again. Use many shards and a shuffle buffer
larger than a piece's instances (logged at the end) for a good mix.

Determinism. Pieces, document seeds and piece shuffles depend only on the
input files, `piece_bytes` and the seed, so the same settings give the same
bytes whatever `num_workers` is; the concatenation of the shards in order is
also the same whatever `num_output_shards` is.

Output names. `output_file` is a path or a comma-separated list of paths (as
the official flag). One path and `num_output_shards` = 1: that file. One path
and N > 1 shards: `<path>-00000-of-0000N` ... A list of K paths: K shards with
those names. Stats of the whole run go to `<first output>.stats.json`, or
`<path>.stats.json` for numbered shards.

Filesystems. Inputs, outputs and the SentencePiece model may be on any
TensorFlow filesystem (`gs://`); local files are read and written with
Python's file API, so a local run never imports TensorFlow.
"""

import collections
import concurrent.futures
import dataclasses
import hashlib
import json
import multiprocessing
import os
import sys
import time
from typing import Dict, List, Optional, Sequence

from absl import logging

from albert_tf import file_io
from albert_tf.errors import UserInputError
from data_pipeline import corpus_pieces
from data_pipeline import pretraining_data
from data_pipeline import pretraining_worker
from data_pipeline.pretraining_stats import PretrainingStats
from data_pipeline.pretraining_stats import write_json
from data_pipeline.tokenization import SentencePieceTokenizer

DEFAULT_PIECE_BYTES = 256 * 1024


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


def _fingerprints(files, spm_model_file, settings: Dict,
                  paths: Sequence[str]) -> List[str]:
  """One digest per shard of everything its bytes depend on."""
  digest = hashlib.sha256()
  digest.update(file_io.read_bytes(spm_model_file))
  for path in files:
    size, mtime_ns = file_io.stat(path)
    where = path if file_io.is_remote(path) else os.path.abspath(path)
    digest.update(f"{where}|{size}|{mtime_ns}|".encode())
  digest.update(json.dumps(settings, sort_keys=True).encode())
  out = []
  for path in paths:
    shard = digest.copy()
    shard.update(file_io.basename(path).encode())
    out.append(shard.hexdigest())
  return out


def _remove_stale_temps(path: str) -> None:
  """Deletes temporaries of `path` left by runs that were killed."""
  head, prefix = file_io.dirname(path), f".{file_io.basename(path)}.tmp-"
  for name in file_io.listdir(head or "."):
    if name.startswith(prefix):
      file_io.remove(file_io.join(head, name))


def _complete_shard_stats(path: str, fingerprint: str):
  """Stats of a shard a previous run completed, or None."""
  try:
    sidecar = json.loads(file_io.read_text(_sidecar(path)))
  except (OSError, ValueError):
    return None
  if not file_io.isfile(path) or sidecar.get("fingerprint") != fingerprint:
    return None
  return PretrainingStats.from_dict(sidecar["stats"])


class _ShardWriter:
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
    write_json(_sidecar(self.path), {"fingerprint": self.fingerprint,
                                     "stats": self.stats.to_dict()})
    file_io.rename(self.temp, self.path)

  def discard(self):
    self.close()
    file_io.remove(self.temp)


class _LogProgress:
  """Progress as absl log lines (about every 10%), when tqdm is missing."""

  def __init__(self, total: int):
    self.total, self.done, self.next = total, 0, 0.1
    self.postfix = {}

  def update(self, n: int):
    self.done += n
    if self.done >= self.next * self.total:
      logging.info("pieces %d/%d %s", self.done, self.total, self.postfix)
      self.next += 0.1

  def set_postfix(self, refresh=False, **values):
    del refresh
    self.postfix = values

  def close(self):
    pass


def _progress(total: int, enabled: bool):
  """A tqdm bar on stderr (absl log lines without tqdm), or None."""
  if not enabled:
    return None
  try:
    import tqdm  # pylint: disable=g-import-not-at-top
  except ImportError:
    return _LogProgress(total)
  return tqdm.tqdm(total=total, unit="piece", file=sys.stderr,
                   dynamic_ncols=True)


def create_pretraining_data(
    input_file: str,
    output_file: str,
    spm_model_file: str,
    options: pretraining_data.InstanceOptions,
    do_lower_case: bool = True,
    dupe_factor: int = 40,
    random_seed: int = 12345,
    num_workers: Optional[int] = None,
    num_output_shards: Optional[int] = None,
    piece_bytes: int = DEFAULT_PIECE_BYTES,
    skip_non_utf8_lines: bool = False,
    show_progress: bool = True) -> Dict:
  """Writes pretraining TFRecords for a corpus; returns the stats summary.

  Args:
    input_file: comma-separated paths or globs of text files.
    output_file: output path or comma-separated paths (see module doc).
    spm_model_file: SentencePiece model (pieces <pad> <unk> [CLS] [SEP]
      [MASK]).
    options: InstanceOptions (validated here).
    do_lower_case: lowercase text before SentencePiece.
    dupe_factor: instances are made this many times per document.
    random_seed: seed of every random draw.
    num_workers: worker processes; default os.cpu_count(); 1 runs in-process.
    num_output_shards: number of shards for a single output path.
    piece_bytes: input bytes per unit of work / seeding / shuffling. Part of
      the output's identity: change it and the bytes change.
    skip_non_utf8_lines: skip (and count) lines that are not UTF-8 instead of
      failing.
    show_progress: show a progress bar on stderr.

  Returns:
    dict: the PretrainingStats fields, their `derived()` ratios, "outputs",
    "seconds", "instances_per_second"; also written as JSON (`stats_path`).

  Raises:
    UserInputError: missing input, empty corpus, bad flag value, non-UTF-8
      text. No partial file is left under an output name; shards completed
      before the error stay (they are complete, and a rerun reuses them).
  """
  started = time.time()
  options.validate()
  if dupe_factor < 1:
    raise UserInputError(f"--dupe_factor={dupe_factor} must be at least 1")
  num_workers = num_workers or os.cpu_count() or 1
  if num_workers < 1:
    raise UserInputError(f"--num_workers={num_workers} must be at least 1")
  if piece_bytes < 1:
    raise UserInputError(f"piece_bytes={piece_bytes} must be at least 1")
  if not spm_model_file:
    raise UserInputError("--spm_model_file is required (WordPiece-only "
                         "--vocab_file input is not supported)")
  files = corpus_pieces.resolve_input_files(input_file)
  if all(file_io.getsize(p) == 0 for p in files):
    raise UserInputError(f"--input_file: empty corpus: {', '.join(files)}")
  paths = output_paths(output_file, num_output_shards)
  for path in paths:
    if file_io.isdir(path):
      raise UserInputError(f"--output_file: {path} is a directory; give a "
                           "file path (shards get -NNNNN-of-NNNNN suffixes)")
    try:
      file_io.makedirs(file_io.dirname(path))
    except OSError as e:
      raise UserInputError(f"--output_file={path}: cannot create its "
                           f"directory: {e}") from None
    # Object stores have no permission bits to check before the first write.
    if (not file_io.is_remote(path) and
        not os.access(os.path.dirname(os.path.abspath(path)), os.W_OK)):
      raise UserInputError(f"--output_file={path}: directory not writable")
  tokenizer = SentencePieceTokenizer(spm_model_file,
                                     do_lower_case=do_lower_case)
  vocab = pretraining_data.VocabInfo(
      vocab_size=tokenizer.vocab_size, cls_id=tokenizer.cls_id,
      sep_id=tokenizer.sep_id, mask_id=tokenizer.mask_id,
      start_piece=tokenizer.start_piece_table())

  num_pieces = sum(corpus_pieces.pieces_per_file(files, piece_bytes))
  num_shards = len(paths)
  if num_pieces < num_shards:
    logging.warning("%d input pieces for %d shards: some shards are empty "
                    "(lower --num_output_shards)", num_pieces, num_shards)
  settings = {"options": dataclasses.asdict(options),
              "do_lower_case": do_lower_case, "dupe_factor": dupe_factor,
              "random_seed": random_seed, "piece_bytes": piece_bytes,
              "skip_non_utf8_lines": skip_non_utf8_lines,
              "num_shards": num_shards}
  fingerprints = _fingerprints(files, spm_model_file, settings, paths)
  total = PretrainingStats()
  done = {}
  for shard, path in enumerate(paths):
    _remove_stale_temps(path)
    previous = _complete_shard_stats(path, fingerprints[shard])
    if previous is not None:
      done[shard] = previous
      total.add(previous)
  if done:
    logging.info("skipping %d complete shard(s) of a previous run", len(done))

  def shard_of(piece_index):
    return piece_index * num_shards // num_pieces

  last_piece = {}
  for p in range(num_pieces):
    last_piece[shard_of(p)] = p
  pieces_todo = sum(1 for p in range(num_pieces) if shard_of(p) not in done)

  initargs = (spm_model_file, do_lower_case, options, vocab, random_seed,
              dupe_factor, 1, skip_non_utf8_lines)
  workers = min(num_workers, max(pieces_todo, 1))
  executor = None
  if workers > 1:
    # Not fork: the parent may have imported TensorFlow (threads).
    executor = concurrent.futures.ProcessPoolExecutor(
        workers, mp_context=multiprocessing.get_context("spawn"),
        initializer=pretraining_worker.init_worker, initargs=initargs)
  else:
    pretraining_worker.init_worker(*initargs)

  writers: Dict[int, _ShardWriter] = {}
  unpublished: List[_ShardWriter] = []
  bar = _progress(pieces_todo, show_progress)
  written = PretrainingStats()

  def publish(writer):
    # Until some instance exists the corpus may still turn out empty.
    if total.instances + written.instances > 0:
      writer.publish()
    else:
      unpublished.append(writer)

  def handle(result):
    index, data, stats = result
    shard = shard_of(index)
    writer = writers.get(shard)
    if writer is None:
      writer = writers[shard] = _ShardWriter(paths[shard], fingerprints[shard])
    writer.write(data, stats)
    written.add(stats)
    if bar is not None:
      bar.update(1)
      bar.set_postfix(instances=written.instances, refresh=False)
    if index == last_piece[shard]:
      writer.close()
      publish(writer)
      del writers[shard]
      while unpublished and written.instances:
        unpublished.pop(0).publish()

  try:
    pending = collections.deque()
    for spec in corpus_pieces.plan_pieces(files, piece_bytes):
      if shard_of(spec.index) in done:
        continue
      if executor is None:
        handle(pretraining_worker.process_piece(spec))
        continue
      pending.append(executor.submit(pretraining_worker.process_piece, spec))
      while len(pending) >= 2 * workers:
        handle(pending.popleft().result())
    while pending:
      handle(pending.popleft().result())
    if total.instances + written.instances == 0:
      reason = ("no documents" if not written.documents else
                "documents too short for any instance")
      raise UserInputError(
          f"--input_file: empty corpus ({reason}; "
          f"{written.skipped_lines} non-UTF-8 lines skipped): "
          f"{', '.join(files)}")
    # More shards than pieces: the shards without a piece are empty files.
    for shard, path in enumerate(paths):
      if shard not in last_piece and shard not in done:
        writer = _ShardWriter(path, fingerprints[shard])
        writer.close()
        writer.publish()
    while unpublished:
      unpublished.pop(0).publish()
  except BaseException:
    for writer in list(writers.values()) + unpublished:
      writer.discard()
    if executor is not None:
      executor.shutdown(wait=False, cancel_futures=True)
      executor = None
    raise
  finally:
    if bar is not None:
      bar.close()
    if executor is not None:
      executor.shutdown()

  total.add(written)
  seconds = time.time() - started
  summary = total.to_dict()
  summary.update(total.derived())
  summary.update(
      outputs=paths, seconds=seconds,
      instances_per_second=written.instances / max(seconds, 1e-9),
      instances_per_piece=total.instances / max(num_pieces, 1),
      settings=settings)
  write_json(stats_path(output_file, num_output_shards), summary)
  logging.info("wrote %d shard(s), %d instances in %.1f s", num_shards,
               total.instances, seconds)
  return summary

