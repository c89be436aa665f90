"""tools.predict on Beam's DirectRunner (2 worker threads) with a stand-in
model: the in-process run's files byte for byte, batches grouped by the
export's length buckets, a rerun that recomputes only missing shards, bad
rows. (The exports themselves: test_beam_exports.py.)"""

import json
import os
import subprocess
import sys
import threading

import pytest

from albert_common.errors import UserInputError
from albert_tf.prediction import beam_handler
from albert_tf.prediction import beam_pipeline
from albert_tf.prediction import runner
from albert_tf.prediction.exported_model import ExportDescription
from albert_tf.prediction.inputs import InputRow
from albert_tf.prediction.options import PredictOptions

DESCRIPTION = ExportDescription("classifier", pair=False,
                                labels=("long", "short"))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
TWO_THREADS = ["--direct_num_workers=2",
               "--direct_running_mode=multi_threading"]


class LengthModel:
  """A stand-in export: label by the text's length; records its calls
  (the worker threads share the process)."""

  calls = []
  loads = 0
  threads = set()

  def __init__(self, *args):
    del args
    LengthModel.loads += 1

  def predict(self, texts_a, texts_b=None):
    assert texts_b is None
    LengthModel.calls.append(list(texts_a))
    LengthModel.threads.add(threading.get_ident())
    return [{"label": "long" if len(t) > 20 else "short",
             "probabilities": {"long": len(t) / 100,
                               "short": 1 - len(t) / 100}}
            for t in texts_a]


def _write_inputs(tmp_path, n=30, bad=()):
  for name, start in (("in1.jsonl", 0), ("in2.jsonl", 100)):
    lines = ["{broken" if i in bad else
             json.dumps({"id": i, "text": "word " * (i % 23)})
             for i in range(start, start + n)]
    (tmp_path / name).write_text("\n".join(lines) + "\n")


def _options(tmp_path, out, **kwargs):
  values = dict(model="stand-in", input_file=str(tmp_path / "in*.jsonl"),
                output_dir=str(tmp_path / out), rows_per_shard=7,
                batch_size=4, id_column="id")
  values.update(kwargs)
  return PredictOptions(**values)


def _beam(options, buckets=(8, 16, 32), length_aware=None):
  LengthModel.calls, LengthModel.loads, LengthModel.threads = [], 0, set()
  return beam_pipeline.predict_files_beam(
      options, TWO_THREADS, LengthModel, DESCRIPTION, buckets, length_aware)


def _files(folder):
  return {name: open(os.path.join(folder, name), "rb").read()
          for name in sorted(os.listdir(folder))}


@pytest.mark.parametrize("output_format", ["jsonl", "parquet", "csv"])
def test_beam_writes_the_in_process_files(tmp_path, output_format):
  _write_inputs(tmp_path, bad=(3, 11, 104))
  settings = dict(output_format=output_format, skip_bad_rows=True)
  local = runner.predict_files(_options(tmp_path, "local", **settings),
                               LengthModel, DESCRIPTION)
  manifest = _beam(_options(tmp_path, "beam", runner="DirectRunner",
                            **settings))
  assert manifest == local and manifest["bad_rows"] == 3
  assert manifest["rows"] == 57
  files = _files(tmp_path / "beam")
  assert files == _files(tmp_path / "local")
  assert sorted(n for n in files if n.startswith("rejects-")) == [
      "rejects-00000-00000.jsonl", "rejects-00000-00001.jsonl",
      "rejects-00001-00000.jsonl"]


def test_length_aware_batches_hold_rows_of_one_bucket(tmp_path):
  # Beam's stateful batching (Dataflow's and Flink's here); on the
  # DirectRunner it runs in its one-thread BundleBasedDirectRunner.
  _write_inputs(tmp_path, n=60)
  _beam(_options(tmp_path, "beam", runner="DirectRunner"),
        length_aware=True)
  bounds = beam_handler.beam_boundaries((8, 16, 32))
  assert bounds == [9, 17]

  def bucket(text):
    tokens = beam_handler.estimated_tokens(InputRow(0, "", text))
    return sum(tokens >= b for b in bounds)

  calls = LengthModel.calls
  assert sum(len(c) for c in calls) == 120
  assert all(len(c) <= 4 for c in calls)
  assert all(len({bucket(t) for t in c}) == 1 for c in calls)
  # Full batches, not one row a call (the last of each bucket and
  # worker may be short).
  assert sum(len(c) == 4 for c in calls) >= 20


def test_the_worker_threads_share_one_loaded_model(tmp_path):
  _write_inputs(tmp_path, n=200)
  _beam(_options(tmp_path, "beam", runner="DirectRunner",
                 rows_per_shard=10))
  assert len(LengthModel.calls) == 100 and LengthModel.loads == 1
  assert len(LengthModel.threads) == 2


def test_without_buckets_batches_are_plain(tmp_path):
  # Beam's batches hold 32 model calls' rows (run_inference sorts them and
  # cuts them every 4): a batch across two shards is cut as one sorted
  # shard, not as 4 rows of the longest of one and the shortest of the
  # next. Beam's length-aware batches (one bucket each) hold 4.
  handler = beam_handler.ExportModelHandler("stand-in", DESCRIPTION,
                                            "pooled", 4, buckets=(64,))
  assert handler.batch_elements_kwargs() == {"min_batch_size": 128,
                                             "max_batch_size": 128}
  aware = beam_handler.ExportModelHandler("stand-in", DESCRIPTION, "pooled",
                                          4, buckets=(32, 64))
  assert {k: v for k, v in aware.batch_elements_kwargs().items()
          if k.endswith("batch_size")} == {"min_batch_size": 4,
                                           "max_batch_size": 4}


class _WordCounter:
  """A TokenCounter stand-in: a row's tokens are its words."""

  @staticmethod
  def lengths(rows):
    return [len(row.text_a.split()) for row in rows]


@pytest.mark.parametrize("own", [True, False])
def test_run_inference_batches_as_in_process(own):
  """Beam's batch of 8 rows (lengths across buckets 8, 16, 32): a
  predictor at its own longest row gets it sorted in batches of 4 rows;
  one at the buckets gets it cut at them (batching.predictions)."""
  model = LengthModel()
  model.own_length = own
  LengthModel.calls = []
  handler = beam_handler.ExportModelHandler(
      "stand-in", DESCRIPTION, "pooled", 4, (8, 16, 32), length_aware=False)
  words = [20, 3, 9, 17, 5, 12, 30, 7]
  batch = [InputRow(i, "", "w " * n) for i, n in enumerate(words)]
  out = handler.run_inference(
      batch, beam_handler._Loaded(model, _WordCounter()))
  assert [o["probabilities"]["long"] for o in out] == [
      len("w " * n) / 100 for n in words]
  seen = [[len(t.split()) for t in call] for call in LengthModel.calls]
  if own:
    assert seen == [[3, 5, 7, 9], [12, 17, 20, 30]]
  else:
    assert seen == [[3, 5, 7], [9, 12], [17, 20, 30]]


def test_beam_finishes_an_in_process_folder(tmp_path):
  # The same plan and shard names: a rerun on Beam (after a crash of the
  # in-process run) computes only the missing shard.
  _write_inputs(tmp_path)
  local = _options(tmp_path, "out")
  runner.predict_files(local, LengthModel, DESCRIPTION)
  first = _files(local.output_dir)
  os.remove(os.path.join(local.output_dir, "part-00001-00002.jsonl"))
  os.remove(os.path.join(local.output_dir, "manifest.json"))
  _beam(_options(tmp_path, "out", runner="DirectRunner"))
  assert _files(local.output_dir) == first
  assert sorted(t for c in LengthModel.calls for t in c) == sorted(
      "word " * (i % 23) for i in range(114, 121))


def test_a_bad_row_found_by_a_worker_is_the_one_line(tmp_path):
  # Without counting, the worker finds it: its marked message crosses the
  # runner and is raised again as the in-process path's line.
  _write_inputs(tmp_path, bad=(12,))
  options = _options(tmp_path, "beam", runner="DirectRunner",
                     count_rows=False)
  with pytest.raises(UserInputError) as error:
    _beam(options)
  assert str(error.value) == (
      f"{tmp_path / 'in1.jsonl'}:13: not JSON (Expecting property name "
      "enclosed in double quotes) (--skip_bad_rows writes such rows to a "
      "rejects file)")
  assert "manifest.json" not in os.listdir(options.output_dir)


def test_a_bad_row_is_found_before_the_pipeline_runs(tmp_path):
  _write_inputs(tmp_path, bad=(105,))
  options = _options(tmp_path, "beam", runner="DirectRunner")
  with pytest.raises(UserInputError, match=r"in2\.jsonl:6: not JSON"):
    _beam(options)
  assert not os.path.exists(options.output_dir)


def test_an_unknown_beam_option_is_refused(tmp_path):
  _write_inputs(tmp_path)
  with pytest.raises(UserInputError, match="--direct_num_wrkers"):
    beam_pipeline.predict_files_beam(
        _options(tmp_path, "beam", runner="DirectRunner"),
        ["--direct_num_wrkers=2"], LengthModel, DESCRIPTION, ())


def test_cli_a_bad_row_is_one_line_and_nothing_is_written(fake_exports,
                                                          tmp_path):
  path = tmp_path / "in.jsonl"
  path.write_text('{"a": "x", "b": "y"}\n{"a": "x", "b": \n')
  out = str(tmp_path / "out")
  result = subprocess.run(
      [sys.executable, "-m", "tools.predict",
       f"--model={fake_exports['classifier']}", f"--input_file={path}",
       f"--output_dir={out}", "--text_column=a", "--text_b_column=b",
       "--runner=DirectRunner", *TWO_THREADS],
      cwd=ROOT, capture_output=True, text=True, timeout=300)
  err = result.stderr.strip().splitlines()
  assert result.returncode == 1 and len(err) == 1, err
  assert err[0].startswith(f"error: {path}:2: not JSON (")
  assert not os.path.exists(out)


def test_the_runners_own_checks_come_before_any_file(tmp_path):
  _write_inputs(tmp_path)
  with pytest.raises(UserInputError, match="--runner=DataflowRunner: .*"
                     "project"):
    beam_pipeline.predict_files_beam(
        _options(tmp_path, "beam", runner="DataflowRunner"), [],
        LengthModel, DESCRIPTION, ())
  assert not (tmp_path / "beam").exists()
