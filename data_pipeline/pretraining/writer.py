"""Corpus -> sharded pretraining TFRecords, in parallel and in bounded memory.

How a run goes (`create_pretraining_data`):

0. Every flag and input is checked and the run planned before any piece is
   read (`pretraining_plan.plan_run`).
1. The corpus is cut into pieces of `piece_bytes` input bytes
   (`corpus_pieces`); a piece is the unit of work. Worker processes
   (`pretraining_worker`) read a piece, tokenize it (one batched
   SentencePiece call), make its instances for every dupe
   (`sop_instances`), shuffle and mask them (`mlm_masking`), encode them as
   `tf.train.Example`s and frame them as TFRecords (`tfrecord_io`, no
   TensorFlow in workers).
2. The main process writes piece results in corpus order. Shards hold
   consecutive pieces (piece p goes to shard p * num_shards // num_pieces), so
   shards complete one after another: each is written under a hidden
   temporary name and renamed when complete, with its stats in a hidden
   sidecar `.<shard name>.stats.json`. A rerun skips every shard whose file
   and sidecar exist for the same inputs and settings (`shard_files`).
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
the official flag); see `shard_files` for the shard and stats names.

Vocabularies. A SentencePiece model (`spm_model_file`) or a WordPiece
`vocab.txt` (`vocab_file`, e.g. the released Chinese ALBERTs'
`vocab_chinese.txt`), with the official precedence: given both,
SentencePiece is used and the vocab file ignored (one log line). With a
WordPiece vocabulary, `word_segmenter="jieba"` masks whole Chinese words
(`word_segmentation`); the default `none` is the official per-character rule.

Filesystems. Inputs, outputs and the vocabulary may be on any
TensorFlow filesystem (`gs://`); local files are read and written with
Python's file API, so a local run never imports TensorFlow.
"""

import collections
import concurrent.futures
import multiprocessing
import os
import sys
import time
from typing import Dict, Iterable, List, Optional

from absl import logging

from albert_common.errors import UserInputError
from data_pipeline.corpora import corpus_pieces
from data_pipeline.corpora.corpus_options import CorpusOptions
from data_pipeline.pretraining import worker as pretraining_worker
from data_pipeline.pretraining.instance_options import InstanceOptions
from data_pipeline.pretraining.plan import DEFAULT_PIECE_BYTES
from data_pipeline.pretraining.plan import RunPlan
from data_pipeline.pretraining.plan import plan_run
from data_pipeline.pretraining.shard_files import ShardWriter
from data_pipeline.pretraining.stats import PretrainingStats
from data_pipeline.pretraining.stats import write_json


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


class _NoProgress:
  """No progress shown (show_progress=False)."""

  def update(self, n: int):
    del n

  def set_postfix(self, refresh=False, **values):
    del refresh, values

  def close(self):
    pass


def _progress(total: int, enabled: bool):
  """A tqdm bar on stderr (absl log lines without tqdm), or no progress."""
  if not enabled:
    return _NoProgress()
  try:
    import tqdm
  except ImportError:
    return _LogProgress(total)
  # Shown after a second (a run that fails at once shows no bar).
  return tqdm.tqdm(total=total, unit="piece", file=sys.stderr,
                   dynamic_ncols=True, delay=1.0)


def create_pretraining_data(
    input_file: str,
    output_file: str,
    spm_model_file: str,
    options: InstanceOptions,
    do_lower_case: bool = True,
    dupe_factor: int = 40,
    random_seed: int = 12345,
    num_workers: Optional[int] = None,
    num_output_shards: Optional[int] = None,
    piece_bytes: int = DEFAULT_PIECE_BYTES,
    skip_non_utf8_lines: bool = False,
    show_progress: bool = True,
    albert_config_file: Optional[str] = None,
    corpus: Optional[CorpusOptions] = None,
    vocab_file: Optional[str] = None,
    word_segmenter: str = "none") -> Dict:
  """Writes pretraining TFRecords for a corpus; returns the stats summary.

  Args:
    input_file: comma-separated paths or globs of text files.
    output_file: output path or comma-separated paths (see module doc).
    spm_model_file: SentencePiece model (pieces <pad> <unk> [CLS] [SEP]
      [MASK]), or None to use `vocab_file`.
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
    albert_config_file: optional ALBERT config the records are for; its
      vocab_size must hold every SentencePiece id (checked before any work).
    corpus: CorpusOptions: input format, text field, sentence splitter,
      document hygiene (default: the official text format).
    vocab_file: WordPiece `vocab.txt` ([PAD] [UNK] [CLS] [SEP] [MASK]),
      used when `spm_model_file` is not given.
    word_segmenter: `none` (official: every CJK character a word) or
      `jieba` (Chinese words for whole-word masking; needs `vocab_file`).

  Returns:
    dict: the PretrainingStats fields, their `derived()` ratios, "outputs",
    "seconds", "instances_per_second"; also written as JSON (`stats_path`).

  Raises:
    UserInputError: missing input, empty corpus, bad flag value, non-UTF-8
      text. No partial file is left under an output name; shards completed
      before the error stay (they are complete, and a rerun reuses them).
  """
  started = time.time()
  num_workers = num_workers or os.cpu_count() or 1
  if num_workers < 1:
    raise UserInputError(f"--num_workers={num_workers} must be at least 1")
  plan = plan_run(input_file, output_file, spm_model_file, options,
                  do_lower_case, dupe_factor, random_seed, num_output_shards,
                  piece_bytes, skip_non_utf8_lines, albert_config_file,
                  corpus=corpus, vocab_file=vocab_file,
                  word_segmenter=word_segmenter)
  shards = _Shards(plan)
  todo = plan.num_pieces_to_make()
  runner = _PieceRunner(plan.initargs, min(num_workers, max(todo, 1)))
  bar = _progress(todo, show_progress)
  try:
    specs = (spec for file_range in plan.file_ranges()
             for spec in plan.pieces_to_make(file_range))
    for result in runner.results(specs):
      shards.add(result)
      bar.update(1)
      bar.set_postfix(instances=shards.written.instances, refresh=False)
    shards.finish()
  except BaseException:
    bar.leave = False  # the error line is the last thing shown
    shards.discard()
    runner.close(cancel=True)
    raise
  finally:
    bar.close()
    runner.close()
  return _write_summary(plan, shards.written, started)


class _PieceRunner:
  """Runs `process_piece` over pieces and hands the results back in order.

  One worker runs in this process; more are spawned processes with at most
  2 per worker pieces in flight, so memory does not grow with the corpus.

  Args:
    initargs: `RunPlan.initargs`.
    workers: how many processes make pieces.
  """

  def __init__(self, initargs: tuple, workers: int):
    self._workers = workers
    self._executor = None
    if workers > 1:
      # Not fork: the parent may have imported TensorFlow (threads).
      self._executor = concurrent.futures.ProcessPoolExecutor(
          workers, mp_context=multiprocessing.get_context("spawn"),
          initializer=pretraining_worker.init_worker, initargs=initargs)
    else:
      pretraining_worker.init_worker(*initargs)

  def results(self, specs: Iterable[corpus_pieces.PieceSpec]):
    """(piece index, TFRecord bytes, PretrainingStats) of each spec."""
    if self._executor is None:
      for spec in specs:
        yield pretraining_worker.process_piece(spec)
      return
    pending = collections.deque()
    for spec in specs:
      pending.append(self._executor.submit(pretraining_worker.process_piece,
                                           spec))
      while len(pending) >= 2 * self._workers:
        yield pending.popleft().result()
    while pending:
      yield pending.popleft().result()

  def close(self, cancel: bool = False) -> None:
    """Stops the workers: after their pieces, or at once with `cancel`."""
    if self._executor is not None:
      if cancel:
        self._executor.shutdown(wait=False, cancel_futures=True)
      else:
        self._executor.shutdown()
      self._executor = None


class _Shards:
  """Piece results, in corpus order, -> shard files, each published whole.

  A shard is published (sidecar, then rename) after its last piece, but not
  before the run has made an instance: until then the corpus may still turn
  out empty, and complete shards wait unpublished.
  """

  def __init__(self, plan: RunPlan):
    self.plan = plan
    self.written = PretrainingStats()
    self._instances_before = plan.previous_stats().instances
    self._last_piece = {plan.shard_of(p): p for p in range(plan.num_pieces)}
    self._writers: Dict[int, ShardWriter] = {}
    self._unpublished: List[ShardWriter] = []

  def add(self, result) -> None:
    """Appends one piece's records to its shard; publishes a complete one."""
    index, data, stats = result
    shard = self.plan.shard_of(index)
    writer = self._writers.get(shard)
    if writer is None:
      writer = self._writers[shard] = self._writer(shard)
    writer.write(data, stats)
    self.written.add(stats)
    if index == self._last_piece[shard]:
      writer.close()
      del self._writers[shard]
      self._unpublished.append(writer)
      self._publish_ready()

  def finish(self) -> None:
    """Publishes what is left once every piece is written.

    Raises:
      UserInputError: the run made no instance (an empty corpus).
    """
    if not self._made_instances():
      raise self.plan.empty_corpus_error(self.written)
    # More shards than pieces: the shards without a piece are empty files.
    for shard in range(len(self.plan.paths)):
      if shard not in self._last_piece and shard not in self.plan.done:
        writer = self._writer(shard)
        writer.close()
        writer.publish()
    self._publish_ready()

  def discard(self) -> None:
    """Deletes the temporaries of every shard not published."""
    for writer in list(self._writers.values()) + self._unpublished:
      writer.discard()

  def _writer(self, shard: int) -> ShardWriter:
    return ShardWriter(self.plan.paths[shard],
                       self.plan.fingerprints[shard])

  def _made_instances(self) -> bool:
    return self._instances_before + self.written.instances > 0

  def _publish_ready(self) -> None:
    while self._unpublished and self._made_instances():
      self._unpublished.pop(0).publish()


def _write_summary(plan: RunPlan, written: PretrainingStats,
                   started: float) -> Dict:
  """Writes the run's stats JSON (`plan.stats_path`) and returns it."""
  total = plan.previous_stats()
  total.add(written)
  seconds = time.time() - started
  summary = plan.summary(total, written.instances, seconds)
  write_json(plan.stats_path, summary)
  logging.info("wrote %d shard(s), %d instances in %.1f s", len(plan.paths),
               total.instances, seconds)
  return summary
