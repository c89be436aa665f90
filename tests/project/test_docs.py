"""The README front door and the docs site (docs/, mkdocs.yml).

- The README fits on a few screens and links every page.
- `mkdocs build --strict` builds the site, and fails on a page missing from
  the nav, a broken link and a broken anchor (shown on a broken copy).
- Every command block marked as tested names a test that exists and runs
  the block's tools. The marker is one line just before the block:

      *Tested by* `tests/path/test_file.py::test_name`

  Unmarked blocks are examples (docs/index.md says so).

No TensorFlow here: the tests read files and run mkdocs.
"""

import ast
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(p.name for p in DOCS.glob("*.md"))
MARKER = re.compile(r"^\*Tested by\* `(?P<path>[^`:]+)::(?P<name>\w+)`$")
FENCE = re.compile(r"^```(\w*)$")


def _mkdocs(config_dir, site_dir):
  """`mkdocs build --strict` of config_dir/mkdocs.yml, run in config_dir
  (the snippets' base path)."""
  return subprocess.run(
      [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
       str(site_dir), "--config-file", str(config_dir / "mkdocs.yml")],
      cwd=config_dir, capture_output=True, text=True, timeout=300,
      env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))


def test_the_readme_is_a_front_door():
  lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
  assert len(lines) <= 250, len(lines)


def test_the_readme_links_every_page():
  readme = (ROOT / "README.md").read_text(encoding="utf-8")
  linked = set(re.findall(r"\]\(docs/([\w-]+\.md)(?:#[\w-]*)?\)", readme))
  assert PAGES and set(PAGES) <= linked, sorted(set(PAGES) - linked)


def test_every_page_is_in_the_nav():
  config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
  in_nav = [page for entry in config["nav"] for page in entry.values()]
  assert sorted(in_nav) == PAGES


@pytest.mark.parametrize("page", [p for p in PAGES if p != "benchmarks.md"])
def test_each_page_starts_by_saying_what_it_is_for(page):
  """A title, then a paragraph (not a command, list or table)."""
  lines = (DOCS / page).read_text(encoding="utf-8").splitlines()
  assert lines[0].startswith("# ") and not lines[1].strip(), page
  assert lines[2] and lines[2][0].isalpha(), (page, lines[2])


def test_the_benchmarks_page_is_benchmarks_md_itself():
  """BENCHMARKS.md stays at the root; the page includes it unchanged."""
  assert (DOCS / "benchmarks.md").read_text() == '--8<-- "BENCHMARKS.md"\n'


def test_the_site_builds_strictly(tmp_path):
  result = _mkdocs(ROOT, tmp_path / "site")
  assert result.returncode == 0, result.stderr[-3000:]
  # BENCHMARKS.md was included, its figure with it.
  benchmarks = (tmp_path / "site" / "benchmarks" / "index.html").read_text()
  assert "% of ceiling" in benchmarks and "History" in benchmarks
  charts = tmp_path / "site" / "benchmarks" / "charts"
  for chart in (ROOT / "benchmarks" / "charts").glob("*.png"):
    assert (charts / chart.name).exists(), chart.name


def _copy_of_the_docs(folder):
  """docs/, mkdocs.yml and what the benchmarks page includes, in folder."""
  shutil.copytree(DOCS, folder / "docs", symlinks=True)
  shutil.copy(ROOT / "mkdocs.yml", folder)
  shutil.copy(ROOT / "BENCHMARKS.md", folder)
  shutil.copytree(ROOT / "benchmarks" / "charts",
                  folder / "benchmarks" / "charts")


@pytest.mark.parametrize("breakage", ["not_in_nav", "link", "anchor"])
def test_a_strict_build_fails_on_a_broken_copy(breakage, tmp_path):
  _copy_of_the_docs(tmp_path)
  index = tmp_path / "docs" / "index.md"
  if breakage == "not_in_nav":
    (tmp_path / "docs" / "orphan.md").write_text("# Orphan\n\nNo nav.\n")
    expected = "orphan.md"
  elif breakage == "link":
    index.write_text(index.read_text() + "\n[gone](no-such-page.md)\n")
    expected = "no-such-page.md"
  else:
    index.write_text(index.read_text() +
                     "\n[gone](finetuning.md#no-such-section)\n")
    expected = "#no-such-section"
  result = _mkdocs(tmp_path, tmp_path / "site")
  assert result.returncode != 0, result.stderr[-3000:]
  assert expected in result.stderr, result.stderr[-3000:]


def _marker_lines():
  """(page, line number, line) of every line that starts like a marker."""
  for page in PAGES:
    lines = (DOCS / page).read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
      if line.lstrip().lower().startswith(("*tested by", "tested by")):
        yield page, i + 1, line


def test_every_marker_is_well_formed():
  """A typo would otherwise turn a marker into an unchecked line."""
  wrong = [m for m in _marker_lines() if not MARKER.match(m[2])]
  assert not wrong, wrong


def _marked_blocks():
  """(page, line number, test path, test name, block text) of every
  marker, with the code block that follows it (None if there is none)."""
  marked = []
  for page, number, line in _marker_lines():
    match = MARKER.match(line)
    if not match:
      continue
    lines = (DOCS / page).read_text(encoding="utf-8").splitlines()
    j = number
    while j < len(lines) and not lines[j].strip():
      j += 1
    block = None
    if j < len(lines) and FENCE.match(lines[j]):
      block = "\n".join(lines[j + 1:lines.index("```", j + 1)])
    marked.append((page, number, match["path"], match["name"], block))
  return marked


def test_some_commands_are_marked():
  assert len(_marked_blocks()) >= 10


@pytest.mark.parametrize("marked", _marked_blocks(),
                         ids=lambda m: f"{m[0]}:{m[1]}")
def test_a_marked_command_is_run_by_its_test(marked):
  """The marker names a test function that exists, in a file that runs
  every `python -m` module of the block (tools.X as X or tools.X)."""
  page, line, path, name, block = marked
  assert block is not None, f"{page}:{line}: no code block after the marker"
  test_file = ROOT / path
  assert path.startswith("tests/") and test_file.is_file(), (page, line)
  source = test_file.read_text(encoding="utf-8")
  functions = {node.name for node in ast.parse(source).body
               if isinstance(node, ast.FunctionDef)}
  assert name in functions, f"{page}:{line}: no {name} in {path}"
  modules = re.findall(r"python -m ([\w.]+)", block)
  assert modules, f"{page}:{line}: the marked block runs no python -m"
  for module in modules:
    tool = module.removeprefix("tools.")
    assert re.search(rf"\b{re.escape(tool)}\b", source), (
        f"{page}:{line}: {path} never runs {module}")


def test_the_keras_bug_the_keras3_test_records_is_documented():
  """tests/albert_tf/keras3/test_keras3_export.py asserts the message."""
  page = (DOCS / "export-and-keras.md").read_text(encoding="utf-8")
  assert "is not a valid scope name" in page
