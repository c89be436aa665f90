"""create_pretraining_data on Apache Beam: the local path's bytes, at scale.

`create_pretraining_data_beam` runs on any Beam runner (DirectRunner on one
machine; Dataflow, Flink, Spark or a portable job server on a cluster) and
writes what `pretraining_writer.create_pretraining_data` writes for the same
settings: the same shards byte for byte, the same hidden sidecars and the
same stats JSON (its timings aside). Both paths plan with
`pretraining_plan.plan_run` and turn a piece into records with
`pretraining_worker.process_piece`; nothing of the algorithm is repeated here.

The pipeline (P pieces, S shards; piece p goes to shard p * S // P):

  Create       one element per input file: (path, file index, first piece)
  FlatMap      the file's pieces, less those of shards a previous run
               completed (`RunPlan.pieces_to_make`)
  Reshuffle    so the pieces of one large file spread over workers
  ParDo        process_piece: read, tokenize, make, shuffle, mask, encode and
               frame the piece's instances; write the framed bytes to a
               scratch file; emit (shard, (piece index, scratch file, stats))
  GroupByKey   per shard (plus an empty entry per shard, so a shard with no
               piece is still written, as an empty file)
  ParDo        concatenate the shard's scratch files in piece order into a
               hidden temporary next to the shard: the local path's bytes
  Map          publish, once the pieces' stats (CombineGlobally, a side
               input) show that the run made an instance: the sidecar, then
               a rename to the shard's name
  Map          after every shard is published: the stats JSON; the scratch
               folder is deleted

Memory. A worker holds one piece's instances at a time, as a local worker
does; GroupByKey moves only (index, path, stats) triples, and a shard is
copied file to file in 1 MiB blocks, so no step holds a shard or the corpus.
Disk: the scratch folder (`.<first output>.beam-<token>`, next to the first
output) holds the output once more until the run ends.

Failures. A bad input found on a worker (a line that is not UTF-8, ...)
fails the job; the launcher finds the `UserInputError` message in the
runner's error text and raises it again, so the command prints the local
path's one line. Nothing is published before every piece succeeded, and the
launcher deletes its scratch files and temporaries when the job fails.
Retried bundles write new scratch names; publishing is idempotent.
"""

import contextlib
import dataclasses
import json
import re
import time
from typing import Dict, List, Optional, Sequence
import uuid

from absl import logging
import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.runner import PipelineState

from albert_common.errors import UserInputError
from data_pipeline.corpora import corpus_pieces
from data_pipeline.pretraining import plan as pretraining_plan
from data_pipeline.pretraining import shard_files
from data_pipeline.pretraining import worker as pretraining_worker
from data_pipeline.pretraining.beam.filesystems import BeamFileIO
from data_pipeline.pretraining.instance_options import InstanceOptions
from data_pipeline.pretraining.stats import PretrainingStats
from data_pipeline.pretraining.stats import write_json

RUNNERS = ("DirectRunner", "DataflowRunner", "FlinkRunner", "SparkRunner",
           "PortableRunner", "PrismRunner")
_COPY_BLOCK = 1 << 20
# A worker's UserInputError crosses the runner as text between these marks.
_MARK = ("<<albert-user-input-error:", ":albert-user-input-error>>")
_MARKED = re.compile(re.escape(_MARK[0]) + r"(.*?)" + re.escape(_MARK[1]),
                     re.S)


@contextlib.contextmanager
def user_errors():
  """Re-raises a UserInputError with its message marked for the launcher."""
  try:
    yield
  except UserInputError as e:
    raise RuntimeError(f"{_MARK[0]}{e}{_MARK[1]}") from e


def user_error_in(error: BaseException) -> Optional[str]:
  """The marked UserInputError message in a failed job's error, if any."""
  seen = set()
  while error is not None and id(error) not in seen:
    seen.add(id(error))
    found = _MARKED.search(str(error))
    if found:
      return found.group(1)
    error = error.__cause__ or error.__context__
  return None


def pipeline_options(pipeline_args: Sequence[str], runner: str,
                     num_workers: Optional[int] = None) -> PipelineOptions:
  """Beam's options from the command line's leftover flags.

  Raises:
    UserInputError: an unknown runner, or a flag neither ours nor Beam's
      (a typo would otherwise be dropped with a log line).
  """
  if runner not in RUNNERS:
    raise UserInputError(f"--runner={runner}: not one of "
                         f"{', '.join(RUNNERS)} (omit it for the local path)")
  extra = {"runner": runner}
  if num_workers:
    extra["num_workers"] = num_workers
  options = PipelineOptions(list(pipeline_args), **extra)
  known = options.get_all_options()
  unknown = sorted(set(options.get_all_options(retain_unknown_options=True))
                   - set(known))
  if unknown:
    raise UserInputError(
        f"unknown flag(s) --{', --'.join(unknown)}: neither a flag of "
        "the tool nor an Apache Beam pipeline option")
  return options


class _SumStats(beam.CombineFn):
  """PretrainingStats added up (the run's totals for the stats JSON)."""

  def create_accumulator(self):
    return PretrainingStats()

  def add_input(self, accumulator, stats):
    accumulator.add(stats)
    return accumulator

  def merge_accumulators(self, accumulators):
    total = PretrainingStats()
    for accumulator in accumulators:
      total.add(accumulator)
    return total

  def extract_output(self, accumulator):
    return accumulator


class _MakePieceRecords(beam.DoFn):
  """PieceSpec -> (shard, (piece index, scratch file, PretrainingStats)).

  Args:
    initargs: `RunPlan.initargs` (model path, options, vocabulary, seed ...).
    scratch: folder for the pieces' framed records.
    shard_of: `RunPlan.shard_of`.
  """

  def __init__(self, initargs: tuple, scratch: str, shard_of):
    self._initargs = initargs
    self._scratch = scratch
    self._shard_of = shard_of
    self._fs = None

  def setup(self):
    self._fs = BeamFileIO()
    with user_errors():
      pretraining_worker.init_worker(*self._initargs, fs=self._fs)

  def process(self, spec: corpus_pieces.PieceSpec):
    with user_errors():
      index, data, stats = pretraining_worker.process_piece(spec)
    path = self._fs.join(self._scratch,
                         f"piece-{index:09d}-{uuid.uuid4().hex[:8]}")
    with self._fs.open_write(path) as f:
      f.write(data)
    yield self._shard_of(index), (index, path, stats)


class _ConcatenateShard(beam.DoFn):
  """(shard, pieces) -> (shard, temporary file, shard's PretrainingStats).

  The shard's pieces are copied in piece order into a hidden temporary next
  to the shard (`.<name>.tmp-beam-<token>-<attempt>`).
  """

  def __init__(self, paths: List[str], token: str):
    self._paths = paths
    self._token = token
    self._fs = None

  def setup(self):
    self._fs = BeamFileIO()

  def process(self, element):
    shard, values = element
    pieces = sorted((v for v in values if v is not None), key=lambda v: v[0])
    temp = self._fs.temp_name(
        self._paths[shard], f"beam-{self._token}-{uuid.uuid4().hex[:8]}")
    stats = PretrainingStats()
    with self._fs.open_write(temp) as out:
      for _, path, piece_stats in pieces:
        with self._fs.open_read(path) as f:
          while True:
            block = f.read(_COPY_BLOCK)
            if not block:
              break
            out.write(block)
        stats.add(piece_stats)
    yield shard, temp, stats


def _publish(element, total: PretrainingStats, plan, fs: BeamFileIO):
  """Sidecar + rename of one shard, once the run is known to be non-empty."""
  shard, temp, stats = element
  if total.instances + plan.previous_stats().instances == 0:
    with user_errors():
      raise plan.empty_corpus_error(total)
  path = plan.paths[shard]
  if not fs.exists(temp) and fs.exists(path):
    return shard  # A retry of a publish that completed.
  shard_files.publish_shard(temp, path, plan.fingerprints[shard], stats, fs)
  return shard


def _write_summary(unused_count, total: PretrainingStats, plan,
                   started: float, scratch: str, token: str, fs: BeamFileIO):
  """The stats JSON (as the local path's); then scratch files and the
  temporaries of retried attempts go."""
  del unused_count
  everything = plan.previous_stats()
  everything.add(total)
  summary = plan.summary(everything, total.instances, time.time() - started)
  write_json(plan.stats_path, summary, fs)
  _remove_temporaries(plan, scratch, token, fs)


def build_pipeline(pipeline: beam.Pipeline, plan, scratch: str, token: str,
                   started: float, fs: BeamFileIO) -> None:
  """Adds the steps of the module docstring to `pipeline`."""
  # Only the pieces' step needs the vocabulary: keep the job graph small.
  slim = dataclasses.replace(plan, initargs=())
  todo = [s for s in range(len(plan.paths)) if s not in plan.done]

  pieces = (pipeline
            | "Files" >> beam.Create(plan.file_ranges())
            | "Pieces" >> beam.FlatMap(slim.pieces_to_make)
            | "Spread" >> beam.Reshuffle()
            | "Instances" >> beam.ParDo(_MakePieceRecords(
                plan.initargs, scratch, slim.shard_of)))
  total = (pieces
           | "PieceStats" >> beam.Map(lambda kv: kv[1][2])
           | "Total" >> beam.CombineGlobally(_SumStats()))
  every_shard = pipeline | "Shards" >> beam.Create([(s, None) for s in todo])
  published = ((pieces, every_shard)
               | "WithEmptyShards" >> beam.Flatten()
               | "ByShard" >> beam.GroupByKey()
               | "Concatenate" >> beam.ParDo(_ConcatenateShard(plan.paths,
                                                                token))
               | "Publish" >> beam.Map(_publish, beam.pvalue.AsSingleton(
                   total), slim, fs))
  _ = (published
       | "AllPublished" >> beam.combiners.Count.Globally()
       | "Summary" >> beam.Map(_write_summary, beam.pvalue.AsSingleton(
           total), slim, started, scratch, token, fs))


def _remove_temporaries(plan, scratch: str, token: str,
                        fs: BeamFileIO) -> None:
  """Deletes this launch's scratch folder and unpublished temporaries."""
  try:
    fs.rmtree(scratch)
    prefixes = {}
    for path in plan.paths:
      prefixes.setdefault(fs.dirname(path), []).append(
          f".{fs.basename(path)}.tmp-beam-{token}-")
    for folder, names in prefixes.items():
      for name in fs.listdir(folder or "."):
        if name.startswith(tuple(names)):
          fs.remove(fs.join(folder, name))
  except Exception as e:
    logging.warning("could not remove the temporaries of job %s: %s", token,
                    e)


def create_pretraining_data_beam(
    input_file: str,
    output_file: str,
    spm_model_file: str,
    options: InstanceOptions,
    do_lower_case: bool = True,
    dupe_factor: int = 40,
    random_seed: int = 12345,
    num_output_shards: Optional[int] = None,
    piece_bytes: int = pretraining_plan.DEFAULT_PIECE_BYTES,
    skip_non_utf8_lines: bool = False,
    albert_config_file: Optional[str] = None,
    runner: str = "DirectRunner",
    pipeline_args: Sequence[str] = (),
    num_workers: Optional[int] = None,
    corpus=None,
    vocab_file: Optional[str] = None,
    word_segmenter: str = "none") -> Dict:
  """Writes pretraining TFRecords with an Apache Beam pipeline.

  Args: those of `pretraining_writer.create_pretraining_data` (same meaning,
  same output), and
    runner: a Beam runner name (RUNNERS).
    pipeline_args: Beam pipeline options as command-line flags, e.g.
      ["--project=p", "--region=r", "--temp_location=gs://b/tmp"] or
      ["--direct_num_workers=2", "--direct_running_mode=multi_processing"].
    num_workers: Beam's --num_workers (Dataflow: workers at start).

  Returns:
    dict: the stats summary (also written as JSON), as the local path's.

  Raises:
    UserInputError: as the local path, with the same messages; no file is
      published under an output name unless the whole job succeeded.
  """
  started = time.time()
  beam_options = pipeline_options(pipeline_args, runner, num_workers)
  pipeline = new_pipeline(beam_options, runner)
  fs = BeamFileIO(beam_options)
  plan = pretraining_plan.plan_run(
      input_file, output_file, spm_model_file, options, do_lower_case,
      dupe_factor, random_seed, num_output_shards, piece_bytes,
      skip_non_utf8_lines, albert_config_file, fs=fs, corpus=corpus,
      vocab_file=vocab_file, word_segmenter=word_segmenter)
  if len(plan.done) == len(plan.paths):
    logging.info("every shard is complete; nothing to do")
    summary = plan.summary(plan.previous_stats(), 0, time.time() - started)
    write_json(plan.stats_path, summary, fs)
    return summary
  token = uuid.uuid4().hex[:12]
  scratch = _new_scratch(plan.paths[0], token, fs)
  logging.info("Beam %s: %d files, %d pieces, %d shards; scratch %s", runner,
               len(plan.files), plan.num_pieces, len(plan.paths), scratch)
  try:
    build_pipeline(pipeline, plan, scratch, token, started, fs)
    _run(pipeline)
  except Exception as e:
    _remove_temporaries(plan, scratch, token, fs)
    message = user_error_in(e)
    if message is not None:
      raise UserInputError(message) from None
    raise
  summary = json.loads(fs.read_text(plan.stats_path))
  logging.info("wrote %d shard(s), %d instances in %.1f s", len(plan.paths),
               summary["instances"], summary["seconds"])
  return summary


def new_pipeline(beam_options: PipelineOptions,
                  runner: str) -> beam.Pipeline:
  """A Pipeline; UserInputError where the runner refuses its options."""
  try:  # The runner checks its options here (Dataflow: project, region...).
    return beam.Pipeline(options=beam_options)
  except ValueError as e:
    detail = "; ".join(line.strip() for line in str(e).splitlines()
                       if line.strip())
    raise UserInputError(f"--runner={runner}: {detail}") from None


def _new_scratch(first_output: str, token: str, fs: BeamFileIO) -> str:
  """Makes the job's scratch folder next to the first output.

  Scratch folders of launchers that were killed are deleted first.
  """
  folder = fs.dirname(first_output)
  prefix = f".{fs.basename(first_output)}.beam-"
  for name in fs.listdir(folder or "."):
    if name.startswith(prefix):
      fs.rmtree(fs.join(folder, name))
  scratch = fs.join(folder, prefix + token)
  fs.makedirs(scratch)
  return scratch


def _run(pipeline: beam.Pipeline) -> None:
  """Runs the job to its end; RuntimeError unless it ended DONE."""
  state = pipeline.run().wait_until_finish()
  if state not in (None, PipelineState.DONE):
    raise RuntimeError(f"the Beam job ended in state {state}")
