"""JSON lines NER files: one sentence a line, as Hugging Face `datasets`
exports CoNLL-2003 and WikiANN.

  {"tokens": ["EU", "rejects", "German", "call"], "tags": ["B-ORG", "O", ...]}
  {"id": "0", "tokens": [...], "ner_tags": [3, 0, 7, 0]}

Tags are under `tags` (else `ner_tags`, Hugging Face's name); strings, or
integers named by a label list (`--label_names`, or a `label_names.txt` /
`label_names.json` file beside the data). A record without tags is
unlabeled (a test file). Predictions are written back record for record,
every other key kept, the tags in the form given (integers stay integers).
"""

import json
from typing import List, Optional, Sequence, Tuple, Union

from data_pipeline.tasks.ner.sentences import BadRecord
from data_pipeline.tasks.ner.sentences import Sentence

EXTENSIONS = (".jsonl", ".json", ".ndjson")
TAG_KEYS = ("tags", "ner_tags")


def tag_key(record: dict) -> Optional[str]:
  """The key holding a record's tags, or None."""
  return next((k for k in TAG_KEYS if k in record), None)


def _tags(record: dict, key: str, line: int,
          label_names: Optional[Sequence[str]]) -> List[str]:
  tags = record[key]
  if not isinstance(tags, list):
    raise BadRecord(line, f"'{key}' must be a list")
  if all(isinstance(t, str) for t in tags):
    return tags
  if not all(isinstance(t, int) and not isinstance(t, bool) for t in tags):
    raise BadRecord(line, f"'{key}' must hold strings or integers, got "
                    f"{tags!r}")
  if label_names is None:
    raise BadRecord(line, f"integer tags in '{key}' need their names: pass "
                    "--label_names=O,B-PER,I-PER,... or put "
                    "label_names.txt (one name a line) beside the file")
  bad = [t for t in tags if not 0 <= t < len(label_names)]
  if bad:
    raise BadRecord(line, f"tag {bad[0]} has no name: {len(label_names)} "
                    "label names are given (--label_names)")
  return [label_names[t] for t in tags]


def parse_record(line_text: str, line: int, labeled: Optional[bool],
                 label_names: Optional[Sequence[str]]) -> Sentence:
  """One line's Sentence. Raises BadRecord."""
  try:
    record = json.loads(line_text)
  except json.JSONDecodeError as e:
    raise BadRecord(line, f"not JSON ({e.msg})") from None
  if not isinstance(record, dict):
    raise BadRecord(line, "not a JSON object")
  tokens = record.get("tokens")
  if not isinstance(tokens, list) or not all(isinstance(t, str)
                                             for t in tokens):
    raise BadRecord(line, "no 'tokens' list of strings")
  key = tag_key(record)
  if key is None and labeled:
    raise BadRecord(line, "no 'tags' (or 'ner_tags') list")
  tags = None
  if key is not None and labeled is not False:
    tags = _tags(record, key, line, label_names)
    if len(tags) != len(tokens):
      raise BadRecord(line, f"{len(tokens)} tokens but {len(tags)} tags")
  return Sentence(tokens, tags, line, [], record=record)


def parse(text: str, labeled: Optional[bool],
          label_names: Optional[Sequence[str]] = None
         ) -> Tuple[List[Union[Sentence, BadRecord]], bool]:
  """Sentences of a JSON lines file (blank lines ignored).

  Args:
    text: the file's text.
    labeled: whether records must have tags; None: as the first record.
    label_names: the names of integer tags, or None.

  Returns:
    (records, labeled): per record, its Sentence or BadRecord.
  """
  records: List[Union[Sentence, BadRecord]] = []
  for number, line_text in enumerate(text.split("\n"), start=1):
    if not line_text.strip():
      continue
    try:
      sentence = parse_record(line_text, number, labeled, label_names)
    except BadRecord as e:
      records.append(e)
      continue
    if labeled is None:
      labeled = sentence.tags is not None
    records.append(sentence)
  return records, bool(labeled)


def render(sentences: Sequence[Sentence], predicted: Sequence[Sequence[str]],
           label_names: Optional[Sequence[str]] = None) -> str:
  """The records with their tags replaced by `predicted` (under the key
  they had, else `tags`; integers when `label_names` names them)."""
  index = {name: i for i, name in enumerate(label_names or ())}
  out = []
  for sentence, tags in zip(sentences, predicted):
    record = dict(sentence.record)
    key = tag_key(record) or TAG_KEYS[0]
    record[key] = [index[t] for t in tags] if label_names else list(tags)
    out.append(json.dumps(record, ensure_ascii=False))
  return "\n".join(out) + "\n"
