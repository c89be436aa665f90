"""The shard loop of tools.predict, in this process, streaming.

For each input file (in the order the globs list them) its records are
read as a stream and cut into shards of --rows_per_shard records
(manifest.py's plan). A shard already under its final name is skipped
(its records are read, not predicted, to count them); a missing one is
predicted (batching.predict_rows: rows sorted by length, batches at
their own longest row where the predictor allows it, else within the
export's length buckets) and published atomically (writers.py).
Memory holds one shard's rows and outputs, whatever the inputs' size.

Bad rows: without --skip_bad_rows the first one stops the run with one
line naming file:line and the reason; with --count_rows (the default) the
inputs are read once first, so that happens before any shard is written
(and the progress knows the total, for its ETA). With --skip_bad_rows each
shard's bad rows go to its rejects file, with the reason, and are counted
in manifest.json.
"""

import dataclasses
import time
from typing import Callable, Iterator, List, Optional, Sequence, Tuple

from absl import logging

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf.prediction import batching
from albert_tf.prediction import converted_model
from albert_tf.prediction import exported_model
from albert_tf.prediction import lengths
from albert_tf.prediction import manifest as manifest_lib
from albert_tf.prediction import writers
from albert_tf.prediction.inputs import Columns
from albert_tf.prediction.inputs import InputFile
from albert_tf.prediction.inputs import InputRow
from albert_tf.prediction.options import PredictOptions

_PROGRESS_SECONDS = 10.0


class Progress:
  """Logs rows done, rows/s and (with a known total) the ETA, at most
  every `every` seconds (absl logging, as the other tools)."""

  def __init__(self, total: Optional[int], every: float = _PROGRESS_SECONDS):
    self.total, self.every = total, every
    self.done = self.predicted = self.logged = 0
    self.start = self.last = time.monotonic()

  def restart_clock(self) -> None:
    """Rows/s counts from here (after the model loaded)."""
    self.start = time.monotonic()

  def add(self, rows: int, predicted: bool, force: bool = False) -> None:
    self.done += rows
    self.predicted += rows if predicted else 0
    now = time.monotonic()
    if (now - self.last < self.every and not force) or (
        force and self.logged == self.done):
      return
    self.last, self.logged = now, self.done
    rate = self.predicted / max(now - self.start, 1e-9)
    line = f"predict: {self.done:,} rows"
    if self.total:
      line += f" of {self.total:,} ({100 * self.done / self.total:.1f}%)"
    line += f", {rate:,.1f} rows/s"
    if self.total and rate > 0 and self.done < self.total:
      line += f", ETA {_duration((self.total - self.done) / rate)}"
    logging.info(line)


def _duration(seconds: float) -> str:
  seconds = int(seconds)
  hours, rest = divmod(seconds, 3600)
  return (f"{hours}h{rest // 60:02d}m" if hours else
          f"{rest // 60}m{rest % 60:02d}s")


def shards(rows: Iterator[InputRow], size: int
           ) -> Iterator[Tuple[int, List[InputRow]]]:
  """(shard number, its records) of a file's record stream."""
  shard, chunk = 0, []
  for row in rows:
    chunk.append(row)
    if len(chunk) == size:
      yield shard, chunk
      shard, chunk = shard + 1, []
  if chunk:
    yield shard, chunk


def bad_row_error(row: InputRow) -> UserInputError:
  return UserInputError(f"{row.where}: {row.problem} (--skip_bad_rows "
                        "writes such rows to a rejects file)")


def input_files(pattern: str) -> List[str]:
  """The files --input_file names (comma-separated paths or globs)."""
  return file_io.glob_files(
      pattern, "--input_file is required",
      "--input_file: {pattern} matches no file")


def count_rows(files: Sequence[str], options: PredictOptions,
               columns: Columns) -> int:
  """Records of all files; raises at the first bad row unless skipping."""
  total = 0
  for path in files:
    for row in InputFile(path, options.input_format, columns).rows():
      if row.problem and not options.skip_bad_rows:
        raise bad_row_error(row)
      total += 1
  return total


def _remove_temporaries(output_dir: str) -> None:
  """Hidden temporaries a killed run left (write_atomic's)."""
  for path in file_io.glob(file_io.join(output_dir, ".*.tmp-*")):
    file_io.remove(path)


def _count_shard(file_counts, chunk, name: str, position,
                 skip_bad_rows: bool) -> List:
  """Adds shard `name` (at (file index, shard index) `position`) and its
  rows to `file_counts`; returns its bad rows (UserInputError for the
  first one unless `skip_bad_rows`)."""
  bad = [row for row in chunk if row.problem]
  if bad and not skip_bad_rows:
    raise bad_row_error(bad[0])
  file_counts.records += len(chunk)
  file_counts.bad_rows += len(bad)
  file_counts.shards.append(name)
  if bad:
    file_counts.rejects.append(manifest_lib.rejects_name(*position))
  return bad


def _columns(options: PredictOptions,
             description: exported_model.ExportDescription) -> Columns:
  """The columns the export's kind reads."""
  if description.kind not in ("squad", "multiple_choice"):
    return Columns(options.text_column, options.text_b_column,
                   options.id_column)
  choices = description.kind == "multiple_choice"
  return Columns(options.context_column, options.question_column,
                 options.id_column, ("--context_column", "--question_column"),
                 options.choices_column if choices else "",
                 description.num_choices)


@dataclasses.dataclass(frozen=True)
class PreparedRun:
  """What a run knows before predicting (prepare_run)."""
  description: exported_model.ExportDescription
  columns: Columns
  files: List[str]
  resumed: bool
  total: Optional[int]


def prepare_run(options: PredictOptions,
                description: Optional[
                    exported_model.ExportDescription] = None
               ) -> PreparedRun:
  """The checks and the plan before any prediction, in this process and
  on Beam: the export's kind and columns, the input files, the plan
  (checked against a previous run's), the rows counted (with
  --count_rows, so a bad row stops the run before anything is written),
  then the output folder with its plan and no stale temporaries.

  Raises:
    UserInputError: a bad export, input, column or row, or an output folder
      of another run.
  """
  description = description or exported_model.describe(options.model)
  columns = _columns(options, description)
  if description.pair and not columns.text_b:
    raise UserInputError(
        f"--model={options.model} is a sentence-pair model (text_a, "
        "text_b); give --text_b_column")
  if options.text_b_column and not description.pair and \
      description.kind != "encoder":
    raise UserInputError(
        f"--text_b_column={options.text_b_column}: --model="
        f"{options.model} takes one text")
  # --runtime's files, before anything is written.
  converted_model.check_runtime(options.model, options.runtime, description)
  files = input_files(options.input_file)
  plan = manifest_lib.plan(options, files)
  resumed = manifest_lib.check_plan(options.output_dir, plan)
  # Before anything is written: a bad row leaves no output folder.
  total = count_rows(files, options, columns) if options.count_rows else None
  try:
    file_io.makedirs(options.output_dir)
    if not resumed:
      manifest_lib.write_plan(options.output_dir, plan)
  except OSError as e:
    raise UserInputError(f"--output_dir={options.output_dir} cannot be "
                         f"written: {e}") from None
  _remove_temporaries(options.output_dir)
  logging.info("predict: %s export, %d input files%s%s", description.kind,
               len(files), f", {total:,} records" if total is not None
               else "", " (resuming)" if resumed else "")
  return PreparedRun(description, columns, files, resumed, total)


def predict_files(options: PredictOptions,
                  load: Optional[Callable] = None,
                  description: Optional[
                      exported_model.ExportDescription] = None) -> dict:
  """Runs the prediction (module docstring); returns the manifest.

  Args:
    options: checked settings (options.check_options).
    load: (model path, description, embeddings) -> an object with
      `predict(texts_a, texts_b)` (default: --runtime's,
      converted_model.loader; tests pass a stand-in).
    description: the export's (default: exported_model.describe).

  Raises:
    UserInputError: a bad export, input, column or row, or an output folder
      of another run.
  """
  run = prepare_run(options, description)
  description, columns, files = run.description, run.columns, run.files
  total = run.total
  if load is None:
    load = converted_model.loader(options.model, options.runtime,
                                  description)
  progress = Progress(total)
  predictor = None
  counter = lengths.token_counter(options.model, description.length_buckets,
                                  description.kind == "encoder")
  counts = []
  for file_index, path in enumerate(files):
    file_counts = manifest_lib.FileCounts(path)
    counts.append(file_counts)
    source = InputFile(path, options.input_format, columns)
    for shard, chunk in shards(source.rows(), options.rows_per_shard):
      name = manifest_lib.shard_name(file_index, shard,
                                     options.output_format)
      target = file_io.join(options.output_dir, name)
      bad = _count_shard(file_counts, chunk, name, (file_index, shard),
                         options.skip_bad_rows)
      if file_io.exists(target):
        progress.add(len(chunk), predicted=False)
        continue
      if predictor is None:
        predictor = load(options.model, description, options.embeddings)
        progress.restart_clock()
      good = [row for row in chunk if not row.problem]
      outputs = batching.predict_rows(
          good, predictor.predict, options.batch_size, path,
          options.id_column, description.length_buckets,
          counter.lengths if counter else None,
          batching.own_length(predictor))
      if bad:
        writers.write_rejects(
            file_io.join(options.output_dir, file_counts.rejects[-1]),
            [{"file": path, "row": row.row, "where": row.where,
              "problem": row.problem} for row in bad])
      writers.write_shard(target, outputs, options.output_format)
      progress.add(len(chunk), predicted=True)
    if not file_counts.records:
      logging.warning("%s has no records", path)
  progress.add(0, predicted=False, force=True)
  return manifest_lib.write_manifest(options.output_dir, description.kind,
                                     options.output_format, counts)
