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

from albert_tf.errors import UserInputError  # noqa: E402


class _NoEchoOfPrintedProgress(logging.Filter):
  """Drops records that only repeat what stdout already shows, or narrate
  library internals a user cannot act on.

  Orbit's controller both prints its progress lines ("train | step: ...")
  and logs them; TensorFlow logs a "Sharding callback duration" line per
  checkpoint save. Without this, every progress line appears twice.
  Writing a SavedModel (export_savedmodel, --export_dir) makes TensorFlow
  note renamed signature inputs, untraced functions, assets and
  fingerprints, and tf_keras warn that the compiled metrics of a model it
  traces (never trained here) are not built.
  """

  _QUIET_SOURCES = ("orbit/controller.py", "checkpoint/functional_saver.py",
                    "saved_model/signature_serialization.py",
                    "saved_model/save.py", "saved_model/builder_impl.py",
                    "saved_model/fingerprinting_utils.py")
  _QUIET_WARNINGS = ("saving/legacy/saving_utils.py",)

  def filter(self, record):
    path = record.pathname.replace(os.sep, "/")
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


def run(main, flags_parser=app.parse_flags_with_usage):
  """Runs an absl `main(argv)` with user errors reported in one line.

  `flags_parser`: as absl's `app.run` (e.g. one that leaves flags it does
  not know in argv for another library).
  """
  try:
    app.run(_main_with_clean_errors(main), flags_parser=flags_parser)
  except flags.IllegalFlagValueError as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(1)
