"""The one error type for a user's mistake."""


class UserInputError(ValueError):
  """Bad input from the user: a missing file, a bad setting, a corrupt record.

  Library code raises it with a message that names the file, setting or
  value at fault; `tools.support.cli.run` turns it into one line on stderr and
  exit status 1 instead of a stack trace.
  """
