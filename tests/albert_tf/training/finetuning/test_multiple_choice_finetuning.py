"""tools.run_multiple_choice: crafted tasks with 3 choices (JSON lines) and 5
(SWAG's CSV layout) learn far above chance; the predictions file agrees
with the raw-text export and with the LiteRT file scored on the dev file;
a record with another number of choices is one line and writes nothing."""

import json
import os
import re

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import exports
from albert_tf.training.finetuning.own_data_settings import (
  MultipleChoiceOptions,
)
from albert_tf.training.finetuning.tasks import multiple_choice
from tests.albert_tf.training.finetuning import own_data_kit as kit


def _read_jsonl(path):
  with open(path, encoding="utf-8") as f:
    return [json.loads(line) for line in f]


def _swag(rows):
  """SWAG's CSV columns of choice rows."""
  out = []
  for row in rows:
    values = {"video-id": row["id"], "fold-ind": 0, "startphrase": "",
              "sent1": row["context"], "sent2": "it", "gold-source": "gen",
              "label": row["label"]}
    values.update({f"ending{j}": c for j, c in enumerate(row["choices"])})
    out.append(values)
  return out


@pytest.fixture(scope="module")
def data(tmp_path_factory, english_corpus, spm_model):
  root = tmp_path_factory.mktemp("choices")
  lines = kit.corpus_lines(english_corpus, 3000, seed=1)
  files = {"root": root, "spm": spm_model,
           "config": kit.tiny_config(root / "albert_config.json")}
  for count, splits in ((3, (("train", 0, 1800), ("dev", 1800, 2250),
                             ("test", 2250, 2400))),
                        (5, (("train", 0, 2500), ("dev", 2500, 3000)))):
    for split, start, end in splits:
      rows = kit.choice_rows(lines[start:end], count, seed=start + count)
      files[f"{count}_{split}_rows"] = rows
      if count == 3:
        files[f"3_{split}"] = kit.write_jsonl(root / f"mc3_{split}.jsonl",
                                              rows)
      else:
        columns = ["video-id", "fold-ind", "startphrase", "sent1", "sent2",
                   "gold-source"] + [f"ending{j}" for j in range(5)] + [
                       "label"]
        files[f"5_{split}"] = kit.write_csv(root / f"swag5_{split}.csv",
                                            _swag(rows), columns)
  return files


@pytest.fixture(scope="module")
def three_choices(data):
  out = data["root"] / "run3"
  result = multiple_choice.run_multiple_choice(
      kit.run_settings(out, data["config"], data["spm"], do_predict=True,
                       train_batch_size=16, train_step=200,
                       save_checkpoints_steps=100),
      MultipleChoiceOptions.from_flat(
          train_file=data["3_train"], dev_file=data["3_dev"],
          test_file=data["3_test"], max_qa_length=16,
          export_dir=str(data["root"] / "export3")))
  return dict(result, output_dir=str(out))


@pytest.mark.slow
def test_three_choices_learn_and_accuracy_matches_a_count(data,
                                                         three_choices):
  assert three_choices["num_choices"] == 3
  results = three_choices["eval"]
  assert results["accuracy"] > 0.8  # chance: 1/3
  records = _read_jsonl(os.path.join(three_choices["output_dir"],
                                     "dev_predictions.jsonl"))
  truth = [r["label"] for r in data["3_dev_rows"]]
  assert results["accuracy"] == pytest.approx(np.mean(
      [r["answer_index"] == t for r, t in zip(records, truth)]))
  assert [r["id"] for r in records] == [r["id"] for r in data["3_dev_rows"]]
  assert all(r["choice"] == row["choices"][r["answer_index"]]
             for r, row in zip(records, data["3_dev_rows"]))


@pytest.mark.slow
def test_predictions_file_and_export_agree(data, three_choices):
  records = _read_jsonl(three_choices["predictions"])
  rows = data["3_test_rows"]
  serving = exports.load_saved_model(three_choices["export_dir"]).signatures[
      "serving_default"]
  got = serving(context=tf.constant([r["context"] for r in rows]),
                question=tf.constant([r["question"] for r in rows]),
                choices=tf.constant([r["choices"] for r in rows]))
  assert got["answer_index"].numpy().tolist() == [
      r["answer_index"] for r in records]
  assert [c.decode() for c in got["choice"].numpy()] == [
      r["choice"] for r in records]
  np.testing.assert_allclose(got["probabilities"].numpy(),
                             [r["probabilities"] for r in records],
                             atol=1e-5)


@pytest.mark.slow
def test_litert_file_scores_the_dev_file(data, three_choices, tmp_path):
  from albert_tf.exports.litert import report as tflite_report
  from albert_tf.exports.litert.runner import TextRunner
  out = str(tmp_path / "mc3.tflite")
  result = tflite_report.export_and_report(
      three_choices["export_dir"], out, seq_length=kit.SEQ, batch_size=1,
      eval_data=data["3_dev"])
  assert result["description"]["kind"] == "race"
  assert result["description"]["input_shape"] == [1, 3, kit.SEQ]
  assert result["max_difference"] <= 1e-4
  runner = TextRunner.from_file(out)
  rows = data["3_dev_rows"]
  chosen = runner.choose_index([r["context"] for r in rows],
                               [r["question"] for r in rows],
                               [r["choices"] for r in rows])
  accuracy = np.mean(np.array(chosen) == [r["label"] for r in rows])
  assert result["metrics"]["none"]["accuracy"] == pytest.approx(accuracy)
  assert accuracy > 0.8


@pytest.mark.slow
def test_five_choices_in_swag_layout_learn_through_the_command_line(
    data, tmp_path, capsys, caplog):
  import logging
  caplog.set_level(logging.INFO, logger="absl")
  out = tmp_path / "run5"
  status = kit.run_tool(
      "run_multiple_choice", f"--train_file={data['5_train']}",
      f"--dev_file={data['5_dev']}", f"--albert_config_file={data['config']}",
      f"--spm_model_file={data['spm']}", f"--output_dir={out}", "--do_train",
      "--do_eval", "--max_seq_length=32", "--train_batch_size=8",
      "--learning_rate=1e-3", "--train_step=250", "--warmup_step=25",
      "--save_checkpoints_steps=125", "--iterations_per_loop=25", "--seed=0")
  assert status == 0, capsys.readouterr().err[-3000:]
  assert "accuracy=" in capsys.readouterr().out
  assert re.search(r"500 questions, 5 choices; defaults: recipe of RACE",
                   caplog.text), caplog.text[-2000:]
  with open(out / "eval_results.json") as f:
    results = json.load(f)
  assert results["accuracy"] > 0.7  # chance: 1/5
  assert results["num_examples"] == 100


def test_wrong_number_of_choices_is_one_line_and_writes_nothing(
    data, tmp_path, capsys):
  bad = tmp_path / "dev.jsonl"
  rows = data["3_dev_rows"][:3]
  rows[2] = dict(rows[2], choices=rows[2]["choices"] + ["one more"])
  kit.write_jsonl(bad, rows)
  out = tmp_path / "run"
  status = kit.run_tool(
      "run_multiple_choice", f"--train_file={data['3_train']}",
      f"--dev_file={bad}", f"--albert_config_file={data['config']}",
      f"--spm_model_file={data['spm']}", f"--output_dir={out}", "--do_train",
      "--do_eval", "--max_seq_length=32")
  errors = [line for line in capsys.readouterr().err.splitlines()
            if line.startswith("error:")]
  assert status == 1 and errors == [
      f"error: {bad}:3: 4 choices, but the first training record has 3 "
      "(--skip_bad_records skips such records)"]
  assert not out.exists()
