"""benchmarks.revision on a crafted git checkout: the key follows the
code, not the figures, and a cached run of other code is refused."""

import subprocess

import pytest

from benchmarks import revision


def _git(root, *args):
  subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
                 cwd=root, check=True, capture_output=True)


@pytest.fixture
def checkout(tmp_path):
  root = tmp_path / "repo"
  (root / "benchmarks").mkdir(parents=True)
  (root / "benchmarks" / "harness.py").write_text("STEPS = 1\n")
  (root / "BENCHMARKS.md").write_text("# figures\n")
  _git(root, "init", "-q")
  _git(root, "add", ".")
  _git(root, "commit", "-qm", "one")
  return root


def test_the_key_follows_code_changes_not_figures(checkout):
  clean = revision.code_revision(str(checkout))
  assert not clean["dirty"] and len(clean["key"]) == 16
  # Figures (a .md, a chart) change nothing, committed or not.
  (checkout / "BENCHMARKS.md").write_text("# figures 2\n")
  (checkout / "benchmarks" / "chart.png").write_bytes(b"png")
  assert revision.code_revision(str(checkout)) == clean
  _git(checkout, "add", "BENCHMARKS.md")
  _git(checkout, "commit", "-qm", "figures")
  after = revision.code_revision(str(checkout))
  assert after["key"] == clean["key"] and after["head"] != clean["head"]
  # An uncommitted code change, then an untracked code file: new keys.
  (checkout / "benchmarks" / "harness.py").write_text("STEPS = 2\n")
  edited = revision.code_revision(str(checkout))
  assert edited["dirty"] and edited["key"] != clean["key"]
  (checkout / "benchmarks" / "new.py").write_text("X = 1\n")
  assert revision.code_revision(str(checkout))["key"] != edited["key"]
  # Committing the same code gives the committed tree's key: the code's.
  _git(checkout, "add", ".")
  _git(checkout, "commit", "-qm", "code")
  committed = revision.code_revision(str(checkout))
  assert not committed["dirty"] and committed["key"] != clean["key"]


def test_a_cached_run_of_other_code_is_refused(checkout, tmp_path):
  run = tmp_path / "run"
  now = revision.code_revision(str(checkout))
  revision.check(str(run), now, "eval_results.json")  # nothing cached
  run.mkdir()
  (run / "eval_results.json").write_text("{}")
  with pytest.raises(revision.StaleRunError, match="unknown revision"):
    revision.check(str(run), now, "eval_results.json")
  revision.stamp(str(run), now)
  revision.check(str(run), now, "eval_results.json")
  (checkout / "benchmarks" / "harness.py").write_text("STEPS = 3\n")
  later = revision.code_revision(str(checkout))
  with pytest.raises(revision.StaleRunError) as raised:
    revision.check(str(run), later, "eval_results.json")
  message = str(raised.value)
  assert "\n" not in message and "delete the folder" in message
  assert now["key"] in message and later["key"] in message


def test_not_a_checkout_is_one_line(tmp_path):
  with pytest.raises(revision.StaleRunError, match="not a git checkout"):
    revision.code_revision(str(tmp_path))


def test_the_tools_key_ignores_the_harnesses(checkout):
  """TOOL_DIRS: a harness edit keeps the key of the tools it runs; a tool
  edit does not."""
  (checkout / "tools").mkdir()
  (checkout / "tools" / "tool.py").write_text("RATE = 1\n")
  _git(checkout, "add", ".")
  _git(checkout, "commit", "-qm", "tool")
  clean = revision.code_revision(str(checkout), revision.TOOL_DIRS)
  (checkout / "benchmarks" / "harness.py").write_text("STEPS = 4\n")
  assert revision.code_revision(str(checkout), revision.TOOL_DIRS) == clean
  assert revision.code_revision(str(checkout))["key"] != clean["key"]
  (checkout / "tools" / "tool.py").write_text("RATE = 2\n")
  edited = revision.code_revision(str(checkout), revision.TOOL_DIRS)
  assert edited["dirty"] and edited["key"] != clean["key"]


def test_a_commits_key_is_its_clean_checkouts(checkout):
  """code_revision_at: the key a clean checkout of the commit computes,
  whatever the working tree holds now; a name that is no commit is one
  line."""
  clean = revision.code_revision(str(checkout))
  (checkout / "benchmarks" / "harness.py").write_text("STEPS = 5\n")
  (checkout / "benchmarks" / "new.py").write_text("X = 1\n")
  assert revision.code_revision(str(checkout))["key"] != clean["key"]
  assert revision.code_revision_at("HEAD", str(checkout)) == clean
  _git(checkout, "add", ".")
  _git(checkout, "commit", "-qm", "code")
  assert revision.code_revision_at("HEAD~1", str(checkout)) == clean
  assert (revision.code_revision_at("HEAD", str(checkout))
          == revision.code_revision(str(checkout)))
  with pytest.raises(revision.StaleRunError, match="no such commit"):
    revision.code_revision_at("nothere", str(checkout))
