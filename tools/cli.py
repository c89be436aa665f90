"""Shared entry point for the command-line tools.

`run(main)` parses absl flags and runs `main`; a `UserInputError` (or a missing
file / bad flag value) becomes one clear line on stderr and exit status 1.
"""

import sys

from absl import app
from absl import flags

from albert_tf.errors import UserInputError


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
