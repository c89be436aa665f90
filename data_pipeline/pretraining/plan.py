"""The plan of a pretraining run: flags checked, inputs listed, shards named.

`plan_run` checks every flag and input before any piece is read, reads the
vocabulary once, counts the pieces of every input file (`document_pieces`),
names the shards and finds those a previous run completed (`shard_files`).
The local writer (`pretraining_writer`) and the Beam pipeline
(`beam_pipeline`) both run from its `RunPlan`, so they check the same things,
cut the same pieces and shards and write the same summary.
"""

import dataclasses
import os
from typing import Dict, Iterator, List, Optional, Tuple

from absl import logging

from albert_common import file_io
from albert_common.errors import UserInputError
from data_pipeline.corpora import corpus_pieces
from data_pipeline.corpora import document_pieces
from data_pipeline.corpora.corpus_options import CorpusOptions
from data_pipeline.pretraining import shard_files
from data_pipeline.pretraining.data_creation_params import DEFAULT_PIECE_BYTES
from data_pipeline.pretraining.instance_options import InstanceOptions
from data_pipeline.pretraining.instance_options import VocabInfo
from data_pipeline.pretraining.stats import PretrainingStats
from data_pipeline.tokenization import word_segmentation
from data_pipeline.tokenization.factory import make_tokenizer
from data_pipeline.tokenization.wordpiece_tokenizer import WordPieceTokenizer


@dataclasses.dataclass
class RunPlan:
  """What a run will write, settled before any piece is read.

  Made by `plan_run`; shared by the local path (`pretraining_writer`) and
  the Beam pipeline (`beam_pipeline`), so both check the same things, cut
  the same pieces and shards and write the same summary.

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
  paths = shard_files.output_paths(output_file, num_output_shards)
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
  fingerprints = shard_files.shard_fingerprints(
      files, spm_model_file or vocab_file, settings, paths, fs)
  done = shard_files.completed_shards(paths, fingerprints, fs)
  initargs = (spm_model_file, do_lower_case, options, vocab, random_seed,
              dupe_factor, 1, skip_non_utf8_lines, corpus, vocab_file,
              word_segmenter)
  return RunPlan(files, piece_counts, paths,
                 shard_files.stats_path(output_file, num_output_shards),
                 settings,
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
