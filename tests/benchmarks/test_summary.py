"""BENCHMARKS.md's first table is generated from the sections' figures, and
only current figures in the form their harness writes can be in it; a
harness adds a row by writing its section; `summary --run` runs the
harnesses' short modes. No benchmark is run: the figures are the recorded
ones or crafted, the harnesses of --run fake ones in a tmp package.
The blocks' form: test_summary_blocks.py; the harnesses' rows:
test_summary_harnesses.py."""

import json
import os
import re
import subprocess
import sys

import pytest

from benchmarks import common
from benchmarks import figures
from benchmarks import summary
from tests.benchmarks.summary_kit import PNG
from tests.benchmarks.summary_kit import ROOT
from tests.benchmarks.summary_kit import benchmarks_doc
from tests.benchmarks.summary_kit import figure_row
from tests.benchmarks.summary_kit import run_summary
from tests.benchmarks.summary_kit import section_with


# BENCHMARKS.md's blocks were written before the digest and the contender
# field; `python -m benchmarks.summary --run` rewrites them all. Then these
# pass, and strict=True makes them fail until the marker is removed.
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
  summary.current_rows((ROOT / "BENCHMARKS.md").read_text(encoding="utf-8"))
  result = subprocess.run(
      [sys.executable, "-m", "benchmarks.summary"], cwd=ROOT,
      capture_output=True, text=True, timeout=300,
      env=dict(os.environ, PYTHONPATH=str(ROOT)))
  assert result.returncode == 0, result.stderr[-2000:]
  printed = result.stdout.strip()
  text = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
  first = text.split(summary.START, 1)[1].split(summary.END, 1)[0].strip()
  assert printed == first
  assert len(printed.splitlines()) >= 2 + 6 + 2 + 6  # table, six notes


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
  latency = figure_row(ours=dict(label="", value=182, unit="ms"),
                       peer=dict(label="", value=149, unit="ms"),
                       ceiling=dict(label="", value=117, unit="ms"),
                       reached=182)
  assert summary.ratio(latency) == pytest.approx(149 / 182)
  assert summary.share(latency) == pytest.approx(117 / 182)
  rate = dict(latency, higher_is_better=True)
  assert summary.ratio(rate) == pytest.approx(182 / 149)
  assert summary.share(rate) == pytest.approx(182 / 117)


def test_a_harness_adds_a_row_by_writing_its_section(tmp_path):
  path = benchmarks_doc(tmp_path)
  common.update_benchmarks_md("Peak memory", "| a |\n| --- |\n| 1 |",
                              figures=[figure_row()], stage="Memory",
                              path=str(path))
  text = path.read_text()
  # The section went to its stage, before History.
  assert text.index("### Peak memory") < text.index("## History")
  assert text.index("## Memory") < text.index("### Peak memory")
  rendered = summary.render(text)
  line = next(x for x in rendered.splitlines()
              if x.startswith("| Memory, peak RSS"))
  cells = [c.strip() for c in line.strip("|").split("|")]
  assert cells == ["Memory, peak RSS [[1]](#summary-note-1)",
                   "1,000 MB (recomputation)",
                   "2,000 MB (baseline: Model Garden)", "2.00x", "80%",
                   "2-core Intel Xeon (AMX), 2026-11-26"]
  # A rerun replaces the section and its figures, not adds a second row.
  common.update_benchmarks_md("Peak memory", "rerun", stage="Memory",
                              figures=[figure_row(reached=900)], path=str(path))
  text = path.read_text()
  assert text.count("### Peak memory") == 1
  assert [r["reached"] for r in summary.current_rows(text)] == [900]


@pytest.mark.parametrize("where", ["history", "loaded"])
def test_a_loaded_or_history_figure_is_refused(tmp_path, where):
  if where == "history":
    path = benchmarks_doc(tmp_path, history="\n### Old\n\nx\n\n" +
                          common.figures_block(figure_row()) + "\n")
  else:
    path = benchmarks_doc(tmp_path)
    common.update_benchmarks_md(
        "Peak memory", "x", stage="Memory", path=str(path),
        figures=[figure_row(conditions="loaded: load average 6")])
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
  path = benchmarks_doc(tmp_path)
  chart = dict(name="memory", kind="lines", title="Peak memory",
               x_label="sequence length", unit="MB",
               series={"ours": [[128, 900], [512, 2000]],
                       "Model Garden": [[128, 1200], [512, 3100]]})
  common.update_benchmarks_md("Peak memory", "x", stage="Memory",
                              path=str(path), figures=[figure_row(chart=chart)])
  charts = tmp_path / "charts"
  result = subprocess.run(
      [sys.executable, "-m", "benchmarks.summary", f"--path={path}",
       "--write", f"--charts={charts}"],
      cwd=ROOT, capture_output=True, text=True,
      env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)
  assert result.returncode == 0, result.stderr[-2000:]
  text = path.read_text()
  assert summary.render(text) == text
  assert "| Memory, peak RSS [[1]](#summary-note-1) |" in text
  for name in ("summary.png", "memory.png"):
    assert (charts / name).read_bytes()[:8] == PNG, name


def test_an_undigested_block_is_refused_unless_allowed(tmp_path):
  """Blocks written before digests: refused; --allow_undigested accepts
  them (their other fields still checked) and is used nowhere else."""
  row = figure_row()
  path = section_with(tmp_path, text=(
      f"{figures.START}\n{json.dumps(row)}\n{figures.END}"))
  result = run_summary(f"--path={path}")
  assert result.returncode == 1
  assert "field 'digest': missing" in result.stderr, result.stderr
  result = run_summary(f"--path={path}", "--allow_undigested")
  assert result.returncode == 0, result.stderr
  assert "| Memory, peak RSS [[1]]" in result.stdout
  bad = section_with(tmp_path, text=(
      f"{figures.START}\n{json.dumps(dict(row, date='today'))}\n"
      f"{figures.END}"))
  assert run_summary(f"--path={bad}", "--allow_undigested").returncode == 1
  users = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
           if p.suffix in (".py", ".md", ".yml", ".yaml", ".toml", ".cfg")
           or p.name == "Makefile"
           if ".venv" not in p.parts and "build" not in p.parts
           and p.is_file() and "--allow_undigested" in p.read_text(
               errors="replace")]
  assert sorted(users) == ["benchmarks/summary.py",
                           "tests/benchmarks/test_summary.py"], users


def _rows_for_the_table():
  peer = figure_row(job="Serving, batch 1 (ALBERT-base, float32)", order=40,
                    contender="peer",
                    ours=dict(label="TF SavedModel", value=182, unit="ms"),
                    peer=dict(label="ONNX Runtime float32, 2 threads (fastest)",
                              value=149, unit="ms"),
                    ceiling=dict(label="matmul rate at the batch's shapes",
                                 value=117, unit="ms"), reached=182,
                    command="python -m benchmarks.serving.runtimes --write")
  own_run = figure_row(job="Data creation", order=10, contender="peer",
                       higher_is_better=True,
                       ours=dict(label="one process", value=25261,
                                 unit="instances/s"),
                       peer=dict(label="official script", value=985,
                                 unit="instances/s"),
                       ceiling=dict(label="2 cores x one process", value=50522,
                                    unit="instances/s"), reached=44407,
                       peer_run="2-core AMD EPYC (Zen 4), 2026-11-22",
                       command="python -m benchmarks.data.creation --write")
  return [figure_row(), peer, own_run]


def test_the_table_has_six_short_columns_and_numbered_notes(tmp_path):
  path = benchmarks_doc(tmp_path)
  common.update_benchmarks_md("Rows", "x", stage="Memory", path=str(path),
                              figures=_rows_for_the_table())
  body = summary.render(path.read_text()).split(summary.START)[1].split(
      summary.END)[0].strip()
  lines = body.splitlines()
  assert lines[0] == ("| job | ours | peer or baseline | ratio | "
                      "% of ceiling | machine, date |")
  rows = lines[2:5]
  jobs = ["Data creation", "Serving, batch 1 (ALBERT-base, float32)",
          "Memory, peak RSS"]  # in `order`
  for n, (job, line) in enumerate(zip(jobs, rows), 1):
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert len(cells) == 6, line
    # The job's name, its details in the note it points to.
    assert cells[0] == f"{job.split(' (')[0]} [[{n}]](#summary-note-{n})"
    assert "python -m" not in line and "ceiling" not in line
    note = next(x for x in lines if x.startswith(f"{n}. "))
    assert f'<a id="summary-note-{n}"></a>**{job}**: ours ' in note
    assert note.endswith("--write`")
  data, serving, memory = rows
  assert "| 985 instances/s (official script; its own run, note 1) |" in data
  assert "same run" not in body.split("\n\n")[0]
  assert "measured in its own run: 2-core AMD EPYC (Zen 4), 2026-11-22" in (
      body)
  # A label's head in the cell, all of it in the note.
  assert "| 182 ms (TF SavedModel) | 149 ms (ONNX Runtime float32) | 0.82x | " \
         "64% | 2-core Intel Xeon (AMX), 2026-11-26 |" in serving
  assert "against peer 149 ms (ONNX Runtime float32, 2 threads (fastest)); " \
         "ceiling 117 ms (matmul rate at the batch's shapes), reached 182 " \
         "ms; quiet." in body
  assert "| 2,000 MB (baseline: Model Garden) |" in memory
  assert "against baseline 2,000 MB (Model Garden)" in body


def test_a_cell_shows_a_label_up_to_its_first_comma_outside_parentheses():
  assert summary.short("Hugging Face, dynamic padding") == "Hugging Face"
  assert summary.short("patience 8 (auto, 10 of 12), acc 0.4") == (
      "patience 8 (auto, 10 of 12)")
  assert summary.short("official script; measured once") == "official script"
  assert summary.short("ONNX Runtime float32") == "ONNX Runtime float32"


def test_the_front_doors_quote_no_figure_of_the_table():
  """README.md and docs/index.md point to the first table instead of
  restating its figures, which a rerun would leave stale."""
  rows = [row for _, _, row in summary.read_figures(
      (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8"))]
  assert rows
  for page in ("README.md", "docs/index.md"):
    text = (ROOT / page).read_text(encoding="utf-8")
    assert "benchmarks.md" in text.lower(), page
    assert not re.search(r"GFLOP/s|matmul peak|% of the", text), page
    for row in rows:
      assert f"{summary.ratio(row):.2f}x" not in text, (page, row["job"])
      ours = summary.number(row["ours"]["value"])
      assert not re.search(rf"\b{re.escape(ours)}\b", text), (page, ours)
