"""RACE: the released layout -> RaceExamples (one per question).

Layout (as released, RACE.tar.gz): `<data_dir>/[RACE/]{train,dev,test}/
{middle,high}/*.txt`, each file one JSON object
  {"id": "high1.txt", "article": "...", "questions": [...],
   "options": [[4 str], ...], "answers": ["A", ...]}
(a file holding one such object per line is read too). Model inputs,
accuracy and predictions files are `race_features`'.
"""

import dataclasses
import json
from typing import List

from albert_common import file_io
from albert_common.errors import UserInputError

LEVELS = ("middle", "high")
SPLITS = ("train", "dev", "test")
LABELS = "ABCD"
REQUIRED_FIELDS = ("article", "questions", "options", "answers")


@dataclasses.dataclass
class RaceExample:
  """One question with its options.

  Attributes:
    example_id: str, "<file id>-<question number>".
    level: "middle" or "high".
    article, question: str.
    options: list of str, one per choice.
    label: int index of the right option.
  """
  example_id: str
  level: str
  article: str
  question: str
  options: List[str]
  label: int


def split_dir(data_dir: str, split: str) -> str:
  """`<data_dir>/<split>` or `<data_dir>/RACE/<split>`, whichever exists."""
  for root in (data_dir, file_io.join(data_dir, "RACE")):
    path = file_io.join(root, split)
    if file_io.isdir(path):
      return path
  raise UserInputError(
      f"--data_dir={data_dir}: no {split}/ directory (expected the released "
      f"layout {split}/middle/*.txt, {split}/high/*.txt, optionally under "
      "RACE/)")


def _records(path: str):
  """(line number or None, dict) of a file: one JSON object, or JSON lines."""
  try:
    text = file_io.read_text(path)
  except UnicodeDecodeError as e:
    raise UserInputError(f"{path}: not UTF-8 text: {e}") from e
  try:
    return [(None, json.loads(text))]
  except json.JSONDecodeError:
    pass
  out = []
  for number, line in enumerate(text.splitlines(), 1):
    if not line.strip():
      continue
    try:
      out.append((number, json.loads(line)))
    except json.JSONDecodeError as e:
      raise UserInputError(f"{path}:{number}: not JSON: {e}") from e
  return out


def read_race_examples(data_dir: str, split: str, high_only: bool = False,
                       middle_only: bool = False) -> List[RaceExample]:
  """Every question of `split` (train, dev or test), middle then high.

  Raises:
    UserInputError: naming the file (and line) of a record missing a field,
      with mismatched lengths, an option count other than 4 or an answer
      outside A-D; a missing directory; no questions at all.
  """
  if high_only and middle_only:
    raise UserInputError("--high_only and --middle_only exclude each other")
  root = split_dir(data_dir, split)
  levels = [level for level in LEVELS
            if not (level == "middle" and high_only) and
            not (level == "high" and middle_only)]
  examples = []
  for level in levels:
    level_dir = file_io.join(root, level)
    if not file_io.isdir(level_dir):
      continue
    for name in file_io.listdir(level_dir):
      if not name.endswith(".txt"):
        continue
      path = file_io.join(level_dir, name)
      for line, record in _records(path):
        examples.extend(_examples_of(record, level, name,
                                     path if line is None else
                                     f"{path}:{line}"))
  if not examples:
    raise UserInputError(
        f"no RACE questions under {root}/{{{','.join(levels)}}}/*.txt")
  return examples


def _examples_of(record, level, name, where) -> List[RaceExample]:
  if not isinstance(record, dict):
    raise UserInputError(f"{where}: expected a JSON object")
  missing = [k for k in REQUIRED_FIELDS if k not in record]
  if missing:
    raise UserInputError(f"{where}: missing field(s) {', '.join(missing)}")
  questions, options, answers = (record["questions"], record["options"],
                                 record["answers"])
  if not len(questions) == len(options) == len(answers):
    raise UserInputError(
        f"{where}: {len(questions)} questions, {len(options)} option lists "
        f"and {len(answers)} answers; they must be equal")
  file_id = str(record.get("id", name))
  out = []
  for i, (question, opts, answer) in enumerate(zip(questions, options,
                                                   answers)):
    if len(opts) != len(LABELS):
      raise UserInputError(f"{where}: question {i} has {len(opts)} options, "
                           f"expected {len(LABELS)}")
    if answer not in LABELS:
      raise UserInputError(f"{where}: question {i} answer {answer!r} is not "
                           f"one of {', '.join(LABELS)}")
    out.append(RaceExample(
        example_id=f"{file_id}-{i}", level=level, article=record["article"],
        question=question, options=list(opts), label=LABELS.index(answer)))
  return out
