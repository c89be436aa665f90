"""Sentence splitting for the document corpus formats (--sentence_splitter).

The default splitter is blingfire's `text_to_sentences` (Microsoft's
finite-state sentence breaker: abbreviations, decimals, versions, URLs and
e-mail addresses stay whole; Chinese and Japanese full stops split), chosen
by measurement (benchmarks/data/sentence_splitters.py, BENCHMARKS.md
"Sentence splitters"). It runs in C++, offline, with no model download.

One fix-up follows it: blingfire puts a closing quote or bracket that
follows a full stop (`。”`, `？」`, `.)`) at the start of the next sentence,
and a doubled mark (`？！`) alone; such leading closing marks are moved back
to the sentence they close.

Splitting is per line: a sentence never spans a line break, so a line with
no final stop (a heading, a list item) stays a sentence of its own, and
`none` (each line one sentence) is the same cut with no splitting inside
lines.
"""

from typing import Callable, Dict, List

# Marks that close a sentence but that blingfire may start the next with.
_CLOSING = frozenset("\"'”’」』）)]】》〉〕｝}!?！？。.…")

DEFAULT = "blingfire"


def _blingfire_lines(text: str) -> List[str]:
  import blingfire  # A native library: loaded on first use only.
  return blingfire.text_to_sentences(text).split("\n")


def split_line(line: str) -> List[str]:
  """The sentences of one line of text (stripped, non-empty).

  Args:
    line: str without "\\n".

  Returns:
    list of str whose concatenation, spaces aside, is `line`.
  """
  line = line.strip()
  if not line:
    return []
  sentences: List[str] = []
  for sentence in _blingfire_lines(line):
    sentence = sentence.strip()
    if not sentence:
      continue
    if sentences:
      closing = 0
      while closing < len(sentence) and sentence[closing] in _CLOSING:
        closing += 1
      if closing:
        sentences[-1] += sentence[:closing]
        sentence = sentence[closing:].strip()
        if not sentence:
          continue
    sentences.append(sentence)
  return sentences


def _no_split(line: str) -> List[str]:
  line = line.strip()
  return [line] if line else []


SPLITTERS: Dict[str, Callable[[str], List[str]]] = {
    "blingfire": split_line,
    "none": _no_split,
}


def document_sentences(text: str, splitter: str) -> List[str]:
  """A document's sentences: each line split (`splitter`), blank lines
  (paragraph breaks) dropped.

  Args:
    text: the document, lines separated by "\\n" ("\\r\\n" too).
    splitter: a SPLITTERS name.
  """
  split = SPLITTERS[splitter]
  return [s for line in text.split("\n") for s in split(line)]
