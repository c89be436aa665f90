"""labels.json: the label names written with a run and read back."""

import json

import pytest

from albert_common.errors import UserInputError
from data_pipeline.tasks import label_list
from data_pipeline.tasks.label_list import LabelList


def test_training_names_are_sorted_and_round_trip(tmp_path):
  labels = LabelList.from_training("classification",
                                   ["shipping", "billing", "Billing",
                                    "shipping", "10", "9"])
  assert labels.labels == ("10", "9", "Billing", "billing", "shipping")
  assert labels.num_labels == 5
  path = label_list.write(str(tmp_path), labels)
  assert json.loads(open(path).read()) == {
      "task_type": "classification",
      "labels": ["10", "9", "Billing", "billing", "shipping"]}
  assert label_list.read(str(tmp_path)) == labels
  assert label_list.read(str(tmp_path / "none")) is None


def test_regression_and_tags(tmp_path):
  assert LabelList("regression").num_labels == 1
  tags = LabelList.from_training("token_classification",
                                 ["O", "B-PER", "I-PER"], scheme="IOB2")
  label_list.write("ram://label_list_test", tags)
  assert label_list.read("ram://label_list_test") == tags
  assert tags.to_dict()["scheme"] == "IOB2"


def test_bad_files_and_changed_labels(tmp_path):
  (tmp_path / "labels.json").write_text('{"task_type": "ner", "labels": []}')
  with pytest.raises(UserInputError, match="labels.json is not a label list"):
    label_list.read(str(tmp_path))
  (tmp_path / "labels.json").write_text(
      '{"task_type": "classification", "labels": ["a", "a"]}')
  with pytest.raises(UserInputError, match="repeated labels"):
    label_list.read(str(tmp_path))
  saved = LabelList("classification", ("a", "b"))
  with pytest.raises(UserInputError, match=r"train.csv gives labels \['a', "
                     r"'c'\] \(classification\), but out/labels.json"):
    label_list.check_same(saved, LabelList("classification", ("a", "c")),
                          "out/labels.json", "train.csv")
  label_list.check_same(saved, LabelList("classification", ("a", "b")),
                        "out/labels.json", "train.csv")
