"""Corpus -> sharded pretraining TFRecords, in parallel and in bounded memory.

How a run goes (`create_pretraining_data`):

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
import dataclasses
import hashlib
import json
import multiprocessing
import os
import sys
import time
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from absl import logging

from albert_common import file_io
from albert_common.errors import UserInputError
from data_pipeline import corpus_pieces
from data_pipeline import document_pieces
from data_pipeline import pretraining_worker
from data_pipeline import word_segmentation
from data_pipeline.corpus_options import CorpusOptions
from data_pipeline.instance_options import InstanceOptions
from data_pipeline.instance_options import VocabInfo
from data_pipeline.pretraining_stats import PretrainingStats
from data_pipeline.pretraining_stats import write_json
from data_pipeline.wordpiece_tokenization import WordPieceTokenizer
from data_pipeline.wordpiece_tokenization import make_tokenizer

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


def _fingerprints(files, vocabulary_file, settings: Dict,
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


@dataclasses.dataclass
class RunPlan:
  """What a run will write, settled before any piece is read.

  Made by `plan_run`; shared by the local path below and the Beam pipeline
  (`beam_pipeline`), so both check the same things, cut the same pieces and
  shards and write the same summary.

  Attributes:
    files: the input files, in order.
    piece_counts: int list, pieces of each file.
    paths: the shard paths.
    stats_path: the run's stats JSON.
    settings: dict of every setting the bytes depend on (also in the JSON).
    fingerprints: one digest per shard (inputs, model and settings).
    done: {shard: PretrainingStats} of shards a previous run completed.
    initargs: `pretraining_worker.init_worker`'s arguments (num_threads 1).
  """
  files: List[str]
  piece_counts: List[int]
  paths: List[str]
  stats_path: str
  settings: Dict
  fingerprints: List[str]
  done: Dict[int, PretrainingStats]
  initargs: tuple

  @property
  def num_pieces(self) -> int:
    return sum(self.piece_counts)

  def shard_of(self, piece_index: int) -> int:
    """Shards hold consecutive pieces: piece p goes to p * S // P."""
    return piece_index * len(self.paths) // self.num_pieces

  def piece_done(self, piece_index: int) -> bool:
    """Whether a previous run completed the piece's shard."""
    return self.shard_of(piece_index) in self.done

  def num_pieces_to_make(self) -> int:
    """How many pieces this run makes."""
    return sum(1 for p in range(self.num_pieces) if not self.piece_done(p))

  def file_ranges(self) -> List[Tuple[str, int, int, int]]:
    """(path, file index, index of its first piece, its number of pieces)
    of every input file."""
    ranges, first = [], 0
    for file_index, (path, count) in enumerate(
        zip(self.files, self.piece_counts)):
      ranges.append((path, file_index, first, count))
      first += count
    return ranges

  def pieces_to_make(self, file_range: Tuple[str, int, int, int]
                     ) -> Iterator[corpus_pieces.PieceSpec]:
    """The pieces of one file (a `file_ranges` item) this run makes."""
    for spec in corpus_pieces.file_pieces(*file_range,
                                          self.settings["piece_bytes"]):
      if not self.piece_done(spec.index):
        yield spec

  def previous_stats(self) -> PretrainingStats:
    """The stats of the shards a previous run completed, added up."""
    total = PretrainingStats()
    for stats in self.done.values():
      total.add(stats)
    return total

  def empty_corpus_error(self, written: PretrainingStats) -> UserInputError:
    """The error for a run that made no instance."""
    reason = ("no documents" if not written.documents else
              "documents too short for any instance")
    return UserInputError(
        f"--input_file: empty corpus ({reason}; "
        f"{written.skipped_lines} non-UTF-8 lines and "
        f"{written.bad_records} bad records skipped, "
        f"{written.short_documents + written.duplicate_documents} documents "
        "dropped): "
        f"{', '.join(self.files)}")

  def summary(self, total: PretrainingStats, written_instances: int,
              seconds: float) -> Dict:
    """The stats JSON: `total`'s fields and ratios, outputs, speed."""
    summary = total.to_dict()
    summary.update(total.derived())
    summary.update(
        outputs=self.paths, seconds=seconds,
        instances_per_second=written_instances / max(seconds, 1e-9),
        instances_per_piece=total.instances / max(self.num_pieces, 1),
        settings=self.settings)
    return summary


def _config_vocab_size(albert_config_file: str) -> int:
  """vocab_size in an ALBERT config JSON (the model reads the rest)."""
  values = file_io.read_json_object(albert_config_file, "ALBERT config")
  vocab_size = values.get("vocab_size")
  if not isinstance(vocab_size, int) or vocab_size < 1:
    raise UserInputError(f"bad ALBERT config {albert_config_file}: "
                         f"vocab_size={vocab_size!r} is not a positive "
                         "integer")
  return vocab_size


def plan_run(input_file: str, output_file: str, spm_model_file: str,
             options: InstanceOptions,
             do_lower_case: bool = True, dupe_factor: int = 40,
             random_seed: int = 12345,
             num_output_shards: Optional[int] = None,
             piece_bytes: int = DEFAULT_PIECE_BYTES,
             skip_non_utf8_lines: bool = False,
             albert_config_file: Optional[str] = None,
             fs=None, corpus: Optional[CorpusOptions] = None,
             vocab_file: Optional[str] = None,
             word_segmenter: str = "none") -> RunPlan:
  """Checks the flags and inputs and plans the run (see RunPlan).

  Args are `create_pretraining_data`'s; `fs` the filesystem functions
  (default file_io; the Beam pipeline passes a BeamFileIO).

  Raises:
    UserInputError: bad flag value, missing input, empty corpus, output
      not writable, a vocabulary larger than the ALBERT config's, a Parquet
      file without the text column, a gzip file cut short, a word segmenter
      without a WordPiece vocabulary.
  """
  fs = fs or file_io
  corpus = corpus or CorpusOptions()
  corpus.validate()
  _check_settings(options, dupe_factor, piece_bytes)
  word_segmentation.check_word_segmenter(word_segmenter, spm_model_file,
                                         vocab_file)
  if not (spm_model_file or vocab_file):
    make_tokenizer(None, None)  # The error naming both flags.
  files = corpus_pieces.resolve_input_files(input_file, fs)
  if all(fs.getsize(p) == 0 for p in files):
    raise UserInputError(f"--input_file: empty corpus: {', '.join(files)}")
  paths = output_paths(output_file, num_output_shards)
  for path in paths:
    _check_output(path, fs)
  # Read (and, given both files, the precedence logged) once, here.
  tokenizer = make_tokenizer(spm_model_file, vocab_file, do_lower_case, fs)
  if spm_model_file:
    vocab_file = None
  vocab = _vocabulary(tokenizer, spm_model_file or vocab_file,
                      albert_config_file)
  piece_counts = document_pieces.pieces_per_file(files, corpus, piece_bytes,
                                                 fs)
  if sum(piece_counts) < len(paths):
    logging.warning("%d input pieces for %d shards: some shards are empty "
                    "(lower --num_output_shards)", sum(piece_counts),
                    len(paths))
  settings = {"options": dataclasses.asdict(options),
              "do_lower_case": do_lower_case, "dupe_factor": dupe_factor,
              "random_seed": random_seed, "piece_bytes": piece_bytes,
              "skip_non_utf8_lines": skip_non_utf8_lines,
              "num_shards": len(paths)}
  if corpus != CorpusOptions():  # Official runs keep their fingerprints.
    settings["corpus"] = dataclasses.asdict(corpus)
  if vocab_file:  # SentencePiece runs keep theirs too.
    settings["tokenizer"] = "wordpiece"
  if word_segmenter != "none":  # Per-character runs keep theirs too.
    settings["word_segmenter"] = word_segmenter
  fingerprints = _fingerprints(files, spm_model_file or vocab_file, settings,
                               paths, fs)
  done = _completed_shards(paths, fingerprints, fs)
  initargs = (spm_model_file, do_lower_case, options, vocab, random_seed,
              dupe_factor, 1, skip_non_utf8_lines, corpus, vocab_file,
              word_segmenter)
  return RunPlan(files, piece_counts, paths,
                 stats_path(output_file, num_output_shards), settings,
                 fingerprints, done, initargs)


def _check_settings(options: InstanceOptions,
                    dupe_factor: int, piece_bytes: int) -> None:
  """Raises UserInputError naming a flag that is out of range or missing."""
  options.validate()
  if dupe_factor < 1:
    raise UserInputError(f"--dupe_factor={dupe_factor} must be at least 1")
  if piece_bytes < 1:
    raise UserInputError(f"piece_bytes={piece_bytes} must be at least 1")


def _check_output(path: str, fs) -> None:
  """Makes the shard's folder; UserInputError if it cannot be written."""
  if fs.isdir(path):
    raise UserInputError(f"--output_file: {path} is a directory; give a "
                         "file path (shards get -NNNNN-of-NNNNN suffixes)")
  try:
    fs.makedirs(file_io.dirname(path))
  except OSError as e:
    raise UserInputError(f"--output_file={path}: cannot create its "
                         f"directory: {e}") from None
  # Object stores have no permission bits to check before the first write.
  if (not file_io.is_remote(path) and
      not os.access(os.path.dirname(os.path.abspath(path)), os.W_OK)):
    raise UserInputError(f"--output_file={path}: directory not writable")


def _vocabulary(tokenizer, path: str, albert_config_file: Optional[str]
                ) -> VocabInfo:
  """The tokenizer's VocabInfo, checked against the config's vocab_size.

  Args:
    tokenizer: a `make_tokenizer` result.
    path: the file it was read from (named in errors).
    albert_config_file: optional ALBERT config JSON.
  """
  if albert_config_file:
    vocab_size = _config_vocab_size(albert_config_file)
    if tokenizer.vocab_size > vocab_size:
      wordpiece = isinstance(tokenizer, WordPieceTokenizer)
      flag = "--vocab_file" if wordpiece else "--spm_model_file"
      what = "tokens" if wordpiece else "pieces"
      raise UserInputError(
          f"{flag}={path} has {tokenizer.vocab_size} {what}, more than "
          f"vocab_size={vocab_size} in "
          f"--albert_config_file={albert_config_file}; ids past the "
          "embedding table would fail pretraining (use this vocabulary's "
          "config)")
  return VocabInfo(
      vocab_size=tokenizer.vocab_size, cls_id=tokenizer.cls_id,
      sep_id=tokenizer.sep_id, mask_id=tokenizer.mask_id,
      start_piece=tokenizer.start_piece_table())


def _completed_shards(paths: Sequence[str], fingerprints: Sequence[str],
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
    publish_shard(self.temp, self.path, self.fingerprint, self.stats)

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
    self._writers: Dict[int, _ShardWriter] = {}
    self._unpublished: List[_ShardWriter] = []

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

  def _writer(self, shard: int) -> _ShardWriter:
    return _ShardWriter(self.plan.paths[shard],
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
