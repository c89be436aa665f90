"""NER files: CoNLL, JSON lines and CLUENER read, checked and written back;
tag schemes; every bad input named by path:line (or skipped and counted)."""

import json
import random

import pytest
from seqeval.metrics import f1_score
from seqeval.metrics.sequence_labeling import get_entities
from seqeval.scheme import IOBES
from seqeval.scheme import Tokens

from albert_common.errors import UserInputError
from data_pipeline.tasks.ner import metrics
from data_pipeline.tasks.ner import ner_files
from data_pipeline.tasks.ner import tag_schemes
from data_pipeline.tasks.ner import task_files
from tests.scripts import ner_data

CONLL = """-DOCSTART- -X- -X- O

EU NNP B-NP I-ORG
rejects VBZ B-VP O
German JJ B-NP I-MISC
call NN I-NP O
. . O O

Peter NNP B-NP I-PER
Blackburn NNP I-NP I-PER
Smith NNP I-NP B-PER
"""


def _write(tmp_path, name, text):
  path = tmp_path / name
  path.write_text(text, encoding="utf-8")
  return str(path)


def test_conll_columns_docstart_iob1_and_write_back(tmp_path):
  path = _write(tmp_path, "train.txt", CONLL)
  ner_file = ner_files.read_ner_file(path)
  assert ner_file.input_format == "conll" and ner_file.scheme == "IOB1"
  assert [s.words for s in ner_file.sentences] == [
      ["EU", "rejects", "German", "call", "."],
      ["Peter", "Blackburn", "Smith"]]
  assert ner_file.sentences[1].tags == ["I-PER", "I-PER", "B-PER"]
  assert ner_file.sentences[1].token_lines == [9, 10, 11]
  # The gold tags written back give the file back, line for line.
  gold = [s.tags for s in ner_file.sentences]
  assert ner_files.render_predictions(ner_file, gold, "IOB1") == CONLL
  # Other tags replace the last column only; IOB1's entities are seqeval's.
  other = ner_files.render_predictions(
      ner_file, [["O"] * 5, ["I-LOC", "O", "O"]], "IOB1")
  assert "EU NNP B-NP O\n" in other and "Peter NNP B-NP I-LOC\n" in other
  assert tag_schemes.entities(gold[1], "IOB1") == [("PER", 0, 1),
                                                  ("PER", 2, 2)]


def test_unlabeled_conll_gets_a_tag_column(tmp_path):
  path = _write(tmp_path, "test.txt", "Hello\nworld\n\nagain\n")
  ner_file = ner_files.read_ner_file(path, labeled=None, scheme="IOB2")
  assert not ner_file.labeled and ner_file.sentences[0].tags is None
  text = ner_files.render_predictions(ner_file, [["B-X", "I-X"], ["O"]],
                                      "IOB2")
  assert text == "Hello B-X\nworld I-X\n\nagain O\n"
  assert ner_files.predictions_file_name("test", ner_file) == (
      "test_predictions.txt")


def test_unlabeled_jsonl_and_cluener_get_their_predictions(tmp_path):
  sentences = ner_data.english_sentences(3, seed=1)
  path = tmp_path / "test.jsonl"
  path.write_text("\n".join(json.dumps({"id": i, "tokens": words})
                            for i, (words, _) in enumerate(sentences)))
  ner_file = ner_files.read_ner_file(str(path), labeled=None, scheme="IOB2")
  tags = [t for _, t in sentences]
  records = [json.loads(line) for line in ner_files.render_predictions(
      ner_file, tags, "IOB2").splitlines()]
  assert [(r["id"], r["tokens"], r["tags"]) for r in records] == [
      (i, w, t) for i, (w, t) in enumerate(sentences)]
  # With the run's integer names, as integers.
  names = sorted({t for s in tags for t in s})
  ner_file = ner_files.read_ner_file(str(path), labeled=None, scheme="IOB2",
                                     label_names=",".join(names))
  assert json.loads(ner_files.render_predictions(
      ner_file, tags, "IOB2").splitlines()[0])["tags"] == [
          names.index(t) for t in tags[0]]
  texts = ner_data.chinese_records(3, seed=1)
  cluener = ner_data.write_cluener(tmp_path / "test.json", texts,
                                   with_labels=False)
  ner_file = ner_files.read_ner_file(cluener, labeled=None, scheme="IOBES")
  assert not ner_file.labeled
  gold = [tag_schemes.tags_from_spans(
      len(r["text"]), [(k, a, b) for k, m in r["label"].items()
                       for places in m.values() for a, b in places],
      "IOBES") for r in texts]
  records = [json.loads(line) for line in ner_files.render_predictions(
      ner_file, gold, "IOBES").splitlines()]
  assert [(r["id"], r["label"]) for r in records] == [
      (i, r["label"]) for i, r in enumerate(texts)]


def test_jsonl_string_and_integer_tags_equal_conll(tmp_path):
  sentences = ner_data.english_sentences(30, seed=4)
  names = sorted({t for _, tags in sentences for t in tags})
  conll = ner_files.read_ner_file(ner_data.write_conll(
      tmp_path / "a.conll", sentences))
  strings = ner_files.read_ner_file(ner_data.write_jsonl(
      tmp_path / "b.jsonl", sentences))
  integers = ner_files.read_ner_file(
      ner_data.write_jsonl(tmp_path / "c.jsonl", sentences, names),
      label_names=",".join(names))
  for ner_file in (strings, integers):
    assert ner_file.input_format == "jsonl" and ner_file.scheme == "IOB2"
    assert [(s.words, s.tags) for s in ner_file.sentences] == [
        (s.words, s.tags) for s in conll.sentences]
  # Integer tags are written back as integers, under their key.
  gold = [s.tags for s in integers.sentences]
  lines = ner_files.render_predictions(integers, gold, "IOB2").splitlines()
  assert json.loads(lines[3]) == json.loads(
      (tmp_path / "c.jsonl").read_text().splitlines()[3])
  # Names from a label_names.txt beside the file.
  (tmp_path / "label_names.txt").write_text("\n".join(names) + "\n")
  assert ner_files.read_ner_file(str(tmp_path / "c.jsonl")).sentences[
      3].tags == gold[3]


def test_cluener_spans_become_tags_and_come_back(tmp_path):
  records = ner_data.chinese_records(20, seed=2)
  path = ner_data.write_cluener(tmp_path / "dev.json", records)
  for scheme in ("IOB2", "IOBES"):
    ner_file = ner_files.read_ner_file(path, scheme=scheme)
    assert ner_file.input_format == "cluener" and ner_file.scheme == scheme
    sentence = ner_file.sentences[1]
    assert sentence.words == list(records[1]["text"])
    lines = ner_files.render_predictions(
        ner_file, [s.tags for s in ner_file.sentences], scheme).splitlines()
    assert [json.loads(line)["label"] for line in lines] == [
        r["label"] for r in records]
  iobes = ner_files.read_ner_file(path, scheme="IOBES").sentences[0].tags
  assert {t[0] for t in iobes} <= {"O", "B", "I", "E"} and "E" in {
      t[0] for t in iobes}


@pytest.mark.parametrize("scheme", ["IOB2", "IOB1", "IOBES"])
def test_entities_and_decoding_agree_with_seqeval(scheme):
  """Spans -> tags -> entities is the identity for every scheme; on any
  tags (also ill-formed ones) the entities are seqeval's."""
  rng = random.Random(scheme)
  kinds = ["PER", "LOC"]
  for _ in range(200):
    spans, at = [], 0
    while at < 12:
      at += rng.randint(0, 2)
      length = rng.randint(1, 3)
      if at + length > 12:
        break
      spans.append((rng.choice(kinds), at, at + length - 1))
      at += length
    tags = tag_schemes.tags_from_spans(12, spans, scheme)
    assert tag_schemes.check_sequence(tags, scheme) is None, tags
    assert tag_schemes.entities(tags, scheme) == spans
  prefixes = "BIES" if scheme == "IOBES" else "BI"
  for _ in range(300):
    tags = [rng.choice(["O"] + [f"{p}-{k}" for p in prefixes for k in kinds])
            for _ in range(rng.randint(0, 10))]
    expected = ([(e.tag, e.start, e.end - 1) for e in
                 Tokens(tags, IOBES).entities] if scheme == "IOBES"
                else get_entities(tags))
    assert tag_schemes.entities(tags, scheme) == expected


def test_scheme_detection_and_breaks():
  assert tag_schemes.detect_scheme([["B-PER", "I-PER", "O"]]) == "IOB2"
  assert tag_schemes.detect_scheme([["I-PER", "B-PER", "O", "I-LOC"]]) == (
      "IOB1")
  assert tag_schemes.detect_scheme([["S-PER"], ["O"]]) == "IOBES"
  assert tag_schemes.check_sequence(["O", "I-PER"], "IOBES") == (
      1, "I-PER after O breaks IOBES (an entity starts with B-PER or is "
      "S-PER)")
  assert tag_schemes.check_sequence(["B-PER", "O"], "IOBES")[0] == 0
  assert tag_schemes.check_sequence(["O", "I-PER"], "IOB2")[0] == 1
  assert tag_schemes.check_sequence(["O", "B-PER"], "IOB1")[0] == 1
  assert "not an IOB2 tag" in tag_schemes.check_sequence(["S-PER"],
                                                         "IOB2")[1]
  assert tag_schemes.canonical("bio") == "IOB2"


def test_metrics_are_seqevals():
  gold = [["B-PER", "I-PER", "O", "B-LOC"], ["O", "B-ORG"]]
  predicted = [["B-PER", "I-PER", "O", "O"], ["I-ORG", "B-ORG"]]
  results = metrics.evaluate(gold, predicted, "IOB2")
  # Right: PER and the second ORG; the leading I-ORG is an entity too.
  assert results["f1"] == f1_score(gold, predicted) == pytest.approx(2 / 3)
  assert results["accuracy"] == pytest.approx(4 / 6)
  assert results["PER_f1"] == 1.0 and results["LOC_number"] == 1
  assert results["LOC_recall"] == 0.0
  iobes_gold = [["B-PER", "E-PER", "S-LOC"]]
  iobes_predicted = [["I-PER", "E-PER", "S-LOC"]]  # ill-formed: no PER
  strict = metrics.evaluate(iobes_gold, iobes_predicted, "IOBES")
  assert strict["f1"] == f1_score(iobes_gold, iobes_predicted, mode="strict",
                                  scheme=IOBES) == pytest.approx(2 / 3)


# --- bad input: path:line, or skipped and counted ----------------------------

_GOOD_CONLL = "Anna B-PER\nsings O\n\n"


def _bad_files(tmp_path):
  """name -> (path, read kwargs, path:line, message regex)."""
  cluener = {"text": "张伟在北京", "label": {"name": {"张伟": [[0, 1]]}}}
  outside = dict(cluener, label={"address": {"北京": [[3, 5]]}})
  mismatch = dict(cluener, label={"address": {"上海": [[3, 4]]}})

  def jsonl(*records):
    return "\n".join(json.dumps(r, ensure_ascii=False) for r in records)

  return {
      "iobes_break": ("iobes.txt", "Anna S-PER\nsings O\n\nx O\ny I-PER\n",
                      dict(scheme="IOBES"), 5,
                      "I-PER after O breaks IOBES"),
      "one_column": ("one.txt", _GOOD_CONLL + "x O\nlonely\n", {}, 5,
                     r"one column \('lonely'\)"),
      "lengths": ("len.jsonl", jsonl(
          {"tokens": ["a"], "tags": ["O"]},
          {"tokens": ["a", "b"], "tags": ["O"]}), {}, 2,
                  "2 tokens but 1 tags"),
      "cluener_outside": ("out.json", jsonl(cluener, outside), {}, 2,
                          r"span \[3, 5\] is outside the text"),
      "cluener_mismatch": ("mis.json", jsonl(cluener, mismatch), {}, 2,
                           "is '北京' in the text, not '上海'"),
      "unseen_dev_tag": ("dev.txt", _GOOD_CONLL + "Paris B-LOC\n",
                         dict(known_labels=["B-PER", "O"]), 4,
                         "tag 'B-LOC' is not among the training labels"),
  }


@pytest.mark.parametrize("case", ["iobes_break", "one_column", "lengths",
                                  "cluener_outside", "cluener_mismatch",
                                  "unseen_dev_tag"])
def test_bad_record_names_path_and_line_or_is_skipped(tmp_path, case):
  name, text, kwargs, line, message = _bad_files(tmp_path)[case]
  path = _write(tmp_path, name, text)
  with pytest.raises(UserInputError,
                     match=rf"^{path}:{line}: .*{message}.*--skip_bad_"):
    ner_files.read_ner_file(path, **kwargs)
  kept = ner_files.read_ner_file(path, skip_bad_records=True, **kwargs)
  assert kept.skipped == 1 and len(kept.sentences) == 1


def test_empty_missing_and_undecodable_files(tmp_path):
  empty = _write(tmp_path, "empty.txt", "\n\n")
  with pytest.raises(UserInputError, match=rf"^{empty}: no sentences"):
    ner_files.read_ner_file(empty)
  with pytest.raises(UserInputError, match="no such file"):
    ner_files.read_ner_file(str(tmp_path / "missing.txt"))
  latin = tmp_path / "latin.txt"
  latin.write_bytes(b"a O\n\ncaf\xe9 O\n")
  with pytest.raises(UserInputError, match=rf"{latin}:3: not UTF-8"):
    ner_files.read_ner_file(str(latin))
  odd = _write(tmp_path, "data.xyz", "a O\n")
  with pytest.raises(UserInputError, match="--input_format"):
    ner_files.read_ner_file(odd)
  all_bad = _write(tmp_path, "bad.txt", "lonely\n")
  with pytest.raises(UserInputError, match="all 1 records are bad"):
    ner_files.read_ner_file(all_bad, skip_bad_records=True)


def test_task_files_keep_labels_and_scheme_in_the_output_dir(tmp_path):
  train = _write(tmp_path, "train.txt", CONLL)
  dev = _write(tmp_path, "dev.txt", "Peter I-PER\nsings O\n")
  out = str(tmp_path / "out")
  files = task_files.read_task_files(out, train_file=train, dev_file=dev)
  assert files.labels.labels == ("B-PER", "I-MISC", "I-ORG", "I-PER", "O")
  assert files.scheme == "IOB1" and files.dev.scheme == "IOB1"
  from data_pipeline.tasks import label_list
  label_list.write(out, files.labels)
  again = task_files.read_task_files(out, dev_file=dev)  # labels.json
  assert again.labels == files.labels and again.train is None
  other = _write(tmp_path, "other.txt", "Paris B-LOC\n")
  with pytest.raises(UserInputError, match="use a new --output_dir"):
    task_files.read_task_files(out, train_file=other)
  with pytest.raises(UserInputError, match="no labels"):
    task_files.read_task_files(str(tmp_path / "new"), dev_file=dev)
