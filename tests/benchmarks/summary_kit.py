"""Shared pieces of the first-table tests (test_summary.py,
test_summary_blocks.py, test_summary_harnesses.py): a crafted figures row as
a harness writes it, a BENCHMARKS.md with its markers and stages, a section
holding one block, and `python -m benchmarks.summary` run as users run it."""

import os
import pathlib
import subprocess
import sys

from benchmarks import common
from benchmarks import summary

ROOT = pathlib.Path(__file__).resolve().parents[2]
PNG = b"\x89PNG\r\n\x1a\n"


def figure_row(job="Memory, peak RSS", order=50, **extra):
  """A first-table row as a harness writes it; `extra` replaces fields."""
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


def benchmarks_doc(tmp_path, history=""):
  """A BENCHMARKS.md with the table markers, a Memory stage and a History
  holding `history`."""
  path = tmp_path / "BENCHMARKS.md"
  path.write_text(f"# Benchmarks\n\n{summary.START}\n\n{summary.END}\n\n"
                  "## Memory\n\nHarnesses write here.\n\n## History\n\n"
                  f"Old runs.\n{history}")
  return path


def section_with(tmp_path, row=None, text=None):
  """BENCHMARKS.md holding one section whose block is `row` as its harness
  writes it, or the block `text` as given."""
  path = benchmarks_doc(tmp_path)
  common.update_benchmarks_md("Peak memory", "x", stage="Memory",
                              path=str(path), figures=[row or figure_row()])
  if text is not None:
    content = path.read_text()
    start = content.index(common.FIGURES_START)
    end = content.index("-->", start) + len("-->")
    path.write_text(content[:start] + text + content[end:])
  return path


def run_summary(*args):
  """`python -m benchmarks.summary ARGS` from the repository root."""
  return subprocess.run(
      [sys.executable, "-m", "benchmarks.summary", *args], cwd=ROOT,
      capture_output=True, text=True, timeout=300,
      env=dict(os.environ, PYTHONPATH=str(ROOT)))
