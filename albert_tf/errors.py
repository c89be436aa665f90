"""The one exception type for user mistakes.

Library code raises `UserInputError` with a message that names the file, flag
or value at fault; `tools.cli.run` turns it into one line on stderr and exit
status 1 instead of a stack trace.
"""


class UserInputError(ValueError):
  """Bad input from the user: a missing file, a bad flag, a corrupt record."""
