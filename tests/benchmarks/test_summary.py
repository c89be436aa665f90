"""BENCHMARKS.md's first table is generated from the sections' figures, and
only current figures in the form their harness writes can be in it; a
harness adds a row by writing its section; `summary --run` runs the
harnesses' short modes. No benchmark is run: the figures are the recorded
ones or crafted, the harnesses of --run fake ones in a tmp package."""

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

from benchmarks import common
from benchmarks import figures
from benchmarks import run_all
from benchmarks import summary

ROOT = pathlib.Path(__file__).resolve().parents[2]
PNG = b"\x89PNG\r\n\x1a\n"


def _row(job="Memory, peak RSS", order=50, **extra):
  row = dict(job=job, order=order,
             ours=dict(label="recomputation", value=1000, unit="MB"),
             peer=dict(label="Model Garden", value=2000, unit="MB"),
             higher_is_better=False,
             ceiling=dict(label="one micro-batch", value=800, unit="MB"),
             contender="baseline", reached=1000,
             machine="2-core Intel Xeon (AMX)", date="2026-11-26",
             command="python -m benchmarks.memory.peaks --write",
             conditions="quiet")
  row.update(extra)
  return row


def _doc(tmp_path, history=""):
  path = tmp_path / "BENCHMARKS.md"
  path.write_text(f"# Benchmarks\n\n{summary.START}\n\n{summary.END}\n\n"
                  "## Memory\n\nHarnesses write here.\n\n## History\n\n"
                  f"Old runs.\n{history}")
  return path


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
  assert cells == ["Memory, peak RSS [[1]](#summary-note-1)",
                   "1,000 MB (recomputation)",
                   "2,000 MB (baseline: Model Garden)", "2.00x", "80%",
                   "2-core Intel Xeon (AMX), 2026-11-26"]
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
  assert "| Memory, peak RSS [[1]](#summary-note-1) |" in text
  for name in ("summary.png", "memory.png"):
    assert (charts / name).read_bytes()[:8] == PNG, name


def test_data_creation_writes_its_row_only_from_a_large_local_run():
  from benchmarks.data import creation
  rates = {("local", 1): 25261.0, ("local", 2): 44407.0}
  official = {"rate": 985.0}
  (row,) = creation.figures(rates, "python -m benchmarks.data.creation",
                            creation.MIN_COPIES, "", official)
  assert row["ceiling"]["value"] == 50522 and row["reached"] == 44407
  assert f"{summary.share(row):.0%}" == "88%"
  # Ours and reached are one figure: 2 workers against the official
  # script's one process (it has no workers).
  assert row["ours"]["value"] == row["reached"] == 44407
  assert f"{summary.ratio(row):.2f}x" == "45.08x"
  assert "peer_run" not in row  # the official script ran in this run
  assert creation.figures(rates, "x", 16, "", None) == []  # no peer run
  small = creation.MIN_COPIES - 1
  assert creation.figures(rates, "x", small, "", official) == []
  assert creation.figures(rates, "x", 16, "2", official) == []  # with Beam
  assert creation.figures({("local", 1): 1.0}, "x", 16, "", official) == []


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
  # The summary accepts every label the function writes, this machine's too.
  assert figures.MACHINE.fullmatch(want)
  assert figures.MACHINE.fullmatch(common.machine_label())


def _section_with(tmp_path, row=None, text=None):
  """BENCHMARKS.md holding one section whose block is `row` as its harness
  writes it, or the block `text` as given."""
  path = _doc(tmp_path)
  common.update_benchmarks_md("Peak memory", "x", stage="Memory",
                              path=str(path), figures=[row or _row()])
  if text is not None:
    content = path.read_text()
    start = content.index(common.FIGURES_START)
    end = content.index("-->", start) + len("-->")
    path.write_text(content[:start] + text + content[end:])
  return path


def _summary(*args):
  return subprocess.run(
      [sys.executable, "-m", "benchmarks.summary", *args], cwd=ROOT,
      capture_output=True, text=True, timeout=300,
      env=dict(os.environ, PYTHONPATH=str(ROOT)))


def test_a_block_round_trips_with_its_digest(tmp_path):
  text = common.figures_block(_row())
  ((_, _, row),) = figures.read(text)
  assert row == dict(_row(), digest=figures.digest(_row()))
  assert re.fullmatch(r"[0-9a-f]{16}", row["digest"])
  figures.check(row, "Peak memory", run_all.HARNESSES)
  # Written again (a harness passing a row it read): the same block.
  assert common.figures_block(row) == text
  # Every field is under the digest.
  for field, value in (("reached", 1001), ("machine", "2-core AMD EPYC"),
                       ("ours", dict(_row()["ours"], value=999))):
    assert figures.digest(dict(row, **{field: value})) != row["digest"]
  (read,) = summary.current_rows(_section_with(tmp_path).read_text())
  assert read == dict(row, section="Peak memory")


def test_a_hand_edited_figure_is_refused(tmp_path):
  """One figure changed in BENCHMARKS.md, the digest left: refused, in one
  line naming the section and the field, exit 1."""
  path = _section_with(tmp_path)
  text = path.read_text()
  edited = text.replace('"value": 1000', '"value": 900', 1)
  assert edited != text
  path.write_text(edited)
  with pytest.raises(summary.FiguresError, match="field 'digest'"):
    summary.current_rows(edited)
  result = _summary(f"--path={path}")
  assert result.returncode == 1 and not result.stdout
  assert result.stderr.count("\n") == 1, result.stderr
  assert ("section 'Peak memory': field 'digest': " in result.stderr and
          "does not match" in result.stderr), result.stderr
  # --write refused too: nothing rewritten.
  assert _summary(f"--path={path}", "--write").returncode == 1
  assert path.read_text() == edited


_MALFORMED = {
    "missing": ({"drop": "contender"}, "contender", "missing"),
    "extra": ({"source": "by hand"}, "source", "not a field"),
    "type": ({"reached": "1000"}, "reached", "is not an integer or a number"),
    "bool": ({"order": True}, "order", "is not an integer"),
    "part": ({"peer": {"value": 2000, "unit": "MB"}}, "peer", "is not"),
    "part_type": ({"ceiling": {"value": "800", "unit": "MB", "label": ""}},
                  "ceiling.value", "is not"),
    "contender": ({"contender": "same run"}, "contender", "is not one of"),
    "machine": ({"machine": "2-core CPU (model not recorded)"}, "machine",
                "machine_label"),
    "machine_peak": ({"machine": "2-core CPU, float32 matmul peak 287 "
                      "GFLOP/s (AMX)"}, "machine", "machine_label"),
    "date": ({"date": "26-11-2026"}, "date", "YYYY-MM-DD"),
    "no_such_day": ({"date": "2026-11-31"}, "date", "YYYY-MM-DD"),
    "not_a_harness": ({"command": "python -m benchmarks.memory.peak --write"},
                      "command", "not `python -m"),
    "not_python_m": ({"command": "python benchmarks/memory/peaks.py"},
                     "command", "not `python -m"),
    "digest": ({"digest": "0" * 16}, "digest", "does not match"),
    "peer_run_same_run": ({"peer_run": "2-core AMD EPYC, 2026-11-22",
                           "peer": {"label": "official script, same run",
                                    "value": 985, "unit": "instances/s"}},
                          "peer.label", "'same run' of a peer"),
}


@pytest.mark.parametrize("case", sorted(_MALFORMED))
def test_a_block_not_in_its_harness_form_is_refused(case, tmp_path):
  """Each written with a matching digest (figures.block), so only the
  field in question is wrong; the digest case writes one by hand."""
  change, field, why = _MALFORMED[case]
  row = {k: v for k, v in _row().items() if k != change.get("drop")}
  row.update({k: v for k, v in change.items() if k != "drop"})
  if case == "digest":
    text = f"{figures.START}\n{json.dumps(row)}\n{figures.END}"
  else:
    text = common.figures_block(row)
  path = _section_with(tmp_path, text=text)
  with pytest.raises(summary.FiguresError) as error:
    summary.current_rows(path.read_text())
  message = str(error.value)
  assert message.startswith(f"section 'Peak memory': field '{field}': "), (
      message)
  assert why in message, message


def test_a_block_that_is_not_json_is_refused_in_one_line(tmp_path):
  path = _section_with(tmp_path, text=f"{figures.START}\n{{\"job\": \n-->")
  result = _summary(f"--path={path}")
  assert result.returncode == 1 and result.stderr.count("\n") == 1
  assert "section 'Peak memory': figures block" in result.stderr


def test_an_undigested_block_is_refused_unless_allowed(tmp_path):
  """Blocks written before digests: refused; --allow_undigested accepts
  them (their other fields still checked) and is used nowhere else."""
  row = _row()
  path = _section_with(tmp_path, text=(
      f"{figures.START}\n{json.dumps(row)}\n{figures.END}"))
  result = _summary(f"--path={path}")
  assert result.returncode == 1
  assert "field 'digest': missing" in result.stderr, result.stderr
  result = _summary(f"--path={path}", "--allow_undigested")
  assert result.returncode == 0, result.stderr
  assert "| Memory, peak RSS [[1]]" in result.stdout
  bad = _section_with(tmp_path, text=(
      f"{figures.START}\n{json.dumps(dict(row, date='today'))}\n"
      f"{figures.END}"))
  assert _summary(f"--path={bad}", "--allow_undigested").returncode == 1
  users = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
           if p.suffix in (".py", ".md", ".yml", ".yaml", ".toml", ".cfg")
           or p.name == "Makefile"
           if ".venv" not in p.parts and "build" not in p.parts
           and p.is_file() and "--allow_undigested" in p.read_text(
               errors="replace")]
  assert sorted(users) == ["benchmarks/summary.py",
                           "tests/benchmarks/test_summary.py"], users


def _rows_for_the_table():
  peer = _row(job="Serving, batch 1 (ALBERT-base, float32)", order=40,
              contender="peer",
              ours=dict(label="TF SavedModel", value=182, unit="ms"),
              peer=dict(label="ONNX Runtime float32, 2 threads (fastest)",
                        value=149, unit="ms"),
              ceiling=dict(label="matmul rate at the batch's shapes",
                           value=117, unit="ms"), reached=182,
              command="python -m benchmarks.serving.runtimes --write")
  own_run = _row(job="Data creation", order=10, contender="peer",
                 higher_is_better=True,
                 ours=dict(label="one process", value=25261,
                           unit="instances/s"),
                 peer=dict(label="official script", value=985,
                           unit="instances/s"),
                 ceiling=dict(label="2 cores x one process", value=50522,
                              unit="instances/s"), reached=44407,
                 peer_run="2-core AMD EPYC (Zen 4), 2026-11-22",
                 command="python -m benchmarks.data.creation --write")
  return [_row(), peer, own_run]


def test_the_table_has_six_short_columns_and_numbered_notes(tmp_path):
  path = _doc(tmp_path)
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


@pytest.mark.parametrize("higher", [False, True])
def test_a_row_past_its_ceiling_is_refused_in_one_line(tmp_path, higher):
  """Ours at 101% of the ceiling (a time below it, a rate above it): the
  ceiling is not a limit; the refusal names the row. 100% passes."""
  at, past = (800, 792) if not higher else (800, 808)
  peer = dict(label="Model Garden", value=500 if higher else 2000, unit="MB")
  path = _doc(tmp_path)
  common.update_benchmarks_md(
      "Peak memory", "x", stage="Memory", path=str(path),
      figures=[_row(higher_is_better=higher, reached=at, peer=peer)])
  assert len(summary.current_rows(path.read_text())) == 1
  common.update_benchmarks_md(
      "Peak memory", "x", stage="Memory", path=str(path),
      figures=[_row(higher_is_better=higher, reached=past, peer=peer)])
  with pytest.raises(summary.FiguresError,
                     match="row 'Memory, peak RSS': ours reached 101% of its "
                     "ceiling"):
    summary.current_rows(path.read_text())
  result = subprocess.run(
      [sys.executable, "-m", "benchmarks.summary", f"--path={path}"],
      cwd=ROOT, capture_output=True, text=True,
      env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)
  assert result.returncode == 1 and result.stderr.count("\n") == 1
  assert "Memory, peak RSS" in result.stderr


def test_a_peer_past_the_ceiling_is_refused_in_one_line(tmp_path):
  """The review's serving row: ORT at 59.0 ms under a 59.8 ms ceiling of
  TensorFlow's matmuls alone. A peer in the ceiling's unit may not pass it
  either; one in another unit is not compared."""
  ceiling = dict(label="matmul peak", value=59.8, unit="ms")
  ours = dict(label="TF SavedModel", value=71.8, unit="ms")
  path = _doc(tmp_path)
  for peer_ms, refused in ((59.8, False), (59.0, True)):
    common.update_benchmarks_md(
        "Peak memory", "x", stage="Memory", path=str(path),
        figures=[_row(ours=ours, ceiling=ceiling, reached=71.8,
                      peer=dict(label="ORT float32", value=peer_ms,
                                unit="ms"))])
    if not refused:
      assert len(summary.current_rows(path.read_text())) == 1
      continue
    with pytest.raises(summary.FiguresError,
                       match=r"row 'Memory, peak RSS': its peer \(ORT "
                       r"float32\) reached 101% of its ceiling"):
      summary.current_rows(path.read_text())
  common.update_benchmarks_md(
      "Peak memory", "x", stage="Memory", path=str(path),
      figures=[_row(ours=ours, ceiling=ceiling, reached=71.8,
                    peer=dict(label="official", value=1, unit="s"))])
  assert len(summary.current_rows(path.read_text())) == 1


def test_a_row_carries_the_load_its_harness_measured(tmp_path):
  """Pretraining step, memory and data creation write the other
  processes' cores over their run; a loaded speed row is refused."""
  from benchmarks.data import creation
  from benchmarks.memory import peaks
  from benchmarks.pretraining import step
  assert common.load_conditions(0.04) == ("quiet: other processes 0.04 "
                                          "cores over the run")
  assert common.load_conditions(0.5).startswith("loaded: ")
  plot = [dict(label="base", size="base", mode="float32", ours=3.4,
               garden=2.3, ceiling=4.25, peak=287e9, reached=0.8)]
  (row,) = step.figures(plot, 8, 128, "2-core AMD EPYC", "python -m "
                        "benchmarks.pretraining.step", others=0.6)
  assert row["conditions"].endswith("loaded: other processes 0.60 cores "
                                    "over the run")
  path = _doc(tmp_path)
  common.update_benchmarks_md("Step", "x", stage="Memory", path=str(path),
                              figures=[row])
  with pytest.raises(summary.FiguresError, match="cannot be current"):
    summary.current_rows(path.read_text())
  (row,) = creation.figures({("local", 1): 10.0, ("local", 2): 19.0}, "x",
                            creation.MIN_COPIES, "", {"rate": 1.0},
                            "2-core AMD EPYC", others=0.02)
  assert row["conditions"] == ("quiet: other processes 0.02 cores over the "
                               "run")
  configs = [dict(size="base", seq=512, batch=4, on_mib=900.0,
                  off_mib=3000.0, plan_on_mib=700.0)]
  (row,) = peaks.figures(configs, "2-core AMD EPYC", "x", others=0.3)
  assert row["conditions"].endswith("other processes 0.30 cores over the "
                                    "run")
  assert "over the built model" in row["ours"]["label"]
  assert "over the built model" in row["peer"]["label"]
