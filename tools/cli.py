"""Shared entry point for the command-line tools.

`run(main)` parses absl flags and runs `main`; a `UserInputError` (or a missing
file / bad flag value) becomes one clear line on stderr and exit status 1.
"""

import os
import sys

# TensorFlow's C++ start-up chatter (e.g. "failed call to cuInit" on machines
# without a GPU) would bury our one-line messages; users may override this.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from albert_tf.errors import UserInputError  # noqa: E402


def _main_with_clean_errors(main):
  def wrapped(argv):
    try:
      return main(argv)
    except UserInputError as e:
      print(f"error: {e}", file=sys.stderr)
      sys.exit(1)
  return wrapped


def run(main):
  """Runs an absl `main(argv)` with user errors reported in one line."""
  try:
    app.run(_main_with_clean_errors(main))
  except flags.IllegalFlagValueError as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(1)
