"""albert_tf.prediction.inputs: every format streamed, bad rows named."""

import gzip
import json

import pytest

from albert_common.errors import UserInputError
from albert_tf.prediction.inputs import Columns
from albert_tf.prediction.inputs import InputFile

TEXTS = ["first, with a comma", "second \"quoted\"", "third\nspans lines",
         "fourth é中"]


def _rows(path, columns=Columns(id="id"), input_format="auto"):
  return list(InputFile(str(path), input_format, columns).rows())


def _write_parquet(path, records):
  import pyarrow as pa
  import pyarrow.parquet as pq
  pq.write_table(pa.Table.from_pylist(records), str(path), row_group_size=3)


def test_every_format_gives_the_same_rows(tmp_path):
  import csv
  records = [{"id": f"r{i}", "text": t} for i, t in enumerate(TEXTS)]
  with open(tmp_path / "a.csv", "w", newline="", encoding="utf-8") as f:
    writer = csv.DictWriter(f, ["id", "text"])
    writer.writeheader()
    writer.writerows(records)
  (tmp_path / "a.jsonl").write_text(
      "".join(json.dumps(r) + "\n\n" for r in records), encoding="utf-8")
  with gzip.open(tmp_path / "a.jsonl.gz", "wt", encoding="utf-8") as f:
    f.write("".join(json.dumps(r) + "\n" for r in records))
  _write_parquet(tmp_path / "a.parquet", records)
  expected = [(i, r["id"], r["text"]) for i, r in enumerate(records)]
  for name in ("a.csv", "a.jsonl", "a.jsonl.gz", "a.parquet"):
    rows = _rows(tmp_path / name)
    assert [(r.row, r.record_id, r.text_a) for r in rows] == expected, name
    assert not any(r.problem for r in rows)
  tsv = [r for r in records if "\n" not in r["text"]]
  (tmp_path / "a.tsv").write_text("id\ttext\n" + "".join(
      f"{r['id']}\t{r['text']}\n" for r in tsv), encoding="utf-8")
  assert [r.text_a for r in _rows(tmp_path / "a.tsv")] == [
      r["text"] for r in tsv]
  # The third record spans lines 4-5: the fourth starts on line 6.
  assert _rows(tmp_path / "a.csv")[3].where.endswith("a.csv:6")


def test_plain_text_is_one_record_a_line(tmp_path):
  path = tmp_path / "docs.txt.gz"
  with gzip.open(path, "wb") as f:
    f.write("\ufeffone\r\n\ntwo\nthree".encode("utf-8"))
  rows = _rows(path, Columns())
  assert [(r.row, r.text_a, r.where[-1]) for r in rows] == [
      (0, "one", "1"), (1, "two", "3"), (2, "three", "4")]
  with pytest.raises(UserInputError, match="plain text"):
    _rows(path, Columns(id="id"))


def test_bad_rows_name_their_line_and_reason(tmp_path):
  path = tmp_path / "bad.jsonl"
  path.write_bytes(b'{"id": 1, "text": "good"}\n'
                   b'{"id": 2, "text": \n'
                   b'[1, 2]\n'
                   b'{"id": 4, "body": "x"}\n'
                   b'{"id": 5, "text": "caf\xe9"}\n'
                   b'{"id": 6, "text": null}\n'
                   b'{"id": 7, "text": 7}\n')
  rows = _rows(path)
  problems = [(r.row, r.where.rsplit(":", 1)[1], r.problem) for r in rows]
  assert problems[0] == (0, "1", "")
  assert problems[1][:2] == (1, "2") and "not JSON" in problems[1][2]
  assert problems[2] == (2, "3", "not a JSON object")
  assert problems[3][:2] == (3, "4") and "no column 'text'" in problems[3][2]
  assert problems[4] == (4, "5", "not valid UTF-8")
  assert problems[5] == (5, "6", "no text in column 'text'")
  assert (rows[6].text_a, rows[6].record_id) == ("7", 7)

  csv_path = tmp_path / "bad.csv"
  csv_path.write_bytes(b"id,text\n1,good\n2,caf\xe9\n3,a,b\n4,fine\n")
  rows = _rows(csv_path)
  assert [(r.row, r.where.rsplit(":", 1)[1], r.problem[:14])
          for r in rows] == [(0, "2", ""), (1, "3", "not valid UTF-"),
                             (2, "4", "expected 2 com"), (3, "5", "")]


def test_a_column_the_header_lacks_fails_the_file(tmp_path):
  path = tmp_path / "a.csv"
  path.write_text("id,body\n1,x\n")
  with pytest.raises(UserInputError,
                     match=r"a.csv:1: no column 'text' \(--text_column\); "
                     "the columns there: id, body"):
    _rows(path)
  _write_parquet(tmp_path / "a.parquet", [{"id": 1, "body": "x"}])
  with pytest.raises(UserInputError, match="--id_column"):
    _rows(tmp_path / "a.parquet", Columns(text="body", id="key"))
  # `sentence` stands in for a missing default `text`, as fine-tuning.
  path.write_text("id,sentence\n1,x\n")
  assert _rows(path)[0].text_a == "x"


def test_ram_filesystem_input():
  import tensorflow as tf
  path = "ram://prediction_inputs/a.jsonl"
  tf.io.gfile.makedirs("ram://prediction_inputs")
  with tf.io.gfile.GFile(path, "w") as f:
    f.write('{"text": "x"}\n{"text": "y"}\n')
  assert [r.text_a for r in _rows(path, Columns())] == ["x", "y"]


CHOICES = Columns("context", "question", "id", ("--context_column",
                                                "--question_column"),
                  "choices", 3)


def test_choices_from_lists_json_text_and_numbered_columns(tmp_path):
  records = [{"id": i, "context": f"c{i}", "question": f"q{i} _",
              "choices": [f"a{i}", f"b{i}", f"c{i}"]} for i in range(4)]
  _write_parquet(tmp_path / "a.parquet", records)
  (tmp_path / "a.jsonl").write_text(
      "".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
  (tmp_path / "a.csv").write_text(
      "id,context,question,choices\n" + "".join(
          f"{r['id']},{r['context']},{r['question']},"
          f"\"{json.dumps(r['choices']).replace(chr(34), chr(34) * 2)}\"\n"
          for r in records), encoding="utf-8")
  # SWAG's layout: sent1, sent2, ending0..ending2 (no question here).
  (tmp_path / "swag.csv").write_text(
      "id,sent1,ending0,ending1,ending2\n" + "".join(
          f"{r['id']},{r['context']},{','.join(r['choices'])}\n"
          for r in records), encoding="utf-8")
  want = [(r["context"], r["question"], tuple(r["choices"]))
          for r in records]
  for name in ("a.parquet", "a.jsonl", "a.csv"):
    rows = _rows(tmp_path / name, CHOICES)
    assert [(r.text_a, r.text_b, r.choices) for r in rows] == want, name
    assert [str(r.record_id) for r in rows] == ["0", "1", "2", "3"]
  rows = _rows(tmp_path / "swag.csv", CHOICES)
  assert [(r.text_a, r.text_b, r.choices) for r in rows] == [
      (c, "", x) for c, _, x in want]


def test_bad_choices_are_bad_rows_and_a_missing_column_stops(tmp_path):
  (tmp_path / "a.jsonl").write_text(
      '{"choices": ["a", "b", "c"]}\n{"choices": ["a", "b"]}\n'
      '{"choices": "a, b, c"}\n{"choices": ["a", null, "c"]}\n'
      '{"choices": "[not json"}\n', encoding="utf-8")
  columns = Columns("context", "question", "", CHOICES.flags, "choices", 3)
  assert [r.problem for r in _rows(tmp_path / "a.jsonl", columns)] == [
      "", "2 choices; the export takes 3",
      "choices 'a, b, c' are not a list", "a choice is empty (null)",
      "choices '[not json' are not a JSON list"]
  (tmp_path / "b.jsonl").write_text('{"options": ["a", "b", "c"]}\n',
                                    encoding="utf-8")
  with pytest.raises(UserInputError, match=r"b.jsonl:1: no column "
                     r"'choices' \(--choices_column \(or numbered columns "
                     r"choices0, choices1, \.\.\.\)\)"):
    _rows(tmp_path / "b.jsonl", columns)
  with pytest.raises(UserInputError, match="--context_column"):
    _rows(tmp_path / "a.jsonl", Columns("article", "question", "",
                                        CHOICES.flags, "choices", 3))
