"""GLUE readers on exact-format GLUE files, features, metrics, submissions."""

import os

import numpy as np
import pytest
import scipy.stats
import sklearn.metrics

from albert_common.errors import UserInputError
from data_pipeline.tasks.glue import examples as glue_examples
from data_pipeline.tasks.glue import features as glue_features
from data_pipeline.tasks.glue import metrics as glue_metrics

# The header lines of the distributed GLUE files (download_glue_data.py).
MNLI_TRAIN_HEADER = ("index promptID pairID genre sentence1_binary_parse "
                     "sentence2_binary_parse sentence1_parse sentence2_parse "
                     "sentence1 sentence2 label1 gold_label").split()
MNLI_DEV_HEADER = MNLI_TRAIN_HEADER[:-1] + ["label2", "label3", "label4",
                                            "label5", "gold_label"]
MNLI_TEST_HEADER = MNLI_TRAIN_HEADER[:-2]
STSB_HEADER = ("index genre filename year old_index source1 source2 "
               "sentence1 sentence2 score").split()


def _write(path, rows):
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w", encoding="utf-8") as f:
    for row in rows:
      f.write("\t".join(row) + "\n")


def _mnli_row(i, a, b, labels=None):
  row = [str(i), "31193", f"{i}n", "government", "( x )", "( y )", "(ROOT x)",
         "(ROOT y)", a, b]
  return row + (labels or [])


@pytest.fixture
def glue_dir(tmp_path):
  """Small files of all 9 tasks in their GLUE layouts."""
  d = tmp_path
  _write(f"{d}/CoLA/train.tsv", [["gj04", "1", "", "Our friends won't buy."],
                                 ["gj04", "0", "*", "They drank the pub."]])
  _write(f"{d}/CoLA/dev.tsv", [["bc01", "1", "", "The sailors rode."]])
  _write(f"{d}/CoLA/test.tsv", [["index", "sentence"], ["0", "Bill whistled."],
                                ["1", "Bill pushed Harry."]])
  _write(f"{d}/SST-2/train.tsv", [["sentence", "label"],
                                  ['hide new "secretions" ', "0"],
                                  ["the greatest musicians ", "1"]])
  _write(f"{d}/SST-2/dev.tsv", [["sentence", "label"],
                                ["it 's a charming", "1"]])
  _write(f"{d}/SST-2/test.tsv", [["index", "sentence"],
                                 ["0", "uneasy mishmash"]])
  mrpc = ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]
  _write(f"{d}/MRPC/train.tsv", [mrpc, ["1", "702876", "702977", "Amrozi said",
                                        "Referring to him"]])
  _write(f"{d}/MRPC/dev.tsv", [mrpc, ["0", "1", "2", "He said", "She said"]])
  _write(f"{d}/MRPC/test.tsv", [["index"] + mrpc[1:],
                                ["0", "1089874", "1089925", "PCCW 's",
                                 "Yucaipa"]])
  _write(f"{d}/STS-B/train.tsv", [STSB_HEADER, ["0", "main-captions", "MSRvid",
                                                "2012test", "0001", "none",
                                                "none", "A plane takes off.",
                                                "An air plane takes off.",
                                                "5.000"]])
  _write(f"{d}/STS-B/dev.tsv", [STSB_HEADER, ["0", "main-captions", "MSRvid",
                                              "2012test", "0000", "none",
                                              "none", "A man with a hat.",
                                              "A man wearing a hat.", "3.8"]])
  _write(f"{d}/STS-B/test.tsv", [STSB_HEADER[:-1],
                                 ["0", "main-captions", "MSRvid", "2012test",
                                  "0024", "none", "none", "A girl styles.",
                                  "A girl brushes."]])
  qqp = ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"]
  _write(f"{d}/QQP/train.tsv", [qqp, ["133273", "213221", "213222",
                                      "How is the life?", "How is life?", "0"]])
  _write(f"{d}/QQP/dev.tsv", [qqp, ["1", "2", "3", "Why?", "Why not?", "1"]])
  _write(f"{d}/QQP/test.tsv", [["id", "question1", "question2"],
                               ["0", "Why do rockets look white?",
                                "Why are rockets white?"]])
  _write(f"{d}/MNLI/train.tsv", [MNLI_TRAIN_HEADER,
                                 _mnli_row(0, "Conceptually cream.",
                                           "Product and geography.",
                                           ["neutral", "neutral"])])
  dev_labels = ["neutral"] * 5 + ["entailment"]
  _write(f"{d}/MNLI/dev_matched.tsv", [MNLI_DEV_HEADER,
                                       _mnli_row(0, "The new rights.",
                                                 "Everyone likes.",
                                                 dev_labels)])
  _write(f"{d}/MNLI/dev_mismatched.tsv", [MNLI_DEV_HEADER,
                                          _mnli_row(0, "Your contribution.",
                                                    "Helped.", dev_labels[:5]
                                                    + ["contradiction"]),
                                          _mnli_row(1, "a", "b", dev_labels)])
  _write(f"{d}/MNLI/test_matched.tsv", [MNLI_TEST_HEADER,
                                        _mnli_row(0, "Hierbas.", "Hierbas!")])
  _write(f"{d}/MNLI/test_mismatched.tsv", [MNLI_TEST_HEADER,
                                           _mnli_row(0, "What.", "Who.")])
  _write(f"{d}/diagnostic/diagnostic.tsv", [["index", "sentence1", "sentence2"],
                                            ["0", "The cat sat.", "A cat."]])
  for name, labels in (("QNLI", ("entailment", "not_entailment")),
                       ("RTE", ("entailment", "not_entailment")),
                       ("WNLI", ("0", "1"))):
    cols = (["index", "question", "sentence", "label"] if name == "QNLI"
            else ["index", "sentence1", "sentence2", "label"])
    _write(f"{d}/{name}/train.tsv", [cols, ["0", "What?", "This.", labels[0]],
                                     ["1", "Who?", "Him.", labels[1]]])
    _write(f"{d}/{name}/dev.tsv", [cols, ["0", "When?", "Now.", labels[1]]])
    _write(f"{d}/{name}/test.tsv", [cols[:3], ["0", "Where?", "Here."]])
  return str(d)


def test_every_task_reads_train_dev_test(glue_dir):
  expected_train = {
      "CoLA": ("Our friends won't buy.", None, "1"),
      "SST-2": ('hide new "secretions" ', None, "0"),
      "MRPC": ("Amrozi said", "Referring to him", "1"),
      "STS-B": ("A plane takes off.", "An air plane takes off.", 5.0),
      "QQP": ("How is the life?", "How is life?", "0"),
      "MNLI": ("Conceptually cream.", "Product and geography.", "neutral"),
      "QNLI": ("What?", "This.", "entailment"),
      "RTE": ("What?", "This.", "entailment"),
      "WNLI": ("What?", "This.", "0"),
  }
  for name, (a, b, label) in expected_train.items():
    task = glue_examples.get_task(name)
    data_dir = os.path.join(glue_dir, name)
    first = glue_examples.read_examples(task, data_dir, "train")[0]
    assert (first.text_a, first.text_b, first.label) == (a, b, label), name
    for split in task.dev_splits:
      assert all(e.label is not None
                 for e in glue_examples.read_examples(task, data_dir, split))
    for split in glue_examples.available_test_splits(task, data_dir):
      test = glue_examples.read_examples(task, data_dir, split)
      assert all(e.label is None for e in test), (name, split)
      assert test[0].guid == "0"


def test_headerless_cola_keeps_first_row(glue_dir):
  task = glue_examples.get_task("cola")
  train = glue_examples.read_examples(task, os.path.join(glue_dir, "CoLA"),
                                      "train")
  assert [e.label for e in train] == ["1", "0"]
  assert train[1].text_a == "They drank the pub."
  test = glue_examples.read_examples(task, os.path.join(glue_dir, "CoLA"),
                                     "test")
  assert [(e.guid, e.text_a) for e in test] == [("0", "Bill whistled."),
                                                ("1", "Bill pushed Harry.")]


def test_mnli_two_dev_sets_and_diagnostic(glue_dir):
  task = glue_examples.get_task("MNLI")
  data_dir = os.path.join(glue_dir, "MNLI")
  mismatched = glue_examples.read_examples(task, data_dir, "dev_mismatched")
  assert [e.label for e in mismatched] == ["contradiction", "entailment"]
  assert glue_examples.available_test_splits(task, data_dir) == [
      "test_matched", "test_mismatched", "diagnostic"]
  assert glue_examples.read_examples(
      task, data_dir, "diagnostic")[0].text_b == "A cat."
  assert glue_examples.available_test_splits(task, glue_dir) == [
      "test_matched", "test_mismatched"]


def test_bad_rows_name_file_and_line(glue_dir):
  task = glue_examples.get_task("RTE")
  path = os.path.join(glue_dir, "RTE", "train.tsv")
  with open(path, "a", encoding="utf-8") as f:
    f.write("2\tonly two\n")
  with pytest.raises(UserInputError, match=f"{path}:4: expected 4 .*found 2"):
    glue_examples.read_examples(task, os.path.join(glue_dir, "RTE"), "train")
  assert len(glue_examples.read_examples(
      task, os.path.join(glue_dir, "RTE"), "train", skip_malformed=True)) == 2

  cola = os.path.join(glue_dir, "CoLA", "dev.tsv")
  with open(cola, "a", encoding="utf-8") as f:
    f.write("bc01\t2\t\tA sentence.\n")
  with pytest.raises(UserInputError, match=f"{cola}:2: label '2'"):
    glue_examples.read_examples(glue_examples.get_task("CoLA"),
                       os.path.join(glue_dir, "CoLA"), "dev")
  with pytest.raises(UserInputError, match="no column 'sentence1'"):
    glue_examples.read_examples(glue_examples.get_task("RTE"),
                                os.path.join(glue_dir, "QNLI"), "train")
  with pytest.raises(UserInputError, match="does not exist"):
    glue_examples.read_examples(task, glue_dir, "train")
  stsb = os.path.join(glue_dir, "STS-B", "dev.tsv")
  with open(stsb, "a", encoding="utf-8") as f:
    f.write("\t".join(["1"] * 9 + ["n/a"]) + "\n")
  with pytest.raises(UserInputError, match=f"{stsb}:3: score 'n/a'"):
    glue_examples.read_examples(glue_examples.get_task("sts-b"),
                       os.path.join(glue_dir, "STS-B"), "dev")


def test_task_names():
  assert glue_examples.get_task("sst2").name == "SST-2"
  assert glue_examples.get_task("STS-B").is_regression
  with pytest.raises(UserInputError, match="not a GLUE task.*CoLA"):
    glue_examples.get_task("squad")


class _FakeTokenizer:
  cls_id, sep_id, pad_id = 2, 3, 0

  def encode_batch(self, texts):
    return [[10 + len(w) for w in t.split()] for t in texts]


def test_featurize_packs_and_truncates_like_official():
  task = glue_examples.get_task("RTE")
  examples = [glue_examples.Example("0", "a bb ccc dddd eeeee ffffff", "x yy",
                           "not_entailment"),
              glue_examples.Example("1", "a bb", "x yy zzz", "entailment")]
  features = glue_features.featurize(task, examples, _FakeTokenizer(), 9)
  padded = features.padded(9)
  # 6 slots: a trimmed from 6 to 4 (longer first), b keeps 2.
  np.testing.assert_array_equal(padded["input_word_ids"][0],
                                [2, 11, 12, 13, 14, 3, 11, 12, 3])
  np.testing.assert_array_equal(padded["input_type_ids"][0],
                                [0, 0, 0, 0, 0, 0, 1, 1, 1])
  np.testing.assert_array_equal(padded["input_word_ids"][1],
                                [2, 11, 12, 3, 11, 12, 13, 3, 0])
  np.testing.assert_array_equal(padded["input_mask"][1],
                                [1, 1, 1, 1, 1, 1, 1, 1, 0])
  np.testing.assert_array_equal(padded["input_type_ids"][1],
                                [0, 0, 0, 0, 1, 1, 1, 1, 0])
  np.testing.assert_array_equal(features.labels, [1, 0])
  a, b = [1, 2, 3, 4], [5, 6, 7, 8]
  glue_features.truncate_seq_pair(a, b, 5)  # ties drop from b
  assert (a, b) == ([1, 2, 3], [5, 6])

  dataset = glue_features.make_dataset(features, 9, batch_size=2,
                                       with_labels=True)
  inputs, labels = next(iter(dataset))
  for key, value in padded.items():
    np.testing.assert_array_equal(inputs[key].numpy(), value)
  np.testing.assert_array_equal(labels.numpy(), [1, 0])
  train = glue_features.make_dataset(features, 9, batch_size=3,
                                     is_training=True, seed=1)
  inputs, labels = next(iter(train))
  assert inputs["input_word_ids"].shape == (3, 9)


def test_single_segment_truncation():
  task = glue_examples.get_task("SST-2")
  features = glue_features.featurize(
      task, [glue_examples.Example("0", "a b c d e f", None, "1")],
      _FakeTokenizer(), 5)
  np.testing.assert_array_equal(features.padded(5)["input_word_ids"][0],
                                [2, 11, 11, 11, 3])


def test_metrics_against_sklearn_and_scipy():
  rng = np.random.default_rng(0)
  labels = rng.integers(0, 2, 200)
  predictions = np.where(rng.random(200) < 0.7, labels, 1 - labels)
  assert glue_metrics.matthews_corr(labels, predictions) == pytest.approx(
      sklearn.metrics.matthews_corrcoef(labels, predictions), abs=1e-12)
  assert glue_metrics.f1_score(labels, predictions) == pytest.approx(
      sklearn.metrics.f1_score(labels, predictions), abs=1e-12)
  assert glue_metrics.accuracy(labels, predictions) == pytest.approx(
      sklearn.metrics.accuracy_score(labels, predictions))
  x = rng.normal(size=100)
  y = x + rng.normal(size=100)
  y_ties = np.round(y)  # ties, as STS-B scores have
  assert glue_metrics.pearson(x, y) == pytest.approx(
      scipy.stats.pearsonr(x, y)[0], abs=1e-12)
  assert glue_metrics.spearman(x, y_ties) == pytest.approx(
      scipy.stats.spearmanr(x, y_ties)[0], abs=1e-12)


def test_metrics_hand_computed():
  # tp=2 tn=1 fp=1 fn=1: MCC = (2 - 1) / sqrt(3 * 3 * 2 * 2) = 1/6.
  labels, predictions = [1, 1, 1, 0, 0], [1, 1, 0, 1, 0]
  assert glue_metrics.matthews_corr(labels, predictions) == pytest.approx(1 / 6)
  assert glue_metrics.f1_score(labels, predictions) == pytest.approx(4 / 6)
  assert glue_metrics.accuracy(labels, predictions) == pytest.approx(0.6)
  assert glue_metrics.matthews_corr([1, 1], [1, 1]) == 0.0  # undefined -> 0
  assert glue_metrics.pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
  assert glue_metrics.spearman([1, 2, 3], [1, 8, 27]) == pytest.approx(1.0)

  cola = glue_examples.get_task("CoLA")
  logits = np.log(np.array([[0.2, 0.8], [0.9, 0.1], [0.6, 0.4]]))
  results = glue_metrics.compute_metrics(cola, np.array([1, 0, 1]), logits)
  assert results["accuracy"] == pytest.approx(2 / 3)
  assert results["loss"] == pytest.approx(
      -(np.log(0.8) + np.log(0.9) + np.log(0.4)) / 3)
  assert results["matthews_corr"] == pytest.approx(0.5)
  mrpc = glue_metrics.compute_metrics(glue_examples.get_task("MRPC"),
                                      np.array([1, 0, 1]), logits)
  assert mrpc["f1"] == pytest.approx(2 / 3)
  stsb = glue_metrics.compute_metrics(glue_examples.get_task("STS-B"),
                                      np.array([1., 2., 4.]),
                                      np.array([[1.5], [2.0], [3.0]]))
  assert stsb["loss"] == pytest.approx((0.25 + 0 + 1) / 3)
  assert stsb["spearman"] == pytest.approx(1.0)


def test_submission_format(tmp_path):
  mnli = glue_examples.get_task("MNLI")
  path = glue_metrics.write_submission(mnli, "test_mismatched", ["0", "1"],
                               np.array([[0., 1., 0.], [0., 0., 3.]]),
                               str(tmp_path))
  assert os.path.basename(path) == "MNLI-mm.tsv"
  with open(path, encoding="utf-8") as f:
    assert f.read() == "index\tprediction\n0\tentailment\n1\tneutral\n"
  path = glue_metrics.write_submission(glue_examples.get_task("STS-B"), "test",
                                       ["7"], np.array([[4.25]]),
                                       str(tmp_path))
  with open(path, encoding="utf-8") as f:
    assert f.read() == "index\tprediction\n7\t4.250\n"
  names = {t.name: t.submission_file(t.test_splits[0])
           for t in glue_examples.TASKS.values()}
  assert names == {"CoLA": "CoLA.tsv", "SST-2": "SST-2.tsv",
                   "MRPC": "MRPC.tsv", "STS-B": "STS-B.tsv", "QQP": "QQP.tsv",
                   "MNLI": "MNLI-m.tsv", "QNLI": "QNLI.tsv", "RTE": "RTE.tsv",
                   "WNLI": "WNLI.tsv"}
