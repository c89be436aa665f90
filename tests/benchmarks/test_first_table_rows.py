"""Each harness that owns a first-table row writes it with --write: into a
copy of BENCHMARKS.md, from figures given here (no timing), each row keeps
its machine label, date, exact command, contender kind and a ceiling at its
own shapes; a new row supersedes the block an older run left elsewhere."""

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys

import pytest

from benchmarks import common

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
HARNESSES = ("benchmarks.data.creation", "benchmarks.pretraining.step",
             "benchmarks.finetuning.peers", "benchmarks.serving.runtimes",
             "benchmarks.serving.corpus", "benchmarks.memory.peaks",
             "benchmarks.serving.early_exit",
             "benchmarks.finetuning.distillation")


def _blocks(path):
  """Every figures block's dict, in file order."""
  text = open(path, encoding="utf-8").read()
  rows, at = [], 0
  while (start := text.find(common.FIGURES_START + "\n", at)) >= 0:
    end = text.index("\n-->", start)
    rows.append(json.loads(text[start + len(common.FIGURES_START):end]))
    at = end
  return rows


@pytest.fixture
def md(tmp_path, monkeypatch):
  """A copy of the repository's BENCHMARKS.md that --write writes into,
  and a charts folder of the test's own."""
  from benchmarks import charts
  path = str(tmp_path / "BENCHMARKS.md")
  shutil.copy(os.path.join(ROOT, "BENCHMARKS.md"), path)
  monkeypatch.setattr(common, "BENCHMARKS_MD", path)
  monkeypatch.setattr(charts, "CHARTS_DIR", str(tmp_path))
  return path


def _only(path, order):
  """The one block of `order` in the file (a row is one run's), checked
  as benchmarks.summary checks it (the form its harness writes)."""
  from benchmarks import figures
  from benchmarks import run_all
  found = [(section, row) for _, section, row in figures.read(
      open(path, encoding="utf-8").read()) if row.get("order") == order]
  assert len(found) == 1, found
  section, row = found[0]
  figures.check(row, section, run_all.HARNESSES)
  return row


def _common_fields(row, command):
  assert row["machine"] == common.machine_label()
  assert row["date"] == datetime.date.today().isoformat()
  assert row["command"] == command
  assert row["contender"] in ("peer", "baseline")
  assert "same machine type" not in json.dumps(row)
  assert row["ceiling"]["value"] > 0 and row["reached"] > 0


def test_every_row_harness_has_a_short_mode_that_writes():
  import importlib
  for name in HARNESSES:
    short = importlib.import_module(name).SHORT_ARGS
    assert all(isinstance(a, str) and a.startswith("--") for a in short)
    assert "--write" in short, name


def test_a_new_row_supersedes_the_block_of_its_order_elsewhere(tmp_path):
  path = str(tmp_path / "B.md")
  old = dict(job="old", order=10)
  other = dict(job="other", order=20)
  with open(path, "w") as f:
    f.write("# B\n\n## Data\n\n### Old run\n\ntext\n\n"
            f"{common.figures_block(old)}\n\n### Other\n\n"
            f"{common.figures_block(other)}\n")
  common.update_benchmarks_md("New run", "body", figures=[dict(
      job="new", order=10)], stage="Data", path=path)
  assert [r["job"] for r in _blocks(path)] == ["other", "new"]
  text = open(path).read()
  assert "### Old run\n\ntext\n" in text  # the section stays, as a record
  common.update_benchmarks_md("New run", "again", figures=[dict(
      job="newer", order=10)], stage="Data", path=path)
  assert [r["job"] for r in _blocks(path)] == ["other", "newer"]


def test_data_creation_row_with_the_official_script_run_here(md):
  from benchmarks.data import creation
  command = "python -m benchmarks.data.creation --corpus_copies=4 --write"
  rates = {("local", 1): 25000.0, ("local", 2): 44000.0}
  official = dict(seconds=90.0, cpu_seconds=88.0, instances=94000, rss_mb=900.0,
                  rate=94000 / 90.0)
  creation.write([], rates, official, command, 4, "")
  row = _only(md, 10)
  _common_fields(row, command)
  assert row["contender"] == "peer" and "peer_run" not in row
  assert row["peer"]["value"] == round(94000 / 90.0)
  # Ours is the figure the ceiling is reached by: 2 workers, both.
  assert row["ours"]["value"] == 44000 and row["reached"] == 44000
  assert row["ceiling"]["value"] == 2 * 25000
  assert "one process 25,000" in row["ours"]["label"]


def test_data_creation_writes_no_row_without_the_official_script(md):
  """No peer measured in this run: no row (the section's new run drops the
  row its old run wrote there; every other row stays);
  --write of a row-writing run is refused before any work, in one line
  saying how to get the script; the env var is written into the command."""
  from benchmarks.data import creation
  from benchmarks.data import official_creation
  before = _blocks(md)
  creation.write([], {("local", 1): 25000.0, ("local", 2): 44000.0}, None,
                 "python -m benchmarks.data.creation --write", 4, "")
  assert _blocks(md) == [b for b in before if b["order"] != 10]
  assert len(before) - len(_blocks(md)) == 1
  env = {k: v for k, v in os.environ.items()
         if k != official_creation.OFFICIAL_DIR_ENV}
  result = subprocess.run(
      [sys.executable, "-m", "benchmarks.data.creation", "--corpus_copies=4",
       "--workers=1,2", "--beam_workers=", "--write",
       f"--work_dir={os.path.dirname(md)}/never"],
      cwd=ROOT, capture_output=True, text=True, timeout=300,
      env=dict(env, PYTHONPATH=ROOT))
  assert result.returncode == 1
  assert result.stderr.count("\n") == 1, result.stderr
  assert "git clone https://github.com/google-research/albert" in (
      result.stderr) and "ALBERT_OFFICIAL_DIR" in result.stderr
  assert not os.path.exists(f"{os.path.dirname(md)}/never")
  assert creation.writes_row(4, "", "1,2")
  assert not creation.writes_row(1, "", "1,2")
  assert not creation.writes_row(4, "2", "1,2")
  # A checkout from the environment goes into the command.
  from benchmarks import figures
  old = sys.argv
  try:
    sys.argv = ["creation.py", "--write"]
    command = creation.command("/opt/albert dir", None)
  finally:
    sys.argv = old
  assert command == ("ALBERT_OFFICIAL_DIR='/opt/albert dir' python -m "
                     "benchmarks.data.creation --write")
  assert figures.command_module(command) == "benchmarks.data.creation"


def test_official_dir_must_hold_the_script(tmp_path, monkeypatch):
  from benchmarks.data import official_creation as official
  monkeypatch.delenv(official.OFFICIAL_DIR_ENV, raising=False)
  assert official.official_dir(None) is None
  with pytest.raises(official.OfficialScriptError,
                     match=f"^--official_dir={tmp_path}: no "):
    official.official_dir(str(tmp_path))
  monkeypatch.setenv(official.OFFICIAL_DIR_ENV, str(tmp_path))
  with pytest.raises(official.OfficialScriptError,
                     match=f"ALBERT_OFFICIAL_DIR={tmp_path}: no "):
    official.official_dir(None)
  result = subprocess.run(
      [sys.executable, "-m", "benchmarks.data.creation",
       f"--official_dir={tmp_path}"], cwd=ROOT, capture_output=True,
      text=True, timeout=120, env=dict(os.environ, PYTHONPATH=ROOT))
  assert result.returncode == 1
  assert result.stderr.strip().count("\n") == 0, result.stderr
  assert result.stderr.startswith(f"error: --official_dir={tmp_path}: no ")


# A stand-in for the official script: its flags (official names), and
# main() writing 7 records and the flags it was given.
_STAND_IN = '''
from absl import flags
import json
import tensorflow.compat.v1 as tf
from albert import tokenization  # the official import
FLAGS = flags.FLAGS
for name in ("input_file", "output_file", "vocab_file", "spm_model_file"):
  flags.DEFINE_string(name, None, "")
for name in ("do_lower_case", "do_whole_word_mask", "favor_shorter_ngram",
             "random_next_sentence"):
  flags.DEFINE_bool(name, False, "")
for name in ("max_seq_length", "ngram", "max_predictions_per_seq",
             "random_seed", "dupe_factor"):
  flags.DEFINE_integer(name, 0, "")
for name in ("masked_lm_prob", "short_seq_prob"):
  flags.DEFINE_float(name, 0.0, "")
def main(_):
  with tf.io.TFRecordWriter(FLAGS.output_file) as w:
    for _ in range(7):
      w.write(b"x")
  with open(FLAGS.output_file + ".flags", "w") as f:
    json.dump({k: v.value for k, v in FLAGS.__flags.items()
               if k in ("max_seq_length", "dupe_factor", "masked_lm_prob",
                        "ngram", "max_predictions_per_seq",
                        "short_seq_prob", "vocab_file")}, f)
'''


def test_the_official_script_runs_on_our_settings(tmp_path):
  from benchmarks.data import official_creation as official
  from data_pipeline.pretraining import instance_options
  checkout = tmp_path / "google-research-albert"  # not named `albert`
  checkout.mkdir()
  (checkout / "create_pretraining_data.py").write_text(_STAND_IN)
  (checkout / "tokenization.py").write_text("")
  (tmp_path / "spm.model").write_text("")
  (tmp_path / "spm.vocab").write_text("")
  options = instance_options.InstanceOptions(max_seq_length=96,
                                             max_predictions_per_seq=14)
  flags = official.official_flags(options, dupe_factor=3)
  out = str(tmp_path / "out" / "train.tfrecord")
  result = official.run_official(official.official_dir(str(checkout)),
                                 str(tmp_path / "corpus.txt"),
                                 str(tmp_path / "spm.model"), out, flags)
  assert result["instances"] == 7 and result["seconds"] > 0
  given = json.load(open(out + ".flags"))
  assert given == dict(max_seq_length=96, max_predictions_per_seq=14,
                       dupe_factor=3, masked_lm_prob=options.masked_lm_prob,
                       ngram=options.ngram,
                       short_seq_prob=options.short_seq_prob,
                       vocab_file=str(tmp_path / "spm.vocab"))


def test_memory_row_is_kept_with_its_baseline(md, monkeypatch):
  from benchmarks.memory import peaks
  monkeypatch.setattr(peaks, "draw_chart", lambda: "no chart here")
  configs = [dict(size="base", seq=s, batch=b, off_mib=1000.0 * s * b / 512,
                  on_mib=300.0 * s * b / 512, plan_on_mib=200.0 * s * b / 512)
             for s in (128, 512) for b in (2, 4)]
  command = "python -m benchmarks.memory.peaks --write"
  peaks.write(peaks.SECTION, command, "tables", dict(configs=configs))
  row = _only(md, 50)
  _common_fields(row, command)
  assert row["contender"] == "baseline"
  assert "4 x 512" in row["job"]  # the largest configuration
  assert (row["ours"]["value"], row["peer"]["value"],
          row["ceiling"]["value"]) == (1200, 4000, 800)
  assert row["higher_is_better"] is False


def test_pretraining_step_row_at_its_own_shapes(md, monkeypatch):
  from benchmarks.pretraining import step
  monkeypatch.setattr(sys, "argv", ["step.py"] + step.SHORT_ARGS)
  plot = [dict(label="base\nfloat32", size="base", mode="float32", ours=3.4,
               garden=2.3, ceiling=4.2, peak=287e9, reached=0.8)]
  args = argparse.Namespace(batch_size=8, seq_length=128)
  step._write(args, "table", plot)
  row = _only(md, 20)
  _common_fields(row, "python -m benchmarks.pretraining.step " +
                 " ".join(step.SHORT_ARGS))
  assert row["contender"] == "peer"
  assert "[1024, H] x [H, I]" in row["ceiling"]["label"]
  assert (row["ours"]["value"], row["peer"]["value"]) == (3.4, 2.3)


def test_finetuning_rows_and_their_ceiling_at_batch_x_seq(md, monkeypatch):
  from benchmarks import roofline
  from benchmarks.finetuning import peers
  shapes = []
  monkeypatch.setattr(roofline, "step_peak", lambda h, i, rows, *a: (
      shapes.append(rows), 1e11)[1])
  _, args = peers.parse(peers.SHORT_ARGS[:-1] + ["--size=tiny"])
  roof = peers.ceiling(args)
  assert shapes == [32 * 128]  # the row's batch x sequence
  result = dict(examples=32, tokens=800, padded_tokens=1024, seconds=2.0,
                other_cores=0.0)
  results = {task: [{"pack": result, "hf_dynamic": dict(result, seconds=5.0)}]
             for task in ("sst2", "mrpc")}
  command = "python -m benchmarks.finetuning.peers --write"
  peers._write(args, command, "machine line", results,
               ["pack", "hf_dynamic"], roof, "table", [], "")
  for order in (30, 31):
    row = _only(md, order)
    _common_fields(row, command)
    assert row["contender"] == "peer"
    assert row["ours"]["value"] == 400.0 and row["peer"]["value"] == 160.0
    assert row["ceiling"]["value"] == pytest.approx(roof["tokens_per_s"],
                                                    abs=0.1)
    assert f"[{32 * 128}, H]" in row["ceiling"]["label"]


def test_serving_rows_each_against_its_own_batchs_peak(md, monkeypatch):
  from benchmarks import roofline
  from benchmarks.serving import runtimes
  seen = []
  monkeypatch.setattr(roofline, "step_peak", lambda h, i, rows, *a, **k: (
      seen.append(rows), 1e9 * rows)[1])
  # ONNX Runtime faster than TensorFlow at batch 1, slower at batch 32: the
  # ceiling takes the faster at each.
  monkeypatch.setattr(roofline, "onnx_matmul_flops",
                      lambda m, k, n, *a: 2e9 * m if m <= 128 else 0.5e9 * m)
  peaks = runtimes.workload_peaks(768, 3072)
  assert sorted(seen) == [20, 32, 128, 32 * 128]
  assert peaks["batch 32, seq 128"] == {"TensorFlow": 1e9 * 4096,
                                        "ONNX Runtime": 0.5e9 * 4096}
  assert runtimes.best_peaks(peaks)["batch 1, seq 128"] == 2e9 * 128
  columns = [w[0] for w in runtimes.WORKLOADS]
  names = [runtimes.OURS, "ORT float32"]
  measured = dict(
      names=names, peaks=peaks, flops={c: 1e12 for c in columns},
      results={c: dict(times={runtimes.OURS: [10.0, 12.0],
                              "ORT float32": [20.0, 22.0]},
                       others=[0.0, 0.0]) for c in columns})
  args = argparse.Namespace(quiet=0.05, size="base")
  command = "python -m benchmarks.serving.runtimes --write"
  runtimes.write(args, measured, "tables", command)
  for order, rows, rate in ((40, 128, 2e9), (41, 4096, 1e9)):
    row = _only(md, order)
    _common_fields(row, command)
    assert row["ours"]["value"] == 11.0 and row["peer"]["value"] == 21.0
    # forward FLOPs at the faster runtime's matmul peak at this batch's rows
    assert row["ceiling"]["value"] == pytest.approx(1e12 / (rate * rows) * 1e3,
                                                    abs=0.06)
    assert f"[{rows}, H]" in row["ceiling"]["label"]
    assert "TensorFlow" in row["ceiling"]["label"]
    assert "ONNX Runtime" in row["ceiling"]["label"]


def test_early_exit_row_comes_from_the_sweeps_figures(md, monkeypatch):
  """The run the review found: the sweep had patience 8 at 12.00 ms and
  full depth at 11.81 ms; the row must say 0.98x, not the 1.02x another
  measurement of the same variants gave."""
  from benchmarks import charts
  from benchmarks.serving import early_exit
  monkeypatch.setattr(charts, "from_spec", lambda spec, *a: "chart")
  monkeypatch.setattr(sys, "argv", ["early_exit.py"] + early_exit.SHORT_ARGS)
  layers = 12
  curve = {"early exit": [(5.0 + p, 0.40 + 0.005 * p, p)
                          for p in range(1, layers)],
           "static cut": [(float(d), 0.39 + 0.007 * d, d)
                          for d in range(1, layers + 1)]}
  curve["early exit"][7] = (12.002, 0.4768, 8)
  curve["static cut"][-1] = (11.809, 0.4782, 12)
  table = {p: dict(accuracy=0.47, mean_exit_layer=10.0)
           for p in range(layers)}
  result = early_exit.Result("report", [], {}, curve, table, 8, layers,
                             None, "test")
  args = argparse.Namespace(run_dir="", task="", size=early_exit.SHORT_ARGS[
      0].split("=", 1)[1], seq_length=64)
  early_exit._write(args, result, "quiet: other processes 0.02 cores")
  row = _only(md, 60)
  _common_fields(row, "python -m benchmarks.serving.early_exit " +
                 " ".join(early_exit.SHORT_ARGS))
  assert row["contender"] == "baseline"
  assert (row["ours"]["value"], row["peer"]["value"]) == (12.0, 11.81)
  assert row["peer"]["value"] / row["ours"]["value"] < 1  # 0.98x
  assert row["ceiling"]["value"] == round(11.809 * 10.0 / 12, 2)
  assert "crafted task, 12-layer" in row["job"]


def test_early_exit_at_chance_writes_no_row(md, monkeypatch):
  """The short run the review found: final loss ln 3, 0.318 at every
  patience on 192 balanced 3-class test rows: refused in one line, nothing
  written; the same figures at 0.45 are written."""
  import numpy as np

  from benchmarks import accuracy
  from benchmarks import charts
  from benchmarks.serving import early_exit
  monkeypatch.setattr(charts, "from_spec", lambda spec, *a: "chart")
  monkeypatch.setattr(sys, "argv", ["early_exit.py"] + early_exit.SHORT_ARGS)
  layers = 12
  curve = {"early exit": [(1.0 + p, 0.318, p) for p in range(1, layers)],
           "static cut": [(float(d), 0.318, d) for d in range(1, layers + 1)]}
  table = {p: dict(accuracy=0.318, mean_exit_layer=p + 1.0)
           for p in range(layers)}
  labels = np.array([0, 1, 2] * 64)
  args = argparse.Namespace(run_dir="", task="", size=early_exit.SHORT_ARGS[
      0].split("=", 1)[1], seq_length=32)
  before = open(md, encoding="utf-8").read()
  result = early_exit.Result("report", [], {}, curve, table, 1, layers,
                             labels, "test")
  with pytest.raises(accuracy.ChanceError, match="full depth: test accuracy "
                     "0.3180 is within 2 binomial"):
    early_exit._write(args, result, "quiet: other processes 0.02 cores")
  assert open(md, encoding="utf-8").read() == before
  table = {p: dict(accuracy=0.45, mean_exit_layer=p + 1.0)
           for p in range(layers)}
  early_exit._write(args, result._replace(table=table),
                    "quiet: other processes 0.02 cores")
  assert _only(md, 60)["ours"]["value"] == 2.0


def test_a_packed_rows_ceiling_is_measured_at_its_packed_shapes(md,
                                                                monkeypatch):
  """pack ran 8 packed rows of 128 a step: its row's ceiling is the peak
  at [1024, H], not at the [4096, H] of the batch it was fed."""
  from benchmarks import roofline
  from benchmarks.finetuning import peers
  shapes = []
  peaks = {32 * 128: 2e11, 8 * 128: 1e11}
  monkeypatch.setattr(roofline, "step_peak", lambda h, i, rows, *a: (
      shapes.append(rows), peaks[rows])[1])
  _, args = peers.parse(peers.SHORT_ARGS[:-1] + ["--size=tiny"])
  roof = peers.ceiling(args)
  result = dict(examples=32, tokens=800, padded_tokens=1024, seconds=2.0,
                other_cores=0.0, rows=8)
  results = {task: [{"pack": result, "hf_dynamic": dict(
      result, seconds=5.0, rows=None)}] for task in ("sst2", "mrpc")}
  peers._write(args, "python -m benchmarks.finetuning.peers --write",
               "machine line", results, ["pack", "hf_dynamic"], roof,
               "table", [], "")
  assert shapes[0] == 32 * 128 and set(shapes[1:]) == {8 * 128}
  row = _only(md, 30)
  assert "[1024, H]" in row["ceiling"]["label"]
  assert row["ceiling"]["value"] == pytest.approx(
      roof["tokens_per_s"] / 2, abs=0.1)
