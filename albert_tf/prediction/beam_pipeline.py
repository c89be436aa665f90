"""tools.predict on Apache Beam: the in-process run's files, at scale.

`predict_files_beam` runs on any Beam runner (DirectRunner on one machine;
Dataflow, Flink or Spark beyond it) and writes what
`runner.predict_files` writes for the same settings: the same shards (the
same names, rows in input order, the same columns and predictions, to
float rounding where a batch is cut at another bucket), the same rejects
files, predict_run.json and manifest.json. Both paths prepare the run with
`runner.prepare_run` (the checks, the plan, the rows counted before
anything is written), read with `inputs.InputFile`, cut shards with
`runner.shards`, predict with `batching.predictions` and write with
`writers`; nothing of them is repeated here.

The pipeline (F input files, shard = (file index, shard index)):

  Create        one element per input file: (file index, path)
  FlatMap       read the file (streaming), cut it into shards of
                --rows_per_shard records; a shard already under its final
                name (a rerun) gives only its counts
  Reshuffle     the shards, so one large file's shards spread over workers
  FlatMap       a shard's good rows sorted by tokens (as in-process), keyed
                by (shard, row, key columns); its rejects (--skip_bad_rows)
                and counts
  RunInference  Beam's own, with KeyedModelHandler(ExportModelHandler)
                (beam_handler.py): the export loaded once per worker
                process and shared by its threads; Beam's batches of
                consecutive rows (on Dataflow and Flink, Beam's
                length-aware batching at the export's length buckets)
                sorted again by tokens and cut every --batch_size rows
                (beam_handler.MODEL_CALLS_PER_BATCH)
  GroupByKey    per shard: its predictions, rejects and counts
  ParDo         the shard's rows in input order, written atomically
                (writers: a hidden temporary, then a rename); its rejects
                file first, as in-process
  Map           after every shard: manifest.json (CombineGlobally)

Memory. A reader holds one shard's records (as in-process); a writer one
shard's outputs; RunInference one batch. The shuffles (Reshuffle,
GroupByKey) are the runner's: Dataflow, Flink and Spark keep them out of
the workers' memory, while the DirectRunner holds them in its process --
for a corpus larger than memory on one machine, use the in-process path.

Failures. A bad row stops the run before anything is written when the rows
are counted (--count_rows, the default: the launcher reads the inputs
once). Without counting, a worker's UserInputError fails the job; the
launcher finds its marked message in the runner's error and raises it
again, so the command prints the in-process path's one line. A shard under
its final name is always whole; a retried bundle writes the same bytes
again; the manifest is written last, only by a job that finished.
"""

import logging as std_logging
from typing import Any, Callable, Dict, Iterator, Optional, Sequence, Tuple

from absl import logging
import apache_beam as beam
from apache_beam.ml.inference.base import RunInference
from apache_beam.runners.runner import PipelineState

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf.prediction import batching
from albert_tf.prediction import beam_handler
from albert_tf.prediction import converted_model
from albert_tf.prediction import exported_model
from albert_tf.prediction import manifest as manifest_lib
from albert_tf.prediction import runner
from albert_tf.prediction import writers
from albert_tf.prediction.inputs import Columns
from albert_tf.prediction.inputs import InputFile
from albert_tf.prediction.inputs import InputRow
from albert_tf.prediction.options import PredictOptions
from data_pipeline.pretraining.beam import pipeline as beam_support

# Loggers of the DirectRunner's local harness (gRPC channels, batch sizes).
_LOCAL_CHATTER = ("apache_beam.runners.worker",
                  "apache_beam.runners.portability",
                  "apache_beam.transforms.util")
# Runners whose stateful processing runs Beam's length-aware batching
# across workers (beam_handler.py); the others batch the length-sorted rows
# of each shard as they come.
LENGTH_AWARE_RUNNERS = ("DataflowRunner", "FlinkRunner")
# What a shard's GroupByKey gathers (the value's first item).
_PREDICTED, _REJECT, _COUNTS = "predicted", "reject", "counts"

Shard = Tuple[int, int]  # (file index, shard index)


def _read_file(element: Tuple[int, str], options: PredictOptions,
               columns: Columns) -> Iterator[Tuple[str, Any]]:
  """A file's shards as tagged elements:

    ("shard", (shard, path, its InputRows))        shards to compute
    ("done", (shard, records, bad rows))          shards already written
  """
  file_index, path = element
  with beam_support.user_errors():
    source = InputFile(path, options.input_format, columns)
    for shard, chunk in runner.shards(source.rows(), options.rows_per_shard):
      key = (file_index, shard)
      bad = sum(1 for row in chunk if row.problem)
      if bad and not options.skip_bad_rows:
        raise runner.bad_row_error(next(r for r in chunk if r.problem))
      name = manifest_lib.shard_name(file_index, shard,
                                     options.output_format)
      if file_io.exists(file_io.join(options.output_dir, name)):
        yield "done", (key, len(chunk), bad)
      else:
        yield "shard", (key, path, chunk)


def _split(element: Tuple[str, Any]):
  tag, value = element
  yield beam.pvalue.TaggedOutput(tag, value)


def _shard_rows(element, id_column: str,
                lengths: Callable[[Sequence[InputRow]], Sequence[int]]
               ) -> Iterator[Tuple[str, Any]]:
  """A shard's records as tagged elements, its good rows sorted by
  `lengths` (beam_handler.KeyedTokenCount.lengths: tokens, as the
  in-process run sorts a shard; then position), so consecutive rows batch
  alike:

    ("row", ((shard, row number, key columns), InputRow))
    ("meta", (shard, (_REJECT, reject dict)))
    ("meta", (shard, (_COUNTS, (records, bad rows))))
  """
  key, path, chunk = element
  good = [row for row in chunk if not row.problem]
  keys = lengths(good)
  for i in sorted(range(len(good)), key=lambda i: (keys[i], good[i].row)):
    row = good[i]
    yield beam.pvalue.TaggedOutput("row", (
        (key, row.row, batching.row_key(row, path, id_column)), row))
  for row in chunk:
    if row.problem:
      yield beam.pvalue.TaggedOutput("meta", (key, (_REJECT, {
          "file": path, "row": row.row, "where": row.where,
          "problem": row.problem})))
  yield beam.pvalue.TaggedOutput("meta", (key, (
      _COUNTS, (len(chunk), len(chunk) - len(good)))))


def _to_shard(element) -> Tuple[Shard, Tuple[str, Tuple[int, Dict]]]:
  """((shard, row, key columns), prediction) -> (shard, its output row)."""
  (shard, row, key_columns), prediction = element
  return shard, (_PREDICTED, (row, dict(key_columns, **prediction)))


def _write_shard(element, options: PredictOptions
                ) -> Iterator[Tuple[Shard, int, int]]:
  """Writes a shard's rejects (if any) and rows; yields its counts."""
  (file_index, shard), values = element
  rows, rejects, counts = [], [], None
  for tag, value in values:
    if tag == _PREDICTED:
      rows.append(value)
    elif tag == _REJECT:
      rejects.append(value)
    else:
      counts = value
  if rejects:
    rejects.sort(key=lambda r: r["row"])
    writers.write_rejects(file_io.join(
        options.output_dir, manifest_lib.rejects_name(file_index, shard)),
        rejects)
  rows.sort(key=lambda r: r[0])
  writers.write_shard(
      file_io.join(options.output_dir, manifest_lib.shard_name(
          file_index, shard, options.output_format)),
      [row for _, row in rows], options.output_format)
  yield (file_index, shard), counts[0], counts[1]


def _write_manifest(shard_counts: Sequence[Tuple[Shard, int, int]],
                    files: Sequence[str], kind: str,
                    options: PredictOptions) -> Dict[str, Any]:
  """manifest.json from every shard's (shard, records, bad rows)."""
  counts = [manifest_lib.FileCounts(path) for path in files]
  for (file_index, shard), records, bad in sorted(shard_counts):
    file_counts = counts[file_index]
    file_counts.records += records
    file_counts.bad_rows += bad
    file_counts.shards.append(manifest_lib.shard_name(
        file_index, shard, options.output_format))
    if bad:
      file_counts.rejects.append(manifest_lib.rejects_name(file_index,
                                                           shard))
  return manifest_lib.write_manifest(options.output_dir, kind,
                                     options.output_format, counts)


def build_pipeline(pipeline: beam.Pipeline, options: PredictOptions,
                   run: runner.PreparedRun, load: Optional[Callable] = None,
                   buckets: Optional[Sequence[int]] = None,
                   length_aware: Optional[bool] = None) -> None:
  """Adds the prediction's steps (module docstring) to `pipeline`.

  Args:
    length_aware: Beam's stateful length-aware batching
      (beam_handler.ExportModelHandler); default: on the runners in
      LENGTH_AWARE_RUNNERS.
  """
  if length_aware is None:
    length_aware = options.runner in LENGTH_AWARE_RUNNERS
  if buckets is None:
    buckets = beam_handler.handler_buckets(options.model, run.description)
  handler = beam_handler.keyed_handler(
      options.model, run.description, options.embeddings,
      options.batch_size, load, buckets, length_aware)
  lengths = beam_handler.KeyedTokenCount(
      options.model, buckets, run.description.kind == "encoder").lengths
  parts = (pipeline
           | "Files" >> beam.Create(list(enumerate(run.files)))
           | "Read" >> beam.FlatMap(_read_file, options, run.columns)
           | "Split" >> beam.FlatMap(_split).with_outputs("shard", "done"))
  work = (parts.shard
          | "Spread" >> beam.Reshuffle()
          | "Rows" >> beam.FlatMap(_shard_rows, options.id_column, lengths
                                   ).with_outputs("row", "meta"))
  predicted = (work.row
               | "Predict" >> RunInference(handler)
               | "ToShard" >> beam.Map(_to_shard))
  written = ((predicted, work.meta)
             | "Gather" >> beam.Flatten()
             | "PerShard" >> beam.GroupByKey()
             | "Write" >> beam.FlatMap(_write_shard, options))
  _ = ((written, parts.done)
       | "AllShards" >> beam.Flatten()
       | "Counts" >> beam.combiners.ToList()
       | "Manifest" >> beam.Map(_write_manifest, run.files,
                                run.description.kind, options))


def _new_pipeline(beam_options, runner_name: str,
                  length_aware: bool) -> beam.Pipeline:
  """The job's Pipeline. DirectRunner: its FnApiRunner, the one that runs
  --direct_num_workers workers (the DirectRunner's own choice would try
  the Prism runner first, which downloads its binary at run time); with
  length-aware batching, whose timer the FnApiRunner lacks, the
  DirectRunner's choice (its one-thread BundleBasedDirectRunner). Beam's
  harness chatter is kept below INFO on this machine."""
  if runner_name != "DirectRunner" or length_aware:
    return beam_support.new_pipeline(beam_options, runner_name)
  from apache_beam.runners.portability.fn_api_runner import FnApiRunner
  for name in _LOCAL_CHATTER:
    std_logging.getLogger(name).setLevel(std_logging.WARNING)
  return beam.Pipeline(runner=FnApiRunner(), options=beam_options)


def predict_files_beam(options: PredictOptions,
                       pipeline_args: Sequence[str] = (),
                       load: Optional[Callable] = None,
                       description: Optional[
                           exported_model.ExportDescription] = None,
                       buckets: Optional[Sequence[int]] = None,
                       length_aware: Optional[bool] = None
                      ) -> Dict[str, Any]:
  """runner.predict_files on Beam's `options.runner`; returns the manifest.

  Args:
    options: checked settings, with `runner` set.
    pipeline_args: Beam pipeline options as flags (--direct_num_workers=2,
      --project, --region, --temp_location, ...).
    load, description: as runner.predict_files.
    buckets: the export's length buckets (default: read from it,
      beam_handler.export_buckets; tests of a stand-in give them).
    length_aware: as build_pipeline.

  Raises:
    UserInputError: as runner.predict_files; an unknown runner or Beam
      option; a bad row found by a worker (without --count_rows).
  """
  beam_options = beam_support.pipeline_options(pipeline_args, options.runner)
  if length_aware is None:
    length_aware = options.runner in LENGTH_AWARE_RUNNERS
  # The runner checks its options here (Dataflow: --project, --region...),
  # before anything is read or written.
  pipeline = _new_pipeline(beam_options, options.runner, length_aware)
  run = runner.prepare_run(options, description)
  if load is None:
    load = converted_model.loader(options.model, options.runtime,
                                  run.description)
  build_pipeline(pipeline, options, run, load, buckets, length_aware)
  logging.info("predict: running on %s", options.runner)
  try:
    result = pipeline.run()
    state = result.wait_until_finish()
  except Exception as e:  # the runner's wrapping of a worker's error
    message = beam_support.user_error_in(e)
    if message:
      raise UserInputError(message) from None
    raise
  if state not in (PipelineState.DONE, None):
    raise RuntimeError(f"the Beam job ended {state}")
  return file_io.read_json_object(
      file_io.join(options.output_dir, manifest_lib.MANIFEST_FILE),
      "manifest")
