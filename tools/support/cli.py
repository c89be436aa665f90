"""Shared entry point for the command-line tools.

`run(main)` parses absl flags and runs `main`; a `UserInputError` (or a missing
file / bad flag value) becomes one clear line on stderr and exit status 1.
"""

import logging
import os
import sys

# TensorFlow's C++ start-up chatter (e.g. "failed call to cuInit" on machines
# without a GPU) would bury our one-line messages; users may override this.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from absl import app  # noqa: E402
from absl import flags  # noqa: E402
from absl import logging as absl_logging  # noqa: E402

from albert_common.errors import UserInputError  # noqa: E402


class _NoEchoOfPrintedProgress(logging.Filter):
  """Drops records that only repeat what stdout already shows, or narrate
  library internals a user cannot act on.

  Orbit's controller both prints its progress lines ("train | step: ...")
  and logs them; TensorFlow logs a "Sharding callback duration" line per
  checkpoint save. Without this, every progress line appears twice.
  Writing a SavedModel (export_savedmodel, --export_dir) makes TensorFlow
  note renamed signature inputs, untraced functions, assets and
  fingerprints, and tf_keras warn that the compiled metrics of a model it
  traces (never trained here) are not built. Importing Apache Beam without
  its [gcp] extra makes it note the GCS filesystem and BigQuery clients it
  could not import (the tools read and write through TensorFlow's
  filesystems; Dataflow workers install the extra).
  """

  _QUIET_SOURCES = ("orbit/controller.py", "checkpoint/functional_saver.py",
                    "saved_model/signature_serialization.py",
                    "saved_model/save.py", "saved_model/builder_impl.py",
                    "saved_model/fingerprinting_utils.py")
  _QUIET_WARNINGS = ("saving/legacy/saving_utils.py",)
  _QUIET_BEAM_IMPORTS = ("apache_beam/io/filesystems.py",
                         "apache_beam/io/gcp/bigquery.py",
                         "apache_beam/io/gcp/internal/clients/bigquery/"
                         "__init__.py")

  def filter(self, record):
    path = record.pathname.replace(os.sep, "/")
    if record.levelno <= logging.WARNING and path.endswith(
        self._QUIET_BEAM_IMPORTS):
      return False
    if record.levelno == logging.INFO and path.endswith(self._QUIET_SOURCES):
      return False
    return not (record.levelno == logging.WARNING and
                path.endswith(self._QUIET_WARNINGS))


def _main_with_clean_errors(main):
  def wrapped(argv):
    absl_logging.get_absl_handler().addFilter(_NoEchoOfPrintedProgress())
    try:
      return main(argv)
    except UserInputError as e:
      print(f"error: {e}", file=sys.stderr)
      sys.exit(1)
  return wrapped


def _help_as_main_module(main) -> None:
  """Started as a console script (`albert-run-pretraining`), the tool is not
  `__main__`: absl's --help would show neither its docstring nor its flags
  (it lists the key flags of the module named sys.argv[0]). Lend them."""
  module = sys.modules.get(main.__module__)
  if module is None or main.__module__ == "__main__":
    return
  for flag in flags.FLAGS.get_key_flags_for_module(module):
    flags.FLAGS.register_key_flag_for_module(sys.argv[0], flag)
  main_module = sys.modules["__main__"]
  if not main_module.__doc__:
    main_module.__doc__ = module.__doc__


def parse_flags_with_beam_options(argv):
  """absl's parsing; with --runner (a Beam runner), the flags absl does not
  know stay in argv: they are Beam pipeline options."""
  if not any(a in ("--runner", "-runner") or
             a.startswith(("--runner=", "-runner=")) for a in argv[1:]):
    return app.parse_flags_with_usage(argv)
  try:
    return flags.FLAGS(argv, known_only=True)
  except flags.Error as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(1)


def run(main, flags_parser=app.parse_flags_with_usage):
  """Runs an absl `main(argv)` with user errors reported in one line.

  `flags_parser`: as absl's `app.run` (e.g. one that leaves flags it does
  not know in argv for another library).
  """
  _help_as_main_module(main)
  try:
    app.run(_main_with_clean_errors(main), flags_parser=flags_parser)
  except flags.IllegalFlagValueError as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(1)
