"""What the NER file readers return: sentences of words and tags, and the
record each came from (to write predictions back in the file's format)."""

import dataclasses
from typing import Any, List, Optional, Union


class BadRecord(Exception):
  """A record a reader cannot use: its 1-based line and why.

  ner_files turns it into a UserInputError "path:line: why", or skips and
  counts it with --skip_bad_records.
  """

  def __init__(self, line: int, message: str):
    super().__init__(message)
    self.line = line
    self.message = message


@dataclasses.dataclass
class Sentence:
  """One sentence of a NER file.

  Attributes:
    words: the tokens (CoNLL's first column, JSON lines' `tokens`, one
      CLUENER character each).
    tags: one per word, as strings ("O", "B-PER"); None in an unlabeled
      file (a test file without tags).
    line: the 1-based line where the sentence starts (its record's line).
    token_lines: per word, its line (CoNLL; else every word has `line`).
    record: what the writer needs to write the sentence back: CoNLL, the
      token lines' columns and separators; JSON lines and CLUENER, the
      record (a dict).
  """
  words: List[str]
  tags: Optional[List[str]]
  line: int
  token_lines: List[int]
  record: Any = None

  def line_of(self, index: int) -> int:
    """The line of word `index` (the record's line outside CoNLL)."""
    return self.token_lines[index] if self.token_lines else self.line


# A line of a CoNLL file kept as it is (blank, -DOCSTART-), or the index of
# a sentence in NerFile.sentences.
LayoutItem = Union[str, int]


@dataclasses.dataclass
class NerFile:
  """A NER file read and checked.

  Attributes:
    path: the file.
    input_format: "conll", "jsonl" or "cluener".
    sentences: the sentences kept (bad records skipped).
    labeled: whether the file has tags.
    scheme: the tag scheme its tags were checked against (IOB2, IOB1,
      IOBES; "" when unlabeled and none was given).
    skipped: bad records skipped (--skip_bad_records).
    layout: CoNLL only: the file's lines in order, sentences by index.
    label_names: JSON lines with integer tags: the name of each integer.
  """
  path: str
  input_format: str
  sentences: List[Sentence]
  labeled: bool
  scheme: str = ""
  skipped: int = 0
  layout: List[LayoutItem] = dataclasses.field(default_factory=list)
  label_names: Optional[List[str]] = None

  @property
  def num_words(self) -> int:
    return sum(len(s.words) for s in self.sentences)
