"""The sentence splitter of the document formats: accuracy on the test set."""

import json
import os

import pytest

from data_pipeline.corpora import sentence_splitter

CASES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../data",
                     "sentence_boundaries.jsonl")


def _cases():
  with open(CASES, encoding="utf-8") as f:
    return [json.loads(line) for line in f]


def _ends(sentences, sep):
  """Character offsets where each sentence ends in their join."""
  ends, pos = set(), 0
  for i, sentence in enumerate(sentences):
    pos += (len(sep) if i else 0) + len(sentence)
    ends.add(pos)
  return ends


def _exact_boundaries(lang):
  """|predicted & gold| / |predicted | gold| boundaries over the cases."""
  hit = union = 0
  for case in _cases():
    if lang not in ("all", case["lang"]):
      continue
    sep = "" if case["lang"] == "zh" else " "
    gold = case["sentences"]
    text = sep.join(gold)
    predicted = sentence_splitter.split_line(text)
    assert sep.join(predicted) == text  # Nothing lost or rewritten.
    got, want = _ends(predicted, sep), _ends(gold, sep)
    hit += len(got & want)
    union += len(got | want)
  return hit / union


def test_the_test_set_is_large_enough():
  langs = [c["lang"] for c in _cases()]
  assert langs.count("en") >= 60 and langs.count("zh") >= 20


@pytest.mark.parametrize("lang,floor", [("all", 0.95), ("en", 0.95),
                                        ("zh", 0.95)])
def test_boundary_accuracy(lang, floor):
  # Measured 0.969 all, 0.965 Latin, 0.980 CJK (BENCHMARKS.md).
  assert _exact_boundaries(lang) >= floor


def test_closing_marks_stay_with_their_sentence():
  text = "他说：“好。”我们走吧！（真的？）好。"
  assert sentence_splitter.split_line(text) == [
      "他说：“好。”", "我们走吧！", "（真的？）", "好。"]


def test_documents_split_per_line_and_drop_blank_lines():
  text = "Title line\n\nDr. Smith came. He left.\n  \nLast one."
  assert sentence_splitter.document_sentences(text, "blingfire") == [
      "Title line", "Dr. Smith came.", "He left.", "Last one."]
  assert sentence_splitter.document_sentences(text, "none") == [
      "Title line", "Dr. Smith came. He left.", "Last one."]
