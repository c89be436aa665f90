"""Launching an Apache Beam job from a tool: the runner's options from the
command line, a worker's user error back as the tool's one line.

The tools that run on Beam (create_pretraining_data, predict) take
`--runner` and pass every flag they do not define to Beam
(tools.support.cli.parse_flags_with_beam_options). A worker that finds bad
user input raises UserInputError inside `user_errors()`: its message
crosses the runner (a remote one only keeps text) between marks, and the
launcher finds it with `user_error_in` and raises it again, so the
command prints the local path's one line.

Beam is imported inside the functions: albert_common stays light.
"""

import contextlib
import re
from typing import Optional, Sequence

from albert_common.errors import UserInputError

RUNNERS = ("DirectRunner", "DataflowRunner", "FlinkRunner", "SparkRunner",
           "PortableRunner", "PrismRunner")
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
                     num_workers: Optional[int] = None):
  """Beam's PipelineOptions from the command line's leftover flags.

  Raises:
    UserInputError: an unknown runner, or a flag neither ours nor Beam's
      (a typo would otherwise be dropped with a log line).
  """
  from apache_beam.options.pipeline_options import PipelineOptions
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
        f"unknown flag(s) --{', --'.join(unknown)}: neither a flag of this "
        "tool nor an Apache Beam pipeline option")
  return options


def new_pipeline(beam_options, runner: str, runner_instance=None):
  """A beam.Pipeline; UserInputError where the runner refuses its options.

  Args:
    beam_options: pipeline_options(...).
    runner: its name, for the message.
    runner_instance: a PipelineRunner to use instead of the options' one.
  """
  import apache_beam as beam
  try:  # The runner checks its options here (Dataflow: project, region...).
    return beam.Pipeline(runner=runner_instance, options=beam_options)
  except ValueError as e:
    detail = "; ".join(line.strip() for line in str(e).splitlines()
                       if line.strip())
    raise UserInputError(f"--runner={runner}: {detail}") from None
