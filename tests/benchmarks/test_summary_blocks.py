"""The figures blocks BENCHMARKS.md's first table is read from: each row
in the form its harness writes it, under its digest, within its ceiling;
anything else is refused in one line naming the section and the field
(test_summary.py holds the table itself)."""

import json
import os
import re
import subprocess
import sys

import pytest

from benchmarks import common
from benchmarks import figures
from benchmarks import run_all
from benchmarks import summary
from tests.benchmarks.summary_kit import ROOT
from tests.benchmarks.summary_kit import benchmarks_doc
from tests.benchmarks.summary_kit import figure_row
from tests.benchmarks.summary_kit import run_summary
from tests.benchmarks.summary_kit import section_with


def test_a_block_round_trips_with_its_digest(tmp_path):
  text = common.figures_block(figure_row())
  ((_, _, row),) = figures.read(text)
  assert row == dict(figure_row(), digest=figures.digest(figure_row()))
  assert re.fullmatch(r"[0-9a-f]{16}", row["digest"])
  figures.check(row, "Peak memory", run_all.HARNESSES)
  # Written again (a harness passing a row it read): the same block.
  assert common.figures_block(row) == text
  # Every field is under the digest.
  for field, value in (("reached", 1001), ("machine", "2-core AMD EPYC"),
                       ("ours", dict(figure_row()["ours"], value=999))):
    assert figures.digest(dict(row, **{field: value})) != row["digest"]
  (read,) = summary.current_rows(section_with(tmp_path).read_text())
  assert read == dict(row, section="Peak memory")


def test_a_hand_edited_figure_is_refused(tmp_path):
  """One figure changed in BENCHMARKS.md, the digest left: refused, in one
  line naming the section and the field, exit 1."""
  path = section_with(tmp_path)
  text = path.read_text()
  edited = text.replace('"value": 1000', '"value": 900', 1)
  assert edited != text
  path.write_text(edited)
  with pytest.raises(summary.FiguresError, match="field 'digest'"):
    summary.current_rows(edited)
  result = run_summary(f"--path={path}")
  assert result.returncode == 1 and not result.stdout
  assert result.stderr.count("\n") == 1, result.stderr
  assert ("section 'Peak memory': field 'digest': " in result.stderr and
          "does not match" in result.stderr), result.stderr
  # --write refused too: nothing rewritten.
  assert run_summary(f"--path={path}", "--write").returncode == 1
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
  row = {k: v for k, v in figure_row().items() if k != change.get("drop")}
  row.update({k: v for k, v in change.items() if k != "drop"})
  if case == "digest":
    text = f"{figures.START}\n{json.dumps(row)}\n{figures.END}"
  else:
    text = common.figures_block(row)
  path = section_with(tmp_path, text=text)
  with pytest.raises(summary.FiguresError) as error:
    summary.current_rows(path.read_text())
  message = str(error.value)
  assert message.startswith(f"section 'Peak memory': field '{field}': "), (
      message)
  assert why in message, message


def test_a_block_that_is_not_json_is_refused_in_one_line(tmp_path):
  path = section_with(tmp_path, text=f"{figures.START}\n{{\"job\": \n-->")
  result = run_summary(f"--path={path}")
  assert result.returncode == 1 and result.stderr.count("\n") == 1
  assert "section 'Peak memory': figures block" in result.stderr


@pytest.mark.parametrize("higher", [False, True])
def test_a_row_past_its_ceiling_is_refused_in_one_line(tmp_path, higher):
  """Ours at 101% of the ceiling (a time below it, a rate above it): the
  ceiling is not a limit; the refusal names the row. 100% passes."""
  at, past = (800, 792) if not higher else (800, 808)
  peer = dict(label="Model Garden", value=500 if higher else 2000, unit="MB")
  path = benchmarks_doc(tmp_path)
  common.update_benchmarks_md(
      "Peak memory", "x", stage="Memory", path=str(path),
      figures=[figure_row(higher_is_better=higher, reached=at, peer=peer)])
  assert len(summary.current_rows(path.read_text())) == 1
  common.update_benchmarks_md(
      "Peak memory", "x", stage="Memory", path=str(path),
      figures=[figure_row(higher_is_better=higher, reached=past, peer=peer)])
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
  path = benchmarks_doc(tmp_path)
  for peer_ms, refused in ((59.8, False), (59.0, True)):
    common.update_benchmarks_md(
        "Peak memory", "x", stage="Memory", path=str(path),
        figures=[figure_row(ours=ours, ceiling=ceiling, reached=71.8,
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
      figures=[figure_row(ours=ours, ceiling=ceiling, reached=71.8,
                          peer=dict(label="official", value=1, unit="s"))])
  assert len(summary.current_rows(path.read_text())) == 1
