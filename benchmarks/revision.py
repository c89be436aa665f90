"""The revision of the code a cached run ran, so a rerun after a fix never
reports the old code's numbers.

  code_revision()   {"key", "head", "dirty"}: key is a digest of the code
                    files' blobs at HEAD (git ls-tree) and of the working
                    tree's changes to them (git diff HEAD, untracked files)
  code_revision_at  the same of a commit, as its clean checkout gives it
  stamp / check     a run folder records the key it was run by; a folder
                    with results and another key (or none) is refused in
                    one line (StaleRunError)

Code files: everything tracked under CODE_DIRS but the figures the
harnesses write (*.md, *.png), so writing BENCHMARKS.md or committing it
keeps the cache; any change to code the run imports does not.
"""

import hashlib
import json
import os
import subprocess
from typing import Dict, Optional, Sequence

from benchmarks import common

CODE_DIRS = ("albert_common", "albert_tf", "data_pipeline", "tools",
             "benchmarks", "configs")
# What a tool run imports: CODE_DIRS without the harnesses.
TOOL_DIRS = tuple(d for d in CODE_DIRS if d != "benchmarks")
NOT_CODE = (".md", ".png")
STAMP = "code_revision.json"


class StaleRunError(RuntimeError):
  """A cached run made by other code than this."""


def _git(root: str, *args: str) -> bytes:
  try:
    return subprocess.run(["git", *args], cwd=root, capture_output=True,
                          check=True).stdout
  except (OSError, subprocess.CalledProcessError) as e:
    raise StaleRunError(
        f"{root} is not a git checkout ({e}): a cached benchmark run is "
        "keyed by the code's git revision") from None


def _is_code(path: str) -> bool:
  return not path.endswith(NOT_CODE)


def _code_listing(root: str, commit: str, dirs: Sequence[str]) -> list:
  """git ls-tree lines (mode, blob, path) of the code files under `dirs`
  at `commit`."""
  return [line for line in _git(
      root, "ls-tree", "-r", commit, "--", *dirs).decode().splitlines()
          if _is_code(line.split("\t", 1)[-1])]


def code_revision(root: Optional[str] = None,
                  dirs: Sequence[str] = CODE_DIRS) -> Dict:
  """{"key": 16 hex digits, "head": HEAD's commit, "dirty": bool} of the
  code under `dirs` (a harness running only the tools passes TOOL_DIRS,
  so editing the harness keeps its runs)."""
  root = root or common.REPO_ROOT
  head = _git(root, "rev-parse", "HEAD").decode().strip()
  listing = _code_listing(root, "HEAD", dirs)
  excludes = [f":(exclude,glob)**/*{ext}" for ext in NOT_CODE]
  diff = _git(root, "diff", "HEAD", "--binary", "--", *dirs, *excludes)
  untracked = sorted(p for p in _git(
      root, "ls-files", "--others", "--exclude-standard", "--", *dirs
  ).decode().splitlines() if _is_code(p))
  digest = hashlib.sha256("\n".join(listing).encode() + b"\0" + diff)
  for path in untracked:
    digest.update(b"\0" + path.encode() + b"\0")
    with open(os.path.join(root, path), "rb") as f:
      digest.update(f.read())
  return dict(key=digest.hexdigest()[:16], head=head,
              dirty=bool(diff or untracked))


def code_revision_at(commit: str, root: Optional[str] = None,
                     dirs: Sequence[str] = CODE_DIRS) -> Dict:
  """code_revision of a commit as a clean checkout of it would compute
  it (its code files' blobs, no working-tree changes)."""
  root = root or common.REPO_ROOT
  try:
    head = _git(root, "rev-parse", "--verify", f"{commit}^{{commit}}"
                ).decode().strip()
  except StaleRunError:
    raise StaleRunError(f"{commit}: no such commit in {root}") from None
  listing = _code_listing(root, head, dirs)
  digest = hashlib.sha256("\n".join(listing).encode() + b"\0")
  return dict(key=digest.hexdigest()[:16], head=head, dirty=False)


def describe(revision: Dict) -> str:
  """"code 1a2b... (HEAD 0123456, uncommitted changes)"."""
  state = ", uncommitted changes" if revision["dirty"] else ""
  return f"code {revision['key']} (HEAD {revision['head'][:7]}{state})"


def stamp(folder: str, revision: Dict) -> None:
  """Records in `folder` the revision that made it."""
  os.makedirs(folder, exist_ok=True)
  with open(os.path.join(folder, STAMP), "w") as f:
    json.dump(revision, f)


def check(folder: str, revision: Dict, results: str) -> None:
  """StaleRunError (one line) when `folder` holds `results` (a file name)
  made by another revision than `revision`, or by an unknown one."""
  if not os.path.exists(os.path.join(folder, results)):
    return
  path = os.path.join(folder, STAMP)
  made = None
  if os.path.exists(path):
    with open(path) as f:
      made = json.load(f)
  if not made or made.get("key") != revision["key"]:
    was = describe(made) if made else "code of unknown revision"
    raise StaleRunError(
        f"{folder}: its {results} was made by {was}, not by this "
        f"{describe(revision)}: delete the folder to rerun it")
