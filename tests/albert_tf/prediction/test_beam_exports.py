"""tools.predict on Beam's DirectRunner (2 worker threads) over real
exports: its rows equal the export's own serving_default outputs and the
in-process run's, row by row by id, for every kind; the command line
passes Beam's options through."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from albert_tf.prediction import beam_handler
from albert_tf.prediction import beam_pipeline
from albert_tf.prediction import exported_model
from albert_tf.prediction import runner
from albert_tf.prediction.options import PredictOptions
from tests.albert_tf.prediction.test_predict_exports import _assert_rows_equal
from tests.albert_tf.prediction.test_predict_exports import _expected
from tests.albert_tf.prediction.test_predict_exports import _texts
from tests.albert_tf.prediction.test_predict_exports import _write

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
TWO_THREADS = ["--direct_num_workers=2",
               "--direct_running_mode=multi_threading"]
LABELS = {"classifier": ("billing", "other", "shipping"),
          "multi_label": ("a", "b", "c", "d")}


def _rows(folder):
  """Every output row of the folder's jsonl shards."""
  return [json.loads(line) for name in sorted(os.listdir(folder))
          if name.startswith("part")
          for line in open(os.path.join(folder, name), encoding="utf-8")]


@pytest.mark.slow
def test_export_buckets_are_read_from_the_serving_graph(prediction_exports):
  """The graph reading (for exports made before they recorded their
  buckets) finds what the exports now record."""
  described = {kind: exported_model.describe(path)
               for kind, path in prediction_exports.items()}
  buckets = {kind: beam_handler.export_buckets(path, described[kind])
             for kind, path in prediction_exports.items()}
  # Only the classifier and multiple-choice fixtures have length buckets.
  assert buckets == {"classifier": (16, 32, 64), "regression": (),
                     "multi_label": (), "ner": (), "squad": (),
                     "encoder": (), "multiple_choice": (32, 64),
                     "race": ()}
  for kind in ("classifier", "multiple_choice"):
    assert described[kind].length_buckets == buckets[kind]


CASES = [("classifier", "a.csv"), ("regression", "a.csv"),
         ("multi_label", "a.parquet"), ("ner", "a.jsonl"),
         ("squad", "a.jsonl"), ("encoder", "a.txt"),
         ("encoder-mean", "a.jsonl")]


@pytest.mark.slow
@pytest.mark.parametrize("kind,name", CASES)
def test_beam_rows_equal_the_export_and_the_in_process_run(
    kind, name, prediction_exports, english_corpus, tmp_path):
  kind, _, embeddings = kind.partition("-")
  texts = _texts(english_corpus, 23, seed=len(name) + 1)
  pair = kind in ("regression", "squad")
  records = [dict({"key": f"k{i}", "text": t},
                  **({"other": texts[-1 - i]} if pair else {}))
             for i, t in enumerate(texts)]
  if kind == "squad":
    records = [{"key": r["key"], "context": r["text"],
                "question": r["other"][:40]} for r in records]
  path = _write(str(tmp_path), name, records)
  plain = name.endswith(".txt")
  settings = dict(
      model=prediction_exports[kind], input_file=path, rows_per_shard=10,
      batch_size=4, id_column="" if plain else "key",
      text_b_column="other" if kind == "regression" else "",
      embeddings=embeddings or "pooled")
  local = runner.predict_files(PredictOptions(
      output_dir=str(tmp_path / "local"), **settings))
  manifest = beam_pipeline.predict_files_beam(PredictOptions(
      output_dir=str(tmp_path / "beam"), runner="DirectRunner", **settings),
      TWO_THREADS)
  assert manifest == local and manifest["rows"] == len(texts)
  assert sorted(os.listdir(tmp_path / "beam")) == sorted(
      os.listdir(tmp_path / "local"))
  rows = _rows(str(tmp_path / "beam"))
  keys = ([r["row"] for r in rows] if plain else
          [int(r["key"][1:]) for r in rows])
  assert keys == list(range(len(texts)))  # input order within shards
  second = ([r["question"] for r in records] if kind == "squad" else
            [r["other"] for r in records] if pair else None)
  expected = _expected(kind, prediction_exports[kind], texts, second,
                       embeddings or "pooled")
  labels = LABELS.get(kind, ())
  _assert_rows_equal(kind, rows, expected, labels)
  in_process = _rows(str(tmp_path / "local"))
  assert [sorted(r) for r in rows] == [sorted(r) for r in in_process]
  if kind == "ner":
    assert sum(len(r["entities"]) for r in rows) > 0
  else:  # the in-process rows, to float rounding (other batches)
    name_of = {"classifier": "probabilities", "multi_label":
               "probabilities", "regression": "value", "squad": "score",
               "encoder": "embedding"}[kind]
    got = [r[name_of] for r in rows]
    want = [r[name_of] for r in in_process]
    if labels:
      got = [[p[n] for n in labels] for p in got]
      want = [[p[n] for n in labels] for p in want]
    np.testing.assert_allclose(got, want, atol=1e-5)


@pytest.mark.slow
def test_cli_passes_beam_options_and_writes_the_in_process_rows(
    prediction_exports, english_corpus, tmp_path):
  texts = _texts(english_corpus, 40, seed=3)
  path = _write(str(tmp_path), "in.jsonl",
                [{"id": i, "text": t} for i, t in enumerate(texts)])
  args = [f"--model={prediction_exports['classifier']}",
          f"--input_file={path}", "--rows_per_shard=15", "--batch_size=8",
          "--id_column=id", "--skip_bad_rows"]
  beam_out, local_out = str(tmp_path / "beam"), str(tmp_path / "local")
  result = subprocess.run(
      [sys.executable, "-m", "tools.predict", *args,
       f"--output_dir={beam_out}", "--runner=DirectRunner", *TWO_THREADS],
      cwd=ROOT, capture_output=True, text=True, timeout=600)
  assert result.returncode == 0, result.stderr[-2000:]
  assert result.stdout.strip() == (
      f"40 rows predicted (classifier), 0 bad rows, 3 shards in {beam_out}")
  runner.predict_files(PredictOptions(
      model=prediction_exports["classifier"], input_file=path,
      output_dir=local_out, rows_per_shard=15, batch_size=8,
      id_column="id", skip_bad_rows=True))
  rows, in_process = _rows(beam_out), _rows(local_out)
  assert [(r["id"], r["label"]) for r in rows] == [
      (r["id"], r["label"]) for r in in_process]
  np.testing.assert_allclose(
      [list(r["probabilities"].values()) for r in rows],
      [list(r["probabilities"].values()) for r in in_process], atol=1e-5)
