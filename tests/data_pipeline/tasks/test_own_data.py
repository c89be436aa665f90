"""One's own record files: CSV, TSV, JSON lines and Parquet read the same,
typed labels, Hugging Face ClassLabel names, multiple-choice records, every
bad input as one line naming its place, and the metrics against numbers
computed here by hand."""

import csv
import gzip
import json

import numpy as np
import pytest

from albert_common.errors import UserInputError
from data_pipeline.corpora.record_files import RecordFileOptions
from data_pipeline.tasks import label_list as label_list_lib
from data_pipeline.tasks.label_list import LabelList
from data_pipeline.tasks.multiple_choice import examples as choice_examples
from data_pipeline.tasks.multiple_choice.examples import ChoiceColumns
from data_pipeline.tasks.own_data import examples as own_examples
from data_pipeline.tasks.own_data import features as own_features
from data_pipeline.tasks.own_data import metrics as own_metrics
from data_pipeline.tasks.own_data.examples import TextColumns

FILES = RecordFileOptions()
COLUMNS = TextColumns()

# Text every format can hold (TSV takes no tab or newline).
ROWS = [
    {"id": "a1", "text": "Refund, please: charged twice", "label": "billing"},
    {"id": "a2", "text": 'The "express" parcel is late', "label": "shipping"},
    {"id": "a3", "text": "Invoice 10,000 $ wrong", "label": "billing"},
    {"id": "a4", "text": "Crème brûlée arrived broken 😀", "label": "Damage"},
    {"id": "a5", "text": "where is my order?", "label": "shipping"},
]


def _write_csv(path, rows, columns=("id", "text", "label")):
  with open(path, "w", encoding="utf-8", newline="") as f:
    writer = csv.writer(f)
    writer.writerow(columns)
    for row in rows:
      writer.writerow([row[c] for c in columns])
  return str(path)


def _write_tsv(path, rows, columns=("id", "text", "label")):
  with open(path, "w", encoding="utf-8") as f:
    f.write("\t".join(columns) + "\n")
    for row in rows:
      f.write("\t".join(str(row[c]) for c in columns) + "\n")
  return str(path)


def _write_jsonl(path, rows, compress=False):
  text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
  if compress:
    with gzip.open(path, "wt", encoding="utf-8") as f:
      f.write(text)
  else:
    with open(path, "w", encoding="utf-8") as f:
      f.write(text)
  return str(path)


def _write_parquet(path, columns, features=None, row_group_size=2):
  """Columns {name: values} as Parquet (row groups of `row_group_size`),
  with Hugging Face `datasets` Features in the schema metadata, as
  `Features.arrow_schema` writes them."""
  import pyarrow as pa
  import pyarrow.parquet as pq
  table = pa.table(columns)
  if features is not None:
    table = table.replace_schema_metadata({"huggingface": json.dumps(
        {"info": {"features": features}})})
  pq.write_table(table, str(path), row_group_size=row_group_size)
  return str(path)


@pytest.fixture(scope="module")
def tokenizer(spm_model):
  from data_pipeline.tokenization import sentencepiece_tokenizer
  return sentencepiece_tokenizer.SentencePieceTokenizer(spm_model)


def test_the_same_records_in_every_format_give_the_same_features(
    tmp_path, tokenizer):
  paths = {
      "csv": _write_csv(tmp_path / "t.csv", ROWS),
      "tsv": _write_tsv(tmp_path / "t.tsv", ROWS),
      "jsonl": _write_jsonl(tmp_path / "t.jsonl", ROWS),
      "json.gz": _write_jsonl(tmp_path / "t.json.gz", ROWS, compress=True),
      "parquet": _write_parquet(tmp_path / "t.parquet", {
          c: [r[c] for r in ROWS] for c in ("id", "text", "label")}),
      "csv.gz": str(tmp_path / "t.csv.gz"),
      "as_csv": str(tmp_path / "records.txt"),
  }
  with open(paths["csv"], "rb") as f:
    data = f.read()
  with gzip.open(paths["csv.gz"], "wb") as f:
    f.write(data)
  with open(paths["as_csv"], "wb") as f:
    f.write(data)
  features = {}
  for name, path in paths.items():
    files = (RecordFileOptions(input_format="csv") if name == "as_csv"
             else FILES)
    data = own_examples.read_text_file(path, files, COLUMNS, "auto")
    assert data.task_type == "classification"
    assert [e.text_a for e in data.examples] == [r["text"] for r in ROWS]
    assert [e.record_id for e in data.examples] == [r["id"] for r in ROWS]
    labels = own_examples.training_label_list(data)
    assert labels.labels == ("Damage", "billing", "shipping")
    features[name] = own_features.featurize(data.examples, labels, tokenizer,
                                            16, pair=False)
  want = features["csv"]
  for name, got in features.items():
    for field in ("token_ids", "lengths", "segment_a_lengths", "labels"):
      np.testing.assert_array_equal(getattr(got, field), getattr(want, field),
                                    err_msg=f"{name} {field}")
  np.testing.assert_array_equal(want.labels, [1, 2, 1, 0, 2])
  assert want.lengths.max() <= 16


def test_csv_quoting_keeps_commas_quotes_and_newlines(tmp_path):
  path = tmp_path / "q.csv"
  path.write_text('text,label\n"one, ""two""\nthree",x\nplain,y\n\n'
                  '"last\r\nline",z\n', encoding="utf-8")
  data = own_examples.read_text_file(str(path), FILES, COLUMNS, "auto")
  assert [e.text_a for e in data.examples] == [
      'one, "two"\nthree', "plain", "last\r\nline"]
  assert [e.where.rsplit(":", 1)[1] for e in data.examples] == ["2", "4",
                                                               "6"]
  assert not data.has_ids and data.columns == {"text_a": "text",
                                               "label": "label"}


def test_column_fallbacks_pairs_and_custom_columns(tmp_path):
  rows = [{"sentence1": "a cat", "sentence2": "a pet", "gold": "yes"},
          {"sentence1": "a car", "sentence2": "a pet", "gold": "no"}]
  path = _write_jsonl(tmp_path / "p.jsonl", rows)
  data = own_examples.read_text_file(
      path, RecordFileOptions(label_column="gold"), COLUMNS, "auto")
  assert data.columns == {"text_a": "sentence1", "text_b": "sentence2",
                          "label": "gold"}
  assert [(e.text_a, e.text_b, e.label) for e in data.examples] == [
      ("a cat", "a pet", "yes"), ("a car", "a pet", "no")]
  path = _write_tsv(tmp_path / "s.tsv", [{"sentence": "hi", "label": "1"}],
                    ("sentence", "label"))
  assert own_examples.read_text_file(path, FILES, COLUMNS, "auto").columns[
      "text_a"] == "sentence"
  data = own_examples.read_text_file(
      path, FILES, TextColumns(text_a_column="label",
                               text_b_column="sentence"), "auto")
  assert (data.examples[0].text_a, data.examples[0].text_b) == ("1", "hi")


def test_task_types_and_labels(tmp_path):
  def read(rows, task_type="auto", **columns):
    path = _write_jsonl(tmp_path / "l.jsonl", rows)
    return own_examples.read_text_file(path, FILES, TextColumns(**columns),
                                       task_type)
  as_text = read([{"text": "a", "label": "10"}, {"text": "b", "label": 9}])
  assert as_text.task_type == "classification"
  assert [e.label for e in as_text.examples] == ["10", "9"]
  scores = read([{"text": "a", "label": "0.5"}, {"text": "b", "label": 4}])
  assert scores.task_type == "regression"
  assert [e.label for e in scores.examples] == [0.5, 4.0]
  tags = read([{"text": "a", "label": ["x", "y"]}, {"text": "b", "label": []},
               {"text": "c", "label": '["z"]'}])
  assert tags.task_type == "multi_label"
  assert [e.label for e in tags.examples] == [("x", "y"), (), ("z",)]
  split = read([{"text": "a", "label": "y; x"}], "multi_label",
               label_separator=";")
  assert split.examples[0].label == ("x", "y")
  labels = own_examples.training_label_list(tags, threshold=0.3)
  assert labels == LabelList("multi_label", ("x", "y", "z"), threshold=0.3)
  label_list_lib.write(str(tmp_path), labels)
  assert label_list_lib.read(str(tmp_path)) == labels
  assert own_features.label_targets(tags.examples, labels).tolist() == [
      [1, 1, 0], [0, 0, 0], [0, 0, 1]]


def test_parquet_row_groups_and_class_label_names(tmp_path):
  features = {"text": {"dtype": "string", "_type": "Value"},
              "label": {"names": ["negative", "positive"],
                        "_type": "ClassLabel"},
              "tags": {"feature": {"names": ["red", "green", "blue"],
                                   "_type": "ClassLabel"},
                       "_type": "Sequence"}}
  path = _write_parquet(tmp_path / "hf.parquet", {
      "text": ["good", "bad", "fine", "awful", "ok"],
      "label": [1, 0, 1, 0, 1], "tags": [[0], [1, 2], [], [2], [0, 1]],
      "image": [b"x" * 10] * 5}, features)
  data = own_examples.read_text_file(path, FILES, COLUMNS, "auto")
  assert [e.label for e in data.examples] == [
      "positive", "negative", "positive", "negative", "positive"]
  assert data.examples[4].where == f"{path}, row group 2, row 0"
  tags = own_examples.read_text_file(
      path, RecordFileOptions(label_column="tags"), COLUMNS, "auto")
  assert tags.task_type == "multi_label"
  assert [e.label for e in tags.examples] == [
      ("red",), ("blue", "green"), (), ("blue",), ("green", "red")]
  with pytest.raises(UserInputError, match=r"hf.parquet: no column 'txt' "
                     r"\(--text_a_column\); the columns there: text, label, "
                     r"tags, image$"):
    own_examples.read_text_file(path, FILES,
                                TextColumns(text_a_column="txt"), "auto")


# --- bad input: one line naming its place ----------------------------------


def _bad_files(tmp_path):
  """name -> (path, task_type, message regex) of every bad input."""
  def write(name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)
  return {
      "missing column": (
          write("m.csv", "body,label\nhi,x\n"), "auto",
          r"m.csv:1: no column 'text' \(--text_a_column\); the columns "
          r"there: body, label$"),
      "missing label column": (
          write("ml.tsv", "text\thead\nhi\tx\n"), "auto",
          r"ml.tsv:1: no column 'label' \(--label_column\); the columns "
          r"there: text, head$"),
      "empty label": (
          write("e.csv", "text,label\nhi,x\nho,  \n"), "auto",
          r"e.csv:3: empty label \(--skip_bad_records skips such records\)$"),
      "empty JSON label": (
          write("e.jsonl", '{"text": "a", "label": "x"}\n'
                '{"text": "b", "label": null}\n'), "auto",
          r"e.jsonl:2: empty label"),
      "non-numeric regression label": (
          write("r.csv", "text,label\na,0.5\nb,high\n"), "regression",
          r"r.csv:3: label 'high' is not a number \(--task_type=regression\)"),
      "wrong field count": (
          write("w.csv", "text,label\na,x\nb,y,z\n"), "auto",
          r"w.csv:3: expected 2 comma-separated fields \(the header's\), "
          r"found 3"),
      "wrong TSV field count": (
          write("w.tsv", "text\tlabel\na\tx\nb\n"), "auto",
          r"w.tsv:3: expected 2 tab-separated fields \(the header's\), "
          r"found 1"),
      "no records": (write("n.csv", "text,label\n"), "auto",
                     r"n.csv has no records$"),
      "empty file": (write("z.jsonl", "\n"), "auto",
                     r"z.jsonl has no records$"),
      "not JSON": (write("j.jsonl", '{"text": "a", "label": "x"}\n{"text"\n'),
                   "auto", r"j.jsonl:2: not JSON"),
      "no text": (write("t.jsonl", '{"text": null, "label": "x"}\n'), "auto",
                  r"t.jsonl:1: no text in column 'text'"),
  }


def test_every_bad_input_is_one_line_naming_its_place(tmp_path):
  for name, (path, task_type, pattern) in _bad_files(tmp_path).items():
    with pytest.raises(UserInputError) as raised:
      own_examples.read_text_file(path, FILES, COLUMNS, task_type)
    message = str(raised.value)
    assert "\n" not in message, name
    assert message.startswith(path), (name, message)
    assert __import__("re").search(pattern, message), (name, message)


def test_skip_bad_records_skips_and_counts(tmp_path):
  path = tmp_path / "mixed.csv"
  path.write_text("text,label\na,x\nb,\nc,y,extra\nd,y\n\"e\",x\n",
                  encoding="utf-8")
  skipping = RecordFileOptions(skip_bad_records=True)
  data = own_examples.read_text_file(str(path), skipping, COLUMNS, "auto")
  assert [e.text_a for e in data.examples] == ["a", "d", "e"]
  assert data.skipped_bad == 2
  labels = own_examples.training_label_list(data)
  dev = tmp_path / "dev.csv"
  dev.write_text("text,label\na,x\nb,unseen\nc,y\n", encoding="utf-8")
  dev_data = own_examples.read_text_file(str(dev), FILES, COLUMNS,
                                         "classification")
  with pytest.raises(UserInputError,
                     match=r"dev.csv:3: label 'unseen' is not in the "
                     r"training labels \(x, y\)"):
    own_examples.check_known_labels(dev_data, labels, False)
  kept = own_examples.check_known_labels(dev_data, labels, True)
  assert [e.text_a for e in kept.examples] == ["a", "c"]
  assert kept.skipped_bad == 1
  # Records of a skipped label value (OCNLI's "-") are not errors.
  ocnli = _write_jsonl(tmp_path / "o.jsonl", [
      {"sentence1": "a", "sentence2": "b", "label": "-"},
      {"sentence1": "c", "sentence2": "d", "label": "neutral"}])
  data = own_examples.read_text_file(ocnli, FILES, COLUMNS, "auto",
                                     skip_labels=("-",))
  assert (len(data.examples), data.skipped_labels) == (1, 1)
  with pytest.raises(UserInputError, match=r"o.jsonl has no records left "
                     r"\(1 skipped\)"):
    own_examples.read_text_file(
        _write_jsonl(tmp_path / "o.jsonl", [{"text": "a", "label": "-"}]),
        FILES, COLUMNS, "auto", skip_labels=("-",))


# --- multiple choice --------------------------------------------------------


def test_multiple_choice_records_swag_csv_and_json_lines(tmp_path):
  swag = tmp_path / "swag.csv"
  swag.write_text(
      "video-id,sent1,sent2,ending0,ending1,ending2,ending3,label\n"
      'v1,"He sat down, then",he,reads.,"runs, fast.",sings.,eats.,1\n'
      "v2,She smiles.,She,waves.,cries.,jumps.,sleeps.,3\n",
      encoding="utf-8")
  data = choice_examples.read_choice_file(str(swag), FILES, ChoiceColumns())
  assert data.num_choices == 4
  assert data.columns == {"context": "sent1", "question": "sent2",
                          "choices": "ending#", "label": "label"}
  first = data.examples[0]
  assert (first.context, first.question, first.choices, first.label) == (
      "He sat down, then", "he", ("reads.", "runs, fast.", "sings.",
                                  "eats."), 1)
  rows = [{"id": 7, "question": "Pick _ one", "choices": ["a", "b", "c"],
           "label": 2},
          {"id": 8, "question": "Which?", "choices": ["x", "y", "z"],
           "label": "y"}]
  data = choice_examples.read_choice_file(
      _write_jsonl(tmp_path / "mc.jsonl", rows), FILES, ChoiceColumns())
  assert [(e.record_id, e.context, e.label) for e in data.examples] == [
      ("7", "", 2), ("8", "", 1)]


def test_multiple_choice_bad_records(tmp_path):
  rows = [{"question": "q", "choices": ["a", "b", "c"], "label": 0},
          {"question": "q", "choices": ["a", "b"], "label": 0},
          {"question": "q", "choices": ["a", "b", "c"], "label": 5}]
  path = _write_jsonl(tmp_path / "mc.jsonl", rows)
  with pytest.raises(UserInputError, match=r"mc.jsonl:2: 2 choices, but the "
                     r"first training record has 3 \(--skip_bad_records"):
    choice_examples.read_choice_file(path, FILES, ChoiceColumns())
  data = choice_examples.read_choice_file(
      path, RecordFileOptions(skip_bad_records=True), ChoiceColumns())
  assert (len(data.examples), data.skipped_bad) == (1, 2)
  with pytest.raises(UserInputError, match=r"mc.jsonl:1: 3 choices, but the "
                     r"first training record has 4"):
    choice_examples.read_choice_file(path, FILES, ChoiceColumns(), 4)
  with pytest.raises(UserInputError, match=r"mc.jsonl:1: no column 'opts' "
                     r"\(--choices_column"):
    choice_examples.read_choice_file(
        path, FILES, ChoiceColumns(choices_column="opts"))


# --- metrics against a computation by hand ------------------------------------


def _f1(tp, fp, fn):
  return 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0


def test_classification_metrics_equal_a_count_by_hand():
  rng = np.random.default_rng(0)
  labels = LabelList("classification", ("a", "b", "c"))
  targets = rng.integers(0, 3, 200)
  logits = rng.normal(size=(200, 3)) + 2.0 * np.eye(3)[targets] * (
      rng.random(200) < 0.6)[:, None]
  got = own_metrics.compute_metrics(labels, targets, logits)
  predicted = logits.argmax(-1)
  assert got["accuracy"] == pytest.approx(np.mean(predicted == targets))
  f1s = []
  for k, name in enumerate(labels.labels):
    tp = np.sum((predicted == k) & (targets == k))
    fp = np.sum((predicted == k) & (targets != k))
    fn = np.sum((predicted != k) & (targets == k))
    f1s.append(_f1(tp, fp, fn))
    assert got[f"precision/{name}"] == pytest.approx(tp / (tp + fp))
    assert got[f"recall/{name}"] == pytest.approx(tp / (tp + fn))
    assert got[f"f1/{name}"] == pytest.approx(f1s[-1])
    assert got[f"support/{name}"] == np.sum(targets == k)
  assert got["macro_f1"] == pytest.approx(np.mean(f1s))
  # Multi-class MCC (Gorodkin): from the confusion matrix.
  confusion = np.zeros((3, 3))
  np.add.at(confusion, (targets, predicted), 1)
  t, p, c, s = confusion.sum(1), confusion.sum(0), np.trace(confusion), 200
  mcc = (c * s - t @ p) / np.sqrt((s * s - p @ p) * (s * s - t @ t))
  assert got["mcc"] == pytest.approx(mcc)
  shifted = logits - logits.max(-1, keepdims=True)
  log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
  assert got["loss"] == pytest.approx(-log_probs[np.arange(200),
                                                 targets].mean())


def test_regression_and_multi_label_metrics_equal_a_count_by_hand():
  rng = np.random.default_rng(1)
  targets = rng.normal(size=100)
  scores = targets + rng.normal(scale=0.5, size=100)
  got = own_metrics.compute_metrics(LabelList("regression"), targets,
                                    scores[:, None])
  assert got["pearson"] == pytest.approx(np.corrcoef(scores, targets)[0, 1])
  ranks = lambda x: np.argsort(np.argsort(x))  # noqa: E731 (no ties)
  assert got["spearman"] == pytest.approx(
      np.corrcoef(ranks(scores), ranks(targets))[0, 1])
  assert got["mse"] == pytest.approx(np.mean((scores - targets) ** 2))

  labels = LabelList("multi_label", ("x", "y", "z"), threshold=0.3)
  truth = (rng.random((120, 3)) < 0.4).astype(int)
  logits = rng.normal(size=(120, 3)) + 1.5 * (2 * truth - 1)
  got = own_metrics.compute_metrics(labels, truth, logits)
  chosen = 1 / (1 + np.exp(-logits)) > 0.3
  tp = np.sum(chosen & (truth == 1), 0)
  fp = np.sum(chosen & (truth == 0), 0)
  fn = np.sum(~chosen & (truth == 1), 0)
  assert got["micro_f1"] == pytest.approx(_f1(tp.sum(), fp.sum(), fn.sum()))
  assert got["macro_f1"] == pytest.approx(np.mean(
      [_f1(*v) for v in zip(tp, fp, fn)]))
  assert got["subset_accuracy"] == pytest.approx(
      np.mean(np.all(chosen == truth.astype(bool), -1)))
  records = own_metrics.prediction_records(labels, logits[:2], ["i", None])
  assert records[0]["id"] == "i" and "id" not in records[1]
  assert records[0]["labels"] == [n for n, on in zip("xyz", chosen[0]) if on]
