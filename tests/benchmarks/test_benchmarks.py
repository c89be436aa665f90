"""The step benchmarks run end to end on a tiny config and report sane tables.

Speed itself is never asserted (BENCHMARKS.md reports it); these tests keep
the benchmark commands working as the library changes.
"""

import os
import subprocess
import sys

import pytest

from albert_tf.config import AlbertConfig

# Minutes of multi-process or whole-pipeline runs: `make test-all` only.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny_config_file(tmp_path_factory):
  path = str(tmp_path_factory.mktemp("bench") / "tiny.json")
  AlbertConfig(vocab_size=300, embedding_size=16, hidden_size=32,
               num_hidden_layers=2, num_attention_heads=4,
               intermediate_size=64, max_position_embeddings=32,
               ).to_json_file(path)
  return path


_ROOT = os.path.abspath(os.path.join(__file__, "../../.."))
_ABLATIONS = ("import sys; from benchmarks.investigations import ablations; "
              "ablations.run(sys.argv[1], 2, 16, 1)")


@pytest.fixture(scope="module", autouse=True)
def side_runs(tiny_config_file):
  """Two processes started before the in-process benchmarks and read by the
  tests that need them, so that they run beside them on the other core:
  "unknown_size", `--size=huge` on the command line (mostly its TensorFlow
  import), and "ablations", ablations.run on the tiny config (its
  markdown table on stdout)."""
  commands = {"unknown_size": ["-m", "benchmarks.finetuning.classifier_step",
                               "--size=huge"],
              "ablations": ["-c", _ABLATIONS, tiny_config_file]}
  processes = {name: subprocess.Popen(
      [sys.executable, *args], cwd=_ROOT, stdout=subprocess.PIPE,
      stderr=subprocess.PIPE, text=True,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
               for name, args in commands.items()}
  yield processes
  for process in processes.values():
    if process.poll() is None:
      process.kill()
    process.communicate()


def _rows(table):
  """Markdown table -> list of rows (lists of cell strings), header dropped."""
  lines = [line for line in table.strip().splitlines() if line.startswith("|")]
  return [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]


def _ratio(cell):
  assert cell.endswith("x"), cell
  value = float(cell[:-1])
  assert 0 < value < 100, cell
  return value


def test_pretraining_step_benchmark(tiny_config_file, tmp_path):
  from benchmarks.pretraining import step
  table, peaks, plot = step.run(
      [tiny_config_file], batch=2, seq=16, repeats=1,
      modes=["float32", "bfloat16"], memory=False)
  rows = _rows(table)
  assert [r[:2] for r in rows] == [["tiny", "float32"], ["tiny", "bfloat16"]]
  _ratio(rows[0][4])  # ours vs Model Garden, same run
  assert float(rows[0][5]) > 0 and float(rows[0][6]) > 0  # sequences/s
  # The matmul peak at the step's shapes, measured in this run, and each
  # contender's share of it.
  assert float(rows[0][7]) == pytest.approx(peaks["tiny"]["float32"] / 1e9,
                                            abs=0.06)
  assert rows[0][8].endswith("%") and rows[0][9].endswith("%")
  # Model Garden's MaskedLM cannot run under mixed_bfloat16 (documented).
  assert rows[1][3].startswith("fails") and rows[1][6] == "-"
  assert rows[1][9] == "-"
  assert [p["label"] for p in plot] == ["tiny\nfloat32", "tiny\nbfloat16"]
  # The ceiling in sequences/s is the peak's: ours / ceiling = % of peak.
  first = plot[0]
  assert first["ours"] / first["ceiling"] == pytest.approx(first["reached"])
  assert rows[0][8] == f"{first['reached']:.0%}"
  chart = step.save_plot(plot, str(tmp_path / "step.png"))
  assert open(chart, "rb").read(8) == b"\x89PNG\r\n\x1a\n"


def test_classifier_step_benchmark(tiny_config_file):
  from benchmarks.finetuning import classifier_step
  rows = _rows(classifier_step.run(tiny_config_file, 2, 16, 1))
  assert len(rows) == 1 and rows[0][0] == "tiny"
  _ratio(rows[0][3])


def test_ablation_benchmark_builds_every_variant(side_runs):
  from benchmarks.investigations import ablations
  process = side_runs["ablations"]
  stdout, stderr = process.communicate(timeout=600)
  assert process.returncode == 0, stderr[-3000:]
  rows = _rows(stdout)
  assert [r[0] for r in rows] == list(ablations.VARIANTS)
  assert rows[0][2] == "1.00x"
  for row in rows:
    _ratio(row[2])


def test_unknown_size_is_one_line_exit_1(side_runs):
  process = side_runs["unknown_size"]
  _, stderr = process.communicate(timeout=120)
  assert process.returncode == 1
  lines = [line for line in stderr.splitlines() if line.startswith("error:")]
  assert len(lines) == 1 and "albert_huge.json" in lines[0], stderr
  assert "Traceback" not in stderr


@pytest.mark.slow
def test_tflite_benchmark(tmp_path):
  from benchmarks.serving import litert
  path = str(tmp_path / "tiny2k.json")
  AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
               num_hidden_layers=2, num_attention_heads=4,
               intermediate_size=64, max_position_embeddings=32
               ).to_json_file(path)
  rows = _rows(litert.run(path, 32, 2, 1, 5))
  assert [r[0] for r in rows] == ["SavedModel (TF)", "LiteRT float32",
                                  "LiteRT float16", "LiteRT dynamic int8"]
  sizes = [float(r[2]) for r in rows[1:]]
  assert sizes[2] < sizes[1] < sizes[0]
  # The float model's accuracy equals the SavedModel's.
  assert rows[1][4] == "+0.0 pt"


def test_length_buckets_benchmark(tiny_config_file):
  from benchmarks.finetuning import length_buckets
  rows = _rows(length_buckets.run(tiny_config_file, 4, 32, 3,
                                        "16,32", ("sst2", "mrpc")))
  assert [r[:2] for r in rows] == [["tiny", "SST-2-like"],
                                   ["tiny", "MRPC-like pairs"]]
  for row in rows:
    assert 2 < float(row[2]) <= 32
    none, bucketed, garden = map(float, row[4:7])
    assert none > 0 and bucketed > 0 and garden > 0
    # The ratios are those of the printed examples/s (to rounding).
    for cell, ratio in zip(row[7:10], (bucketed / none, bucketed / garden,
                                       none / garden)):
      assert _ratio(cell) == pytest.approx(ratio, rel=0.1, abs=0.06)
  assert rows[0][10] == "2 (4x16, 4x32)"
  traces, shapes = rows[1][10].split(" ", 1)
  assert int(traces) == len(shapes.split(",")) and "4x32" in shapes


def test_pretraining_buckets_benchmark(tiny_config_file):
  import numpy as np

  from benchmarks.pretraining import length_buckets
  lengths = np.array([3, 8, 8, 9, 16, 17, 32, 32])
  np.testing.assert_allclose(
      length_buckets.bucket_shares(lengths, (8, 16, 32)),
      [3 / 8, 2 / 8, 3 / 8])
  buckets, summary, gain = length_buckets.run(
      tiny_config_file, 2, 32, (8, 16, 32), 1, lengths)
  rows = _rows(buckets)
  assert [r[1:4] for r in rows] == [["2x8", "1-8", "37.5%"],
                                    ["2x16", "9-16", "25.0%"],
                                    ["2x32", "17-32", "37.5%"]]
  assert all(float(r[5]) > 0 for r in rows)
  padded, bucketed = _rows(summary)
  assert padded[1] == "padded to 32" and padded[5] == "1.00x"
  assert bucketed[1] == "buckets 8,16,32"
  assert _ratio(bucketed[5]) == pytest.approx(gain, abs=0.006)
  # Same instances: the examples/s and tokens/s ratios are the speed-up.
  for column in (3, 4):
    assert float(bucketed[column]) / float(padded[column]) == pytest.approx(
        gain, rel=0.05)


@pytest.mark.slow
def test_early_exit_benchmark(tmp_path):
  """benchmarks.serving.early_exit on a tiny 4-layer model, one patience:
  every variant in every runtime; a runtime's exits agree with the
  SavedModel's."""
  from benchmarks.serving import early_exit as bench_early_exit
  path = str(tmp_path / "tiny4.json")
  AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
               num_hidden_layers=4, num_attention_heads=2,
               intermediate_size=64, max_position_embeddings=32
               ).to_json_file(path)
  result = bench_early_exit.run(path, seq_length=32, train_steps=20,
                                repeats=1, patiences=[1],
                                batch1_examples=8)
  report, rows, compaction = result.report, result.rows, result.compaction
  variants = {r["variant"] for r in rows}
  assert "full depth" in variants and "patience 1" in variants
  assert {r["runtime"] for r in rows} == {"SavedModel", "LiteRT int8",
                                          "ONNX Runtime"}
  exits = {r["runtime"]: r["mean_exit_layer"] for r in rows
           if r["variant"] == "patience 1"}
  assert exits["ONNX Runtime"] == exits["SavedModel"]
  assert all(1 <= r["mean_exit_layer"] <= 4 for r in rows)
  assert set(compaction) == {"compaction", "masking"}
  assert "| patience | test accuracy |" in report
  assert "auto = patience" in report and "chosen on dev" in report
  # The curve: every patience 1..3 and every static depth 1..4, each at
  # its dev table's accuracy; the chart and the first table's row.
  assert [p for _, _, p in result.curve["early exit"]] == [1, 2, 3]
  assert [d for _, _, d in result.curve["static cut"]] == [1, 2, 3, 4]
  for _, accuracy, patience in result.curve["early exit"]:
    assert accuracy == result.table[patience]["accuracy"]
  from benchmarks.serving import early_exit_report
  chart = early_exit_report.chart_spec(result.curve, "tiny")
  from benchmarks import charts
  assert os.path.getsize(charts.from_spec(chart, str(tmp_path))) > 1000
  row, = early_exit_report.figures(result.curve, result.table, 1, 4, "m",
                                   "cmd", "quiet", "tiny", seq_length=32)
  assert row["job"] == "Early exit, batch 1 (tiny, seq 32)"
  # The row's figures are the sweep's: patience 1 and full depth (depth 4).
  full_ms = result.curve["static cut"][-1][0]
  assert row["ours"]["value"] == round(result.curve["early exit"][0][0], 2)
  assert row["peer"]["value"] == round(full_ms, 2)
  assert row["contender"] == "baseline"
  mean = result.table[1]["mean_exit_layer"]
  cuts = {d: ms for ms, _, d in result.curve["static cut"]}
  low = int(mean)
  cut_ms = (cuts[low] if low == 4 else
            cuts[low] + (mean - low) * (cuts[low + 1] - cuts[low]))
  assert row["ceiling"]["value"] == round(min(full_ms * mean / 4, cut_ms), 2)
  # No static cut at or above the mean depth runs under the ceiling.
  assert all(ms >= row["ceiling"]["value"] - 0.005
             for ms, _, d in result.curve["static cut"] if d >= mean)


def test_early_exit_benchmark_loads_a_finetuned_run(tmp_path, spm_model):
  """--run_dir: the best checkpoint of a run_classifier --early_exit run
  (albert_config.json, labels.json, best/) is the model timed, with the
  dev CSV's labels in labels.json's order."""
  import numpy as np
  import tensorflow as tf

  from albert_tf.models import AlbertEarlyExitClassifier
  from albert_tf.networks.albert_encoder import AlbertEncoder
  from benchmarks.serving import early_exit_models
  from data_pipeline.tasks import label_list
  config = AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
                        num_hidden_layers=3, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=32)
  run = tmp_path / "run"
  config.to_json_file(str(tmp_path / "albert_config.json"))
  run.mkdir()
  config.to_json_file(str(run / "albert_config.json"))
  label_list.write(str(run), label_list.LabelList(
      "classification", ("gui", "email", "files")))
  tf.random.set_seed(3)
  trained = AlbertEarlyExitClassifier(AlbertEncoder(config), 3,
                                      dropout_rate=0.0)
  trained.head_bias.assign(np.arange(9, dtype=np.float32).reshape(3, 3))
  tf.train.Checkpoint(model=trained).save(str(run / "best" / "ckpt"))
  dev = tmp_path / "dev.csv"
  dev.write_text("text,label\nClose the mailbox.,email\n"
                 '"Return the widget, then draw it.",gui\n'
                 "Remove the file.,files\n")
  test = tmp_path / "test.csv"
  test.write_text("text,label\nOpen the file.,files\nSend the mail.,email\n")
  model, inputs, labels, (test_inputs, test_labels) = (
      early_exit_models.finetuned_model_and_data(
          str(run), str(dev), spm_model, 32, str(test)))
  np.testing.assert_array_equal(labels, [1, 0, 2])
  np.testing.assert_array_equal(test_labels, [2, 1])
  assert test_inputs["input_word_ids"].shape == (2, 32)
  assert inputs["input_word_ids"].shape == (3, 32)
  want = trained(inputs, training=False)["all_logits"].numpy()
  got = model(inputs, training=False)["all_logits"].numpy()
  np.testing.assert_allclose(got, want, atol=1e-6)
  # A fresh model would differ: the restore is what made them equal.
  fresh = AlbertEarlyExitClassifier(AlbertEncoder(config), 3,
                                    dropout_rate=0.0)
  assert not np.allclose(fresh(inputs, training=False)["all_logits"], want)
