"""SQuAD v1.1 / v2.0 JSON files -> SquadExamples (one per question).

Every question of every paragraph of every article, checked: a missing field,
an unanswerable question without `version_2_with_negative`, or a training
answer that is not found in its context at `answer_start` raises
UserInputError naming the file and question. Features are made by
`squad_features`.
"""

import dataclasses
import json
from typing import List

from albert_common import file_io
from albert_common.errors import UserInputError


@dataclasses.dataclass
class SquadExample:
  """One question about one paragraph.

  Attributes:
    qas_id: str, the question id.
    question_text, paragraph_text: str, as in the JSON file.
    answer_text: str, the first answer ("" if impossible or not training).
    answer_start: int, its character offset in `paragraph_text` (-1 if none).
    is_impossible: bool, SQuAD v2.0 unanswerable question.
    answers: list of str, every gold answer text (for reference only).
  """
  qas_id: str
  question_text: str
  paragraph_text: str
  answer_text: str = ""
  answer_start: int = -1
  is_impossible: bool = False
  answers: List[str] = dataclasses.field(default_factory=list)


def load_squad_json(input_file: str) -> List[dict]:
  """The `data` list of a SQuAD JSON file; UserInputError naming the file."""
  if not file_io.isfile(input_file):
    raise UserInputError(f"SQuAD file not found: {input_file}")
  try:
    content = json.loads(file_io.read_text(input_file))
  except (UnicodeDecodeError, json.JSONDecodeError) as e:
    raise UserInputError(f"{input_file}: not a SQuAD JSON file: {e}") from e
  if not isinstance(content, dict) or not isinstance(content.get("data"),
                                                     list):
    raise UserInputError(
        f"{input_file}: not a SQuAD JSON file: expected an object with a "
        "'data' list of articles")
  return content["data"]


def read_squad_examples(input_file: str, is_training: bool,
                        version_2_with_negative: bool = False
                       ) -> List[SquadExample]:
  """Reads a SQuAD v1.1 / v2.0 JSON file.

  Args:
    input_file: path of the JSON file.
    is_training: if True every answerable question must have an answer whose
      `text` equals `context[answer_start:answer_start + len(text)]`.
    version_2_with_negative: accept `is_impossible` questions (SQuAD v2.0).

  Raises:
    UserInputError: naming the file (and question id) for a missing `data`
      list, a missing field, an impossible question without
      --version_2_with_negative, or an answer that is not in the context.
  """
  data = load_squad_json(input_file)
  examples = []
  for a, article in enumerate(data):
    paragraphs = (article.get("paragraphs") if isinstance(article, dict)
                  else None)
    if not isinstance(paragraphs, list):
      raise UserInputError(
          f"{input_file}: data[{a}] has no 'paragraphs' list")
    for p, paragraph in enumerate(paragraphs):
      where = f"{input_file}: data[{a}].paragraphs[{p}]"
      if not isinstance(paragraph.get("context"), str) or not isinstance(
          paragraph.get("qas"), list):
        raise UserInputError(f"{where} needs a 'context' string and a 'qas' "
                             "list")
      context = paragraph["context"]
      for qa in paragraph["qas"]:
        examples.append(_read_question(qa, context, where, is_training,
                                       version_2_with_negative))
  if not examples:
    raise UserInputError(f"{input_file}: no questions")
  return examples


def _read_question(qa, context, where, is_training, version_2_with_negative):
  if "id" not in qa or not isinstance(qa.get("question"), str):
    raise UserInputError(f"{where}: a question lacks 'id' or 'question'")
  qid = str(qa["id"])
  where = f"{where}: question {qid}"
  is_impossible = bool(qa.get("is_impossible", False))
  if is_impossible and not version_2_with_negative:
    raise UserInputError(
        f"{where} is marked is_impossible; pass --version_2_with_negative "
        "for SQuAD v2.0 data")
  answers = qa.get("answers", [])
  if not isinstance(answers, list):
    raise UserInputError(f"{where}: 'answers' is not a list")
  texts = []
  for answer in answers:
    if not isinstance(answer, dict) or "text" not in answer:
      raise UserInputError(f"{where}: an answer lacks 'text'")
    texts.append(answer["text"])
  example = SquadExample(qas_id=qid, question_text=qa["question"],
                         paragraph_text=context, is_impossible=is_impossible,
                         answers=texts)
  if not is_training or is_impossible:
    return example
  if not answers:
    raise UserInputError(f"{where} has no answer (training needs one)")
  text, start = answers[0]["text"], answers[0].get("answer_start")
  if not isinstance(start, int) or not text.strip():
    raise UserInputError(
        f"{where}: answer needs a non-empty 'text' and an integer "
        "'answer_start'")
  found = context[start:start + len(text)] if start >= 0 else ""
  if found != text:
    raise UserInputError(
        f"{where}: answer {text!r} is not in the context at answer_start "
        f"{start} (found {found!r})")
  example.answer_text = text
  example.answer_start = start
  return example
