"""A domain every machine can build: the code of Python's standard library.

The source model of benchmarks.pretraining.domain_adaptation is pretrained
on the standard library's docstrings (English prose,
data_pipeline/corpora/stdlib_corpus.py). Its domain is the code around
them:

- text: the .py files of the running interpreter's standard library under
  DOMAIN_PACKAGES (test folders skipped); each file parsed with `ast`
  (nothing is imported) and its module, class and function docstrings
  removed by their line ranges, so no docstring sentence of the source's
  corpus comes back; blank lines dropped; every other line (code or
  comment), stripped of its indentation, is one line of the corpus and
  each file is one document.
- split by file: within each package, files in the order of the MD5 of
  their path; every HELDOUT_EVERY-th (the first included) is held out. No
  file is on both sides.
- the downstream task (TASK_PACKAGES): which package a snippet of
  SNIPPET_LINES consecutive lines comes from; train snippets from train
  files, dev snippets from held-out files, the same number per package.
"""

import ast
import dataclasses
import hashlib
import os
import random
import sysconfig
from typing import Dict, List, Optional, Sequence, Tuple

from albert_common import file_io
from data_pipeline.corpora import stdlib_corpus

TASK_PACKAGES = ("asyncio", "email", "importlib", "multiprocessing",
                 "unittest", "xml")
DOMAIN_PACKAGES = TASK_PACKAGES + ("collections", "concurrent", "ctypes",
                                   "http", "json", "logging", "urllib")
HELDOUT_EVERY = 5
SNIPPET_LINES = 4


def docstring_lines(tree: ast.AST) -> set:
  """The 1-based line numbers of every module, class and function
  docstring in a parsed file."""
  lines = set()
  for node in ast.walk(tree):
    if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                             ast.AsyncFunctionDef)):
      continue
    first = node.body[0] if node.body else None
    if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)):
      lines.update(range(first.lineno, first.end_lineno + 1))
  return lines


def code_lines(source: str) -> List[str]:
  """The non-blank lines of a Python source without its docstrings,
  indentation stripped; [] for a file that does not parse."""
  try:
    tree = ast.parse(source)
  except (SyntaxError, ValueError):
    return []
  skipped = docstring_lines(tree)
  return [line.strip() for number, line in enumerate(source.splitlines(), 1)
          if number not in skipped and line.strip()]


def split_by_file(paths: Sequence[str], every: int = HELDOUT_EVERY
                  ) -> Tuple[List[str], List[str]]:
  """(train, held-out) paths: in MD5 order of the path, every `every`-th
  (the first included) is held out, so a package of one file is held out
  and any package keeps at least one held-out file."""
  ordered = sorted(paths, key=lambda p: hashlib.md5(p.encode()).hexdigest())
  heldout = ordered[::every]
  return [p for p in ordered if p not in heldout], heldout


@dataclasses.dataclass
class DomainCorpus:
  """Per package and split ("train" / "heldout"): (path relative to the
  standard library, its code lines) for each file."""
  files: Dict[str, Dict[str, List[Tuple[str, List[str]]]]]

  def documents(self, split: str) -> List[List[str]]:
    """Every file of `split` as a document (its lines), package order."""
    return [lines for package in sorted(self.files)
            for _, lines in self.files[package][split] if lines]


def build_domain(stdlib_dir: Optional[str] = None,
                 packages: Sequence[str] = DOMAIN_PACKAGES) -> DomainCorpus:
  """Reads and splits the domain (see the module doc) from `stdlib_dir`
  (default: this interpreter's standard library)."""
  root = stdlib_dir or sysconfig.get_paths()["stdlib"]
  files = {}
  for package in packages:
    paths = [os.path.relpath(p, root) for p in
             stdlib_corpus.python_files(os.path.join(root, package))]
    if not paths:
      raise ValueError(f"the standard library at {root} has no package "
                       f"{package!r}")
    train, heldout = split_by_file(paths)
    files[package] = {
        split: [(p, code_lines(file_io.read_text(os.path.join(root, p))))
                for p in sorted(chosen)]
        for split, chosen in (("train", train), ("heldout", heldout))}
  return DomainCorpus(files)


def write_documents(path: str, documents: Sequence[Sequence[str]]) -> int:
  """Writes documents in the pretraining input format (a line each, a
  blank line between documents), atomically; returns the bytes written."""
  text = "\n\n".join("\n".join(lines) for lines in documents if lines) + "\n"
  file_io.write_atomic(path, text)
  return len(text.encode("utf-8"))


def snippets(lines: Sequence[str], size: int = SNIPPET_LINES) -> List[str]:
  """Non-overlapping runs of `size` consecutive lines, joined by a space
  (a last shorter run is dropped)."""
  return [" ".join(lines[i:i + size])
          for i in range(0, len(lines) - size + 1, size)]


def snippet_rows(corpus: DomainCorpus, split: str, per_class: int,
                 seed: int, packages: Sequence[str] = TASK_PACKAGES
                 ) -> List[Dict[str, str]]:
  """Exactly `per_class` rows {"text", "label"} per package, drawn with
  `seed` from the snippets of the `split` files, shuffled.

  Raises:
    ValueError: a package has fewer snippets than `per_class`.
  """
  rng = random.Random(seed)
  rows = []
  for package in packages:
    pool = [s for _, lines in corpus.files[package][split]
            for s in snippets(lines)]
    if len(pool) < per_class:
      raise ValueError(f"{package}: {len(pool)} {split} snippets, fewer "
                       f"than {per_class}")
    rows.extend({"text": s, "label": package}
                for s in rng.sample(pool, per_class))
  rng.shuffle(rows)
  return rows


def write_rows(path: str, rows: Sequence[Dict[str, str]]) -> None:
  """Writes rows as JSON lines (atomically)."""
  import json
  file_io.write_atomic(path, "".join(json.dumps(r) + "\n" for r in rows))
