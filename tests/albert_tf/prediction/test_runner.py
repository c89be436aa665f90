"""albert_tf.prediction.runner with a stand-in model: shards, resume,
bad rows, formats, ram://. (The exports themselves:
test_predict_exports.py.)"""

import json
import os

import pytest

from albert_common.errors import UserInputError
from albert_tf.prediction import runner
from albert_tf.prediction.exported_model import ExportDescription
from albert_tf.prediction.options import PredictOptions

DESCRIPTION = ExportDescription("classifier", pair=False,
                                labels=("long", "short"))


class LengthModel:
  """A stand-in export: label by the text's length; records its calls."""

  calls = []

  def __init__(self, *args):
    del args

  def predict(self, texts_a, texts_b=None):
    assert texts_b is None
    LengthModel.calls.append(list(texts_a))
    return [{"label": "long" if len(t) > 5 else "short",
             "probabilities": {"long": len(t) / 100, "short": 1 - len(t) / 100}}
            for t in texts_a]


def _options(tmp_path, **kwargs):
  values = dict(model="stand-in", input_file=str(tmp_path / "in*.jsonl"),
                output_dir=str(tmp_path / "out"), rows_per_shard=4,
                batch_size=3, id_column="id")
  values.update(kwargs)
  return PredictOptions(**values)


def _write_inputs(tmp_path, n=10, bad=()):
  for name, start in (("in1.jsonl", 0), ("in2.jsonl", 100)):
    lines = []
    for i in range(start, start + n):
      lines.append("{broken" if i in bad else
                   json.dumps({"id": i, "text": "x" * (i % 9)}))
    (tmp_path / name).write_text("\n".join(lines) + "\n")


def _run(options):
  LengthModel.calls = []
  return runner.predict_files(options, LengthModel, DESCRIPTION)


def _files(folder):
  return {name: open(os.path.join(folder, name), "rb").read()
          for name in sorted(os.listdir(folder))}


def test_shards_manifest_and_rows(tmp_path):
  _write_inputs(tmp_path)
  manifest = _run(_options(tmp_path))
  out = tmp_path / "out"
  names = sorted(os.listdir(out))
  assert names == ["manifest.json", "part-00000-00000.jsonl",
                   "part-00000-00001.jsonl", "part-00000-00002.jsonl",
                   "part-00001-00000.jsonl", "part-00001-00001.jsonl",
                   "part-00001-00002.jsonl", "predict_run.json"]
  rows = [json.loads(line) for name in names if name.startswith("part")
          for line in (out / name).read_text().splitlines()]
  assert [r["id"] for r in rows] == list(range(10)) + list(range(100, 110))
  for r in rows:
    length = r["id"] % 9
    assert r["label"] == ("long" if length > 5 else "short")
    assert r["probabilities"]["long"] == pytest.approx(length / 100)
  assert manifest["rows"] == 20 and manifest["bad_rows"] == 0
  assert [i["records"] for i in manifest["inputs"]] == [10, 10]
  assert json.loads((out / "manifest.json").read_text()) == manifest
  # Batches group rows of similar length: each sorted, 3 rows at most.
  for call in LengthModel.calls:
    assert len(call) <= 3 and call == sorted(call, key=len)


def test_a_rerun_recomputes_only_missing_shards(tmp_path):
  _write_inputs(tmp_path)
  options = _options(tmp_path)
  _run(options)
  complete = _files(tmp_path / "out")
  os.remove(tmp_path / "out" / "part-00001-00001.jsonl")
  os.remove(tmp_path / "out" / "manifest.json")
  # A killed run's temporary is removed.
  (tmp_path / "out" / ".part-00001-00001.jsonl.tmp-99").write_text("{")
  _run(options)
  assert sorted(sum(LengthModel.calls, [])) == sorted(
      "x" * (i % 9) for i in range(104, 108))
  assert _files(tmp_path / "out") == complete
  _run(options)  # all there: the model is not even loaded
  assert LengthModel.calls == []
  assert _files(tmp_path / "out") == complete


def test_another_runs_folder_is_refused(tmp_path):
  _write_inputs(tmp_path)
  _run(_options(tmp_path))
  with pytest.raises(UserInputError, match="--rows_per_shard changed"):
    _run(_options(tmp_path, rows_per_shard=5))


def test_a_bad_row_stops_the_run_before_anything_is_written(tmp_path):
  _write_inputs(tmp_path, bad=(107,))
  with pytest.raises(UserInputError,
                     match=r"in2.jsonl:8: not JSON .*--skip_bad_rows"):
    _run(_options(tmp_path))
  assert LengthModel.calls == []
  assert not os.path.exists(tmp_path / "out")


def test_skip_bad_rows_writes_rejects_and_counts_them(tmp_path):
  _write_inputs(tmp_path, bad=(2, 107))
  manifest = _run(_options(tmp_path, skip_bad_rows=True))
  out = tmp_path / "out"
  assert [(i["records"], i["rows"], i["bad_rows"], i["rejects"])
          for i in manifest["inputs"]] == [
              (10, 9, 1, ["rejects-00000-00000.jsonl"]),
              (10, 9, 1, ["rejects-00001-00001.jsonl"])]
  reject = json.loads((out / "rejects-00001-00001.jsonl").read_text())
  assert reject["row"] == 7 and reject["where"].endswith("in2.jsonl:8")
  assert "not JSON" in reject["problem"]
  ids = [json.loads(line)["id"] for line in
         (out / "part-00001-00001.jsonl").read_text().splitlines()]
  assert ids == [104, 105, 106]


@pytest.mark.parametrize("output_format", ["csv", "parquet"])
def test_output_formats_hold_the_same_rows(tmp_path, output_format):
  _write_inputs(tmp_path, n=5)
  _run(_options(tmp_path, output_dir=str(tmp_path / "jsonl")))
  _run(_options(tmp_path, output_format=output_format))
  expected = [json.loads(line) for name in sorted(os.listdir(
      tmp_path / "jsonl")) if name.startswith("part")
      for line in (tmp_path / "jsonl" / name).read_text().splitlines()]
  names = sorted(n for n in os.listdir(tmp_path / "out")
                 if n.startswith("part"))
  assert all(n.endswith("." + output_format) for n in names)
  rows = []
  for name in names:
    path = str(tmp_path / "out" / name)
    if output_format == "parquet":
      import pyarrow.parquet as pq
      rows.extend(pq.read_table(path).to_pylist())
    else:
      import csv
      with open(path, newline="") as f:
        for r in csv.DictReader(f):
          rows.append(dict(id=int(r["id"]), label=r["label"],
                           probabilities=json.loads(r["probabilities"])))
  assert rows == expected


def test_ram_filesystem_input_and_output(tmp_path):
  import tensorflow as tf
  tf.io.gfile.makedirs("ram://predict_in")
  for i in range(2):
    with tf.io.gfile.GFile(f"ram://predict_in/in{i}.jsonl", "w") as f:
      f.write("".join(json.dumps({"id": f"{i}-{j}", "text": "y" * j}) + "\n"
                      for j in range(6)))
  options = _options(tmp_path, input_file="ram://predict_in/in*.jsonl",
                     output_dir="ram://predict_out/run")
  manifest = _run(options)
  assert manifest["rows"] == 12
  names = sorted(tf.io.gfile.listdir("ram://predict_out/run"))
  assert names == ["manifest.json", "part-00000-00000.jsonl",
                   "part-00000-00001.jsonl", "part-00001-00000.jsonl",
                   "part-00001-00001.jsonl", "predict_run.json"]
  with tf.io.gfile.GFile("ram://predict_out/run/part-00001-00001.jsonl") as f:
    assert [json.loads(line)["id"] for line in f] == ["1-4", "1-5"]


def test_without_counting_a_bad_row_keeps_the_whole_shards_before_it(
    tmp_path):
  _write_inputs(tmp_path, bad=(107,))
  with pytest.raises(UserInputError, match=r"in2.jsonl:8: not JSON"):
    _run(_options(tmp_path, count_rows=False))
  assert sorted(os.listdir(tmp_path / "out")) == [
      "part-00000-00000.jsonl", "part-00000-00001.jsonl",
      "part-00000-00002.jsonl", "part-00001-00000.jsonl",
      "predict_run.json"]


def test_progress_shows_rows_per_second_and_the_eta(monkeypatch, caplog):
  """Rows/s counts predicted rows from the model's load; the ETA is the
  rows left at that rate; without a total, no percentage and no ETA."""
  import logging
  now = [100.0]
  monkeypatch.setattr(runner.time, "monotonic", lambda: now[0])
  progress = runner.Progress(total=10_000, every=10.0)
  now[0] = 105.0
  progress.restart_clock()
  progress.add(1_000, predicted=False)  # a resumed run's finished shards
  now[0] = 125.0
  with caplog.at_level(logging.INFO, logger="absl"):
    progress.add(2_000, predicted=True)  # 2,000 rows in 20 s: 100 rows/s
  assert caplog.messages[-1] == ("predict: 3,000 rows of 10,000 (30.0%), "
                                 "100.0 rows/s, ETA 1m10s")
  unknown = runner.Progress(total=None, every=0.0)
  unknown.restart_clock()
  now[0] = 129.0
  with caplog.at_level(logging.INFO, logger="absl"):
    unknown.add(400, predicted=True)
  assert caplog.messages[-1] == "predict: 400 rows, 100.0 rows/s"
