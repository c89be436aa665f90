"""benchmarks/serving/runtimes.py on the tiny size: every contender runs every
workload it can take and the report has its tables (never a speed)."""

import pytest


def _rows(text, title):
  """Rows (cells) of the markdown table after the line `title`."""
  lines = text.split(title, 1)[1].strip().splitlines()
  table = []
  for line in lines:
    if not line.startswith("|"):
      if table:
        break
      continue
    table.append([c.strip() for c in line.strip("|").split("|")])
  return table[2:]


@pytest.mark.slow
def test_serving_benchmark_tables(tmp_path):
  from benchmarks.serving import runtimes
  # Every round counts as quiet (the threshold is above any load), so each
  # cell has a number.
  measured = runtimes.measure("tiny", rounds=2, threads=2, batch32_rounds=1)
  report = runtimes.report(measured, quiet=100.0)
  quiet = _rows(report, "Medians of quiet rounds")
  names = [row[0] for row in quiet]
  assert names == [
      "TF SavedModel encoder", "TF encoder, layers' ops (before #34)",
      "LiteRT float32", "LiteRT dynamic int8", "ORT float32",
      "ORT float32, no spinning", "ORT int8", "ORT int8, no spinning",
      "quiet rounds"]
  for row in quiet[:-1]:
    cells = row[1:]
    if row[0].startswith("LiteRT"):  # fixed shapes: no unpadded request
      assert cells[1] == "-"
      cells = cells[:1] + cells[2:]
    assert all(float(c.replace(",", "")) > 0 for c in cells), row
  assert quiet[-1][1:] == ["2/2", "2/2", "2/2", "1/1"]
  ratios = _rows(report, "Time ratios")
  assert ratios[0][0] == "TF SavedModel encoder / ORT float32"
  assert all(c.endswith("x") for c in ratios[0][1:])
  assert "Sizes: onnx float32" in report
  # % of the matmul peak measured in the same run, beside the ratios.
  shares = _rows(report, "Share of the float32 matmul peak")
  assert [r[0] for r in shares] == names[:-1]
  first = float(quiet[0][1].replace(",", ""))
  expected = measured["flops"]["batch 1, seq 128"] / (first / 1e3) / (
      runtimes.best_peaks(measured["peaks"])["batch 1, seq 128"])
  # The cell divides the unrounded median; the table shows it rounded.
  assert float(shares[0][1].rstrip("%")) == pytest.approx(100 * expected,
                                                          rel=0.06, abs=1)
  # The chart and the first table's rows, from the same medians.
  png = runtimes.chart(measured, 100.0, str(tmp_path / "latency.png"))
  assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
  rows = runtimes.figures(measured, 100.0, "tiny", "test machine",
                          "python -m benchmarks.serving.runtimes --write")
  assert [r["order"] for r in rows] == [40, 41]
  assert rows[0]["ours"]["value"] == pytest.approx(first, rel=0.01, abs=0.06)
  assert rows[0]["peer"]["label"] in runtimes.PEERS
  assert rows[0]["ceiling"]["value"] == pytest.approx(
      measured["flops"]["batch 1, seq 128"] /
      runtimes.best_peaks(measured["peaks"])["batch 1, seq 128"] * 1e3,
      abs=0.06)
  assert rows[0]["conditions"] == "quiet: 2 of 2 rounds"
  from benchmarks import summary
  assert 0 < summary.share(rows[0]) and 0 < summary.ratio(rows[0])



@pytest.mark.slow
def test_small_matmuls_benchmark_table():
  from benchmarks.investigations import small_matmuls
  # measure() first checks that TF and onnxruntime compute the same.
  times = small_matmuls.measure([1, 3], repeats=1, threads=1,
                                      pause=0.0)
  assert sorted(times) == ["ORT", "TF", "TF, Eigen"]
  assert all(times[name][n] > 0 for name in times for n in (1, 3))
  table = small_matmuls.report(times, [1, 3])
  rows = [line for line in table.splitlines()[2:]]
  assert [row.split("|")[1].strip() for row in rows] == ["1", "3"]
  assert small_matmuls.flops(1) == 2.0 * 12 * (
      768 * 2304 + 768 * 768 + 768 * 3072 + 3072 * 768)
