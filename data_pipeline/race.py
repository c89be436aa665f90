"""RACE: reader for the released layout, multiple-choice features, accuracy.

Layout (as released, RACE.tar.gz): `<data_dir>/[RACE/]{train,dev,test}/
{middle,high}/*.txt`, each file one JSON object
  {"id": "high1.txt", "article": "...", "questions": [...],
   "options": [[4 str], ...], "answers": ["A", ...]}
(a file holding one such object per line is read too).

Features as google-research/albert `race_utils.py`: for each option,
`[CLS] article [SEP] question+option [SEP]`, where question+option is the
question with "_" replaced by the option if it has a blank, else
"question option"; the question+option keeps its LAST `max_qa_length`
pieces, and the article is cut to fill `max_seq_length`.
"""

import dataclasses
import json
from typing import Dict, List, Optional, Sequence

import numpy as np

from albert_common import file_io
from albert_common.encoder_inputs import INPUT_MASK
from albert_common.encoder_inputs import INPUT_TYPE_IDS
from albert_common.encoder_inputs import INPUT_WORD_IDS
from albert_common.errors import UserInputError
from data_pipeline.tokenization import SentencePieceTokenizer

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


def question_option_text(question: str, option: str) -> str:
  """The question with its blank filled by the option, else both joined."""
  if "_" in question:
    return question.replace("_", option)
  return " ".join([question, option])


def convert_examples_to_arrays(examples: Sequence[RaceExample],
                               tokenizer: SentencePieceTokenizer,
                               max_seq_length: int = 512,
                               max_qa_length: int = 128
                              ) -> Dict[str, np.ndarray]:
  """Model inputs of every example.

  Returns:
    dict: input_word_ids, input_mask, input_type_ids int32
      [n, num_choices, max_seq_length]; label_ids int32 [n].
  """
  if max_qa_length <= 0 or max_qa_length > max_seq_length - 3:
    raise UserInputError(
        f"--max_qa_length ({max_qa_length}) must be in [1, max_seq_length - "
        f"3 = {max_seq_length - 3}]")
  cls_id, sep_id, pad_id = tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id
  n, c = len(examples), len(LABELS)
  word_ids = np.full((n, c, max_seq_length), pad_id, np.int32)
  mask = np.zeros((n, c, max_seq_length), np.int32)
  type_ids = np.zeros((n, c, max_seq_length), np.int32)
  article_cache = {}
  for i, example in enumerate(examples):
    if example.article not in article_cache:
      article_cache = {example.article: tokenizer.encode(example.article)}
    article = article_cache[example.article]
    for j, option in enumerate(example.options):
      qa = tokenizer.encode(question_option_text(example.question, option))
      qa = qa[-max_qa_length:]
      context = article[:max_seq_length - 3 - len(qa)]
      ids = [cls_id] + context + [sep_id] + qa + [sep_id]
      word_ids[i, j, :len(ids)] = ids
      mask[i, j, :len(ids)] = 1
      type_ids[i, j, len(context) + 2:len(ids)] = 1
  labels = np.array([e.label for e in examples], np.int32)
  return {INPUT_WORD_IDS: word_ids, INPUT_MASK: mask,
          INPUT_TYPE_IDS: type_ids, "label_ids": labels}


def accuracy(examples: Sequence[RaceExample], predictions: Sequence[int]
            ) -> Dict[str, float]:
  """Accuracy overall and per level, fractions in [0, 1].

  Returns:
    {"accuracy", "accuracy_middle", "accuracy_high", "num_examples", ...}:
    a level's entries only when it has questions.
  """
  predictions = np.asarray(predictions)
  labels = np.array([e.label for e in examples])
  out = {"accuracy": float(np.mean(predictions == labels)),
         "num_examples": float(len(examples))}
  for level in LEVELS:
    selected = np.array([e.level == level for e in examples])
    if selected.any():
      out[f"accuracy_{level}"] = float(
          np.mean(predictions[selected] == labels[selected]))
      out[f"num_examples_{level}"] = float(selected.sum())
  return out


def write_predictions(path: str, examples: Sequence[RaceExample],
                      logits: np.ndarray,
                      predictions: Optional[Sequence[int]] = None) -> None:
  """`{example_id: {"answer": "A".."D", "probabilities": [4]}}` as JSON."""
  logits = np.asarray(logits, np.float64)
  probs = np.exp(logits - logits.max(-1, keepdims=True))
  probs /= probs.sum(-1, keepdims=True)
  if predictions is None:
    predictions = probs.argmax(-1)
  content = {e.example_id: {"answer": LABELS[int(p)],
                            "probabilities": [float(x) for x in row]}
             for e, p, row in zip(examples, predictions, probs)}
  file_io.write_atomic(path, json.dumps(content, indent=2))
