"""CoNLL files: one token a line, its tag in the last column.

  -DOCSTART- -X- -X- O

  EU NNP B-NP B-ORG
  rejects VBZ B-VP O
  German JJ B-NP B-MISC

Any number of columns may come before the tag (CoNLL-2003 has word, POS
and chunk); columns are separated by tabs when the line has one, else by
whitespace. A blank line ends a sentence; `-DOCSTART-` lines are document
markers, skipped. A file whose first token line has a single column is
unlabeled (a test file to predict); in a labeled file a one-column line is
an error. Predictions are written back line for line: the tag column
replaced (appended in an unlabeled file), every other line kept.
"""

from typing import List, Optional, Sequence, Tuple, Union

from data_pipeline.tasks.ner.sentences import BadRecord
from data_pipeline.tasks.ner.sentences import LayoutItem
from data_pipeline.tasks.ner.sentences import Sentence

DOCSTART = "-DOCSTART-"
EXTENSIONS = (".conll", ".conll03", ".txt", ".tsv", ".iob", ".iob1",
              ".iob2", ".bio", ".bioes", ".iobes", ".ner")

# A token line: its columns and the separator they were joined with.
_TokenLine = Tuple[List[str], str]


def _columns(line: str) -> _TokenLine:
  if "\t" in line:
    return [c.strip() for c in line.split("\t") if c.strip()], "\t"
  return line.split(), " "


def parse(text: str, labeled: Optional[bool]
         ) -> Tuple[List[Union[Sentence, BadRecord]], List[LayoutItem], bool]:
  """Sentences of a CoNLL file's text.

  Args:
    text: the file's text.
    labeled: whether token lines end with a tag; None: decided by the first
      token line (one column: unlabeled).

  Returns:
    (records, layout, labeled): a Sentence, or the BadRecord of its first
    bad line, per sentence in order; the file's lines, blank and
    -DOCSTART- lines as strings, sentences by their index in `records`.
  """
  records: List[Union[Sentence, BadRecord]] = []
  layout: List[LayoutItem] = []
  lines: List[Tuple[int, _TokenLine]] = []

  def flush():
    if lines:
      records.append(_sentence(lines, labeled))
      layout.append(len(records) - 1)
      lines.clear()

  raw_lines = text.split("\n")
  if raw_lines[-1] == "":
    raw_lines.pop()  # the newline ending the last line
  for number, raw in enumerate(raw_lines, start=1):
    line = raw.rstrip("\r")
    columns = _columns(line)
    if not columns[0] or columns[0][0] == DOCSTART:
      flush()
      layout.append(line)
      continue
    if labeled is None:
      labeled = len(columns[0]) > 1
    lines.append((number, columns))
  flush()
  return records, layout, bool(labeled)


def _sentence(lines: Sequence[Tuple[int, _TokenLine]],
              labeled: bool) -> Union[Sentence, BadRecord]:
  words, tags = [], []
  for number, (columns, _) in lines:
    if labeled and len(columns) < 2:
      return BadRecord(number, f"one column ({columns[0]!r}): a token line "
                       "needs its tag in the last column")
    if not labeled and len(columns) > 1:
      return BadRecord(number, f"{len(columns)} columns in an unlabeled "
                       "file (its first token line has one: the token)")
    words.append(columns[0])
    tags.append(columns[-1])
  return Sentence(words, tags if labeled else None, lines[0][0],
                  [number for number, _ in lines],
                  record=[columns for _, columns in lines])


def render(sentences: Sequence[Sentence], layout: Sequence[LayoutItem],
           predicted: Sequence[Sequence[str]], labeled: bool) -> str:
  """The file's text with each sentence's tags replaced by `predicted`
  (appended as a last column when unlabeled); `layout` names sentences by
  their index in `sentences`."""
  out = []
  for item in layout:
    if isinstance(item, str):
      out.append(item)
      continue
    for (columns, separator), tag in zip(sentences[item].record,
                                          predicted[item]):
      kept = columns[:-1] if labeled else columns
      out.append(separator.join(list(kept) + [tag]))
  return "\n".join(out) + "\n"
