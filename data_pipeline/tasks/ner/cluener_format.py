"""CLUENER2020 files: JSON lines of a text and its entities' character spans.

  {"text": "浙商银行企业信贷部叶老桂博士则从另一个角度对五道门槛进行了解读。",
   "label": {"name": {"叶老桂": [[9, 11]]},
             "company": {"浙商银行": [[0, 3]]}}}

Spans are [start, end] with an inclusive end, so `text[start:end + 1]` is
the span's text; a span outside the text, whose text differs, or that
overlaps another is an error naming the line. Every character is a token
(Chinese NER is tagged character by character, albert_zh's CLUENER
examples too); the spans become tags in the run's scheme (IOB2 unless
--tag_scheme says otherwise). A record without `label` is unlabeled (the
test file). Predictions are written back as the `label` of each record,
its other keys (`id`) kept.
"""

import json
from typing import Dict, List, Optional, Sequence, Tuple, Union

from data_pipeline.tasks.ner import tag_schemes
from data_pipeline.tasks.ner.sentences import BadRecord
from data_pipeline.tasks.ner.sentences import Sentence


def is_cluener_record(line_text: str) -> bool:
  """Whether a JSON line looks like CLUENER's (a "text" string, no
  "tokens")."""
  try:
    record = json.loads(line_text)
  except json.JSONDecodeError:
    return False
  return (isinstance(record, dict) and isinstance(record.get("text"), str)
          and "tokens" not in record)


def _spans(label, text: str, line: int) -> List[tag_schemes.Entity]:
  """The (type, first, last) spans of a `label` object, checked."""
  if not isinstance(label, dict):
    raise BadRecord(line, "'label' must be an object {type: {text: "
                    "[[start, end], ...]}}")
  spans = []
  for kind, mentions in label.items():
    if not isinstance(mentions, dict):
      raise BadRecord(line, f"label {kind!r} must map span texts to "
                      "[[start, end], ...]")
    for mention, places in mentions.items():
      if not isinstance(places, list):
        raise BadRecord(line, f"{kind} {mention!r}: expected a list of "
                        "[start, end] pairs")
      for place in places:
        if not (isinstance(place, list) and len(place) == 2 and
                all(isinstance(x, int) and not isinstance(x, bool)
                    for x in place)):
          raise BadRecord(line, f"{kind} {mention!r}: {place!r} is not a "
                          "[start, end] pair of integers")
        start, end = place
        if not 0 <= start <= end < len(text):
          raise BadRecord(line, f"{kind} {mention!r} span [{start}, {end}] "
                          f"is outside the text ({len(text)} characters)")
        if text[start:end + 1] != mention:
          raise BadRecord(line, f"{kind} span [{start}, {end}] is "
                          f"{text[start:end + 1]!r} in the text, not "
                          f"{mention!r}")
        spans.append((kind, start, end))
  spans.sort(key=lambda s: (s[1], s[2]))
  for a, b in zip(spans, spans[1:]):
    if b[1] <= a[2]:
      raise BadRecord(line, f"spans [{a[1]}, {a[2]}] ({a[0]}) and "
                      f"[{b[1]}, {b[2]}] ({b[0]}) overlap")
  return spans


def parse_record(line_text: str, line: int, labeled: Optional[bool],
                 scheme: str) -> Sentence:
  """One line's Sentence, its spans as tags of `scheme`. Raises BadRecord."""
  try:
    record = json.loads(line_text)
  except json.JSONDecodeError as e:
    raise BadRecord(line, f"not JSON ({e.msg})") from None
  if not isinstance(record, dict) or not isinstance(record.get("text"), str):
    raise BadRecord(line, "not a CLUENER record (a JSON object with a "
                    "'text' string)")
  text = record["text"]
  if labeled and "label" not in record:
    raise BadRecord(line, "no 'label'")
  tags = None
  if labeled is not False and "label" in record:
    spans = _spans(record["label"], text, line)
    tags = tag_schemes.tags_from_spans(len(text), spans, scheme)
  return Sentence(list(text), tags, line, [], record=record)


def parse(text: str, labeled: Optional[bool], scheme: str
         ) -> Tuple[List[Union[Sentence, BadRecord]], bool]:
  """Sentences of a CLUENER file (blank lines ignored); see
  jsonl_format.parse."""
  records: List[Union[Sentence, BadRecord]] = []
  for number, line_text in enumerate(text.split("\n"), start=1):
    if not line_text.strip():
      continue
    try:
      sentence = parse_record(line_text, number, labeled, scheme)
    except BadRecord as e:
      records.append(e)
      continue
    if labeled is None:
      labeled = sentence.tags is not None
    records.append(sentence)
  return records, bool(labeled)


def label_object(text: str, entities: Sequence[tag_schemes.Entity]
                ) -> Dict[str, Dict[str, List[List[int]]]]:
  """CLUENER's `label` of (type, first, last) character spans."""
  label: Dict[str, Dict[str, List[List[int]]]] = {}
  for kind, first, last in entities:
    label.setdefault(kind, {}).setdefault(text[first:last + 1], []).append(
        [first, last])
  return label


def render(sentences: Sequence[Sentence], predicted: Sequence[Sequence[str]],
           scheme: str) -> str:
  """The records with `label` set to the entities of `predicted`."""
  out = []
  for sentence, tags in zip(sentences, predicted):
    record = dict(sentence.record)
    record["label"] = label_object(record["text"],
                                   tag_schemes.entities(tags, scheme))
    out.append(json.dumps(record, ensure_ascii=False))
  return "\n".join(out) + "\n"
