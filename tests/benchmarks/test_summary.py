"""BENCHMARKS.md's first table is generated from the sections' figures, and
only current figures can be in it; a harness adds a row by writing its
section. No benchmark is run: the figures are the recorded ones or crafted."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

from benchmarks import common
from benchmarks import summary

ROOT = pathlib.Path(__file__).resolve().parents[2]
PNG = b"\x89PNG\r\n\x1a\n"


def _row(job="Memory, peak RSS", order=50, **extra):
  row = dict(job=job, order=order,
             ours=dict(label="recomputation", value=1000, unit="MB"),
             peer=dict(label="Model Garden", value=2000, unit="MB"),
             higher_is_better=False,
             ceiling=dict(label="one micro-batch", value=800, unit="MB"),
             reached=1000, machine="2-core test machine", date="2026-11-26",
             command="python -m benchmarks.memory.peak --write",
             conditions="quiet")
  row.update(extra)
  return row


def _doc(tmp_path, history=""):
  path = tmp_path / "BENCHMARKS.md"
  path.write_text(f"# Benchmarks\n\n{summary.START}\n\n{summary.END}\n\n"
                  "## Memory\n\nHarnesses write here.\n\n## History\n\n"
                  f"Old runs.\n{history}")
  return path


def test_benchmarks_md_first_table_is_the_generated_one():
  text = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
  assert summary.render(text) == text, (
      "run `python -m benchmarks.summary --write`")
  # It is the first thing after the title and its paragraph.
  assert text.index(summary.START) < text.index("\n## ")
  rows = summary.current_rows(text)
  jobs = [r["job"] for r in rows]
  for stage in ("Data creation", "Pretraining step", "Fine-tuning",
                "Serving, batch 1", "Serving, batch 32"):
    assert any(job.startswith(stage) for job in jobs), (stage, jobs)


def test_the_summary_command_prints_the_table_benchmarks_md_has():
  result = subprocess.run(
      [sys.executable, "-m", "benchmarks.summary"], cwd=ROOT,
      capture_output=True, text=True, timeout=300,
      env=dict(os.environ, PYTHONPATH=str(ROOT)))
  assert result.returncode == 0, result.stderr[-2000:]
  printed = result.stdout.strip()
  text = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
  first = text.split(summary.START, 1)[1].split(summary.END, 1)[0].strip()
  assert printed == first
  assert len(printed.splitlines()) >= 2 + 6  # header, rule, six jobs


def test_no_first_table_row_comes_from_a_loaded_or_superseded_run():
  text = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
  found = summary.read_figures(text)
  assert found
  for stage, section, row in found:
    assert stage != summary.HISTORY, section
    assert not re.search(r"loaded|superseded", row["conditions"]), section
    # The section the row stands for is not marked as loaded either.
    body = text.split(f"### {section}\n", 1)[1].split("\n### ", 1)[0]
    assert "measured under load" not in body, section
    for key in ("machine", "date", "command"):
      assert row[key], (section, key)
    assert row["command"].startswith("python -m benchmarks."), section


def test_every_chart_the_page_shows_is_a_committed_png():
  text = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
  images = re.findall(r"!\[[^\]]*\]\((benchmarks/charts/[\w.]+\.png)\)",
                      text)
  assert "benchmarks/charts/summary.png" in images
  for image in images:
    assert (ROOT / image).read_bytes()[:8] == PNG, image
    assert (ROOT / image).stat().st_size < 200_000, image


def test_ratio_and_share_follow_the_unit():
  """Times: the peer's over ours (182 ms against 149 is 0.82x, not
  1.22x); rates: ours over the peer's."""
  latency = _row(ours=dict(label="", value=182, unit="ms"),
                 peer=dict(label="", value=149, unit="ms"),
                 ceiling=dict(label="", value=117, unit="ms"), reached=182)
  assert summary.ratio(latency) == pytest.approx(149 / 182)
  assert summary.share(latency) == pytest.approx(117 / 182)
  rate = dict(latency, higher_is_better=True)
  assert summary.ratio(rate) == pytest.approx(182 / 149)
  assert summary.share(rate) == pytest.approx(182 / 117)


def test_a_harness_adds_a_row_by_writing_its_section(tmp_path):
  path = _doc(tmp_path)
  common.update_benchmarks_md("Peak memory", "| a |\n| --- |\n| 1 |",
                              figures=[_row()], stage="Memory",
                              path=str(path))
  text = path.read_text()
  # The section went to its stage, before History.
  assert text.index("### Peak memory") < text.index("## History")
  assert text.index("## Memory") < text.index("### Peak memory")
  rendered = summary.render(text)
  line = next(x for x in rendered.splitlines()
              if x.startswith("| Memory, peak RSS"))
  cells = [c.strip() for c in line.strip("|").split("|")]
  assert cells[1:6] == ["1,000 MB (recomputation)", "2,000 MB (Model Garden)",
                        "2.00x", "800 MB (one micro-batch)", "80%"]
  # A rerun replaces the section and its figures, not adds a second row.
  common.update_benchmarks_md("Peak memory", "rerun", stage="Memory",
                              figures=[_row(reached=900)], path=str(path))
  text = path.read_text()
  assert text.count("### Peak memory") == 1
  assert [r["reached"] for r in summary.current_rows(text)] == [900]


@pytest.mark.parametrize("where", ["history", "loaded"])
def test_a_loaded_or_history_figure_is_refused(tmp_path, where):
  if where == "history":
    path = _doc(tmp_path, history="\n### Old\n\nx\n\n" +
                common.figures_block(_row()) + "\n")
  else:
    path = _doc(tmp_path)
    common.update_benchmarks_md(
        "Peak memory", "x", stage="Memory", path=str(path),
        figures=[_row(conditions="loaded: load average 6")])
  with pytest.raises(summary.FiguresError, match="cannot be current"):
    summary.current_rows(path.read_text())
  result = subprocess.run(
      [sys.executable, "-m", "benchmarks.summary", f"--path={path}"],
      cwd=ROOT, capture_output=True, text=True,
      env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)
  assert result.returncode == 1
  assert result.stderr.count("\n") == 1 and "cannot be current" in (
      result.stderr), result.stderr


def test_the_command_writes_the_table_and_the_charts(tmp_path):
  path = _doc(tmp_path)
  chart = dict(name="memory", kind="lines", title="Peak memory",
               x_label="sequence length", unit="MB",
               series={"ours": [[128, 900], [512, 2000]],
                       "Model Garden": [[128, 1200], [512, 3100]]})
  common.update_benchmarks_md("Peak memory", "x", stage="Memory",
                              path=str(path), figures=[_row(chart=chart)])
  charts = tmp_path / "charts"
  result = subprocess.run(
      [sys.executable, "-m", "benchmarks.summary", f"--path={path}",
       "--write", f"--charts={charts}"],
      cwd=ROOT, capture_output=True, text=True,
      env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)
  assert result.returncode == 0, result.stderr[-2000:]
  text = path.read_text()
  assert summary.render(text) == text
  assert "| Memory, peak RSS |" in text
  for name in ("summary.png", "memory.png"):
    assert (charts / name).read_bytes()[:8] == PNG, name


def test_data_creation_writes_its_row_only_from_a_large_local_run():
  from benchmarks.data import creation
  rates = {("local", 1): 25261.0, ("local", 2): 44407.0}
  (row,) = creation.figures(rates, "python -m benchmarks.data.creation", 16,
                            "")
  assert row["ceiling"]["value"] == 50522 and row["reached"] == 44407
  assert f"{summary.share(row):.0%}" == "88%"
  assert f"{summary.ratio(row):.2f}x" == "25.65x"
  assert creation.figures(rates, "x", 4, "") == []  # a small corpus
  assert creation.figures(rates, "x", 16, "2") == []  # with Beam
  assert creation.figures({("local", 1): 1.0}, "x", 16, "") == []


def test_pretraining_step_write_feeds_the_first_table(tmp_path, monkeypatch):
  """step --write: its section under Pretraining, the chart, and a row the
  summary reads, from the run's numbers (fabricated here)."""
  import argparse

  from benchmarks import charts
  from benchmarks.pretraining import step
  path = tmp_path / "BENCHMARKS.md"
  path.write_text(f"# Benchmarks\n\n{summary.START}\n\n{summary.END}\n\n"
                  "## Pretraining\n\nIntro.\n\n## History\n\nOld.\n")
  monkeypatch.setattr(common, "BENCHMARKS_MD", str(path))
  monkeypatch.setattr(charts, "CHARTS_DIR", str(tmp_path / "charts"))
  plot = [dict(label="base\nfloat32", size="base", mode="float32", ours=3.4,
               garden=2.3, ceiling=4.25, peak=287e9, reached=0.8)]
  args = argparse.Namespace(sizes="base", batch_size=8, seq_length=128,
                            repeats=6, modes="float32")
  step._write(args, "| model |\n| --- |\n| base |", plot)
  text = path.read_text()
  assert text.index("## Pretraining") < text.index("### Pretraining step")
  assert text.index("### Pretraining step") < text.index("## History")
  (row,) = summary.current_rows(text)
  assert f"{summary.ratio(row):.2f}x" == "1.48x"
  assert f"{summary.share(row):.0%}" == "80%"
  assert row["command"].startswith("python -m benchmarks.pretraining.step")
  png = tmp_path / "charts" / "pretraining_step.png"
  assert png.read_bytes()[:8] == PNG


@pytest.mark.parametrize("model,flags,want", [
    ("Intel(R) Xeon(R) Processor", "fpu avx512f amx_bf16 amx_tile amx_int8",
     "2-core Intel Xeon (AMX)"),
    ("Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", "fpu avx512f",
     "2-core Intel Xeon"),
    ("AMD EPYC 9R14 96-Core Processor", "fpu avx512f", "2-core AMD EPYC"),
    ("Apple M2", "", "2-core Apple M2"),
])
def test_machine_label_names_cores_family_and_amx(model, flags, want):
  cpuinfo = (f"processor\t: 0\nmodel name\t: {model}\nflags\t\t: {flags}\n"
             f"\nprocessor\t: 1\nmodel name\t: {model}\nflags\t\t: {flags}\n")
  assert common.machine_label(cpuinfo, cores=2) == want
