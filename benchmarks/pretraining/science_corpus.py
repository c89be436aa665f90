"""A domain of words every machine with the venv can build: the prose of
the scientific Python packages.

The source model of benchmarks.pretraining.domain_adaptation learned the
standard library's docstrings. This domain is the docstring prose of the
scientific packages pinned in constraints.txt and installed in the venv
(numpy, scipy, scikit-learn, pandas): statistics, linear algebra, signal
processing, estimators, data frames: English of another field.

- text: every .py file of PACKAGES (tests skipped) parsed with `ast`
  (nothing is imported); its module, class and function docstrings and the
  documentation strings handed to `add_newdoc(...)` (where numpy and
  scipy.special keep the docs of their compiled functions). Of each
  numpydoc docstring, only prose is kept (`prose_paragraphs`): the
  description before the first section ("Parameters", "Returns", ...)
  and the body of "Notes"; doctest lines, indented blocks (math, literal
  code, parameter tables), directives and section underlines are dropped,
  reST roles reduced to their text. A paragraph of fewer than MIN_WORDS
  words, or with too few letters (formulas), is dropped. Each file is one
  document, a sentence a line.
- split by file (code_corpus.split_by_file, within each package): no file
  is on both sides; a held-out paragraph whose text also occurs in a
  training file is dropped (shared docstrings).
- the downstream task (TASK_GROUPS): which subpackage a paragraph comes
  from, six balanced classes; train paragraphs from train files, dev
  paragraphs from held-out files.
"""

import ast
import dataclasses
import importlib.util
import inspect
import os
import random
import re
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from albert_common import file_io
from benchmarks.pretraining import code_corpus
from data_pipeline.corpora import stdlib_corpus

PACKAGES = ("numpy", "scipy", "sklearn", "pandas")
# label -> path prefixes (relative to site-packages) of its files.
TASK_GROUPS = {
    "scipy.stats": ("scipy/stats/",),
    "scipy.signal": ("scipy/signal/",),
    "scipy.linalg": ("scipy/linalg/", "scipy/sparse/linalg/"),
    "sklearn models": ("sklearn/linear_model/", "sklearn/svm/",
                       "sklearn/ensemble/", "sklearn/tree/",
                       "sklearn/neighbors/", "sklearn/naive_bayes.py",
                       "sklearn/neural_network/"),
    "sklearn data": ("sklearn/cluster/", "sklearn/decomposition/",
                     "sklearn/manifold/", "sklearn/mixture/",
                     "sklearn/preprocessing/", "sklearn/feature_extraction/"),
    "pandas": ("pandas/",),
}
MIN_WORDS = 8
# Share of a paragraph's non-space characters that must be letters.
MIN_LETTER_SHARE = 0.75
# Sections kept besides the description before the first one.
KEPT_SECTIONS = ("notes",)

_UNDERLINE = re.compile(r"^\s*([-=~^])\1{2,}\s*$")
_ROLE = re.compile(r":[\w:+-]+:`([^`]+)`")
_LITERAL = re.compile(r"``([^`]+)``|`([^`]+)`")
_DIRECTIVE = re.compile(r"^\s*\.\. ")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(])")


def package_root(package: str) -> str:
  """The directory of an installed package, found without importing it."""
  spec = importlib.util.find_spec(package)
  if spec is None or not spec.submodule_search_locations:
    raise ValueError(f"the package {package!r} is not installed; the "
                     "science domain reads its docstrings")
  return list(spec.submodule_search_locations)[0]


def documentation_strings(source: str) -> List[str]:
  """The docstrings of a source file and the documentation strings
  passed to any `add_newdoc(...)` call, in file order; [] when it does
  not parse."""
  try:
    tree = ast.parse(source)
  except (SyntaxError, ValueError):
    return []
  found = []
  for node in ast.walk(tree):
    if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                         ast.AsyncFunctionDef)):
      doc = ast.get_docstring(node, clean=False)
      if doc:
        found.append((node.body[0].lineno, doc))
    elif isinstance(node, ast.Call) and getattr(
        node.func, "id", getattr(node.func, "attr", "")) == "add_newdoc":
      # add_newdoc(name, doc) in scipy, add_newdoc(place, name, doc) in
      # numpy: the documentation is the last argument.
      doc = node.args[-1] if len(node.args) >= 2 else None
      if isinstance(doc, ast.Constant) and isinstance(doc.value, str):
        found.append((doc.lineno, doc.value))
  return [doc for _, doc in sorted(found, key=lambda item: item[0])]


def _role_text(content: str) -> str:
  """What a reST role shows: "title <target>" -> title; "~a.b.c" or
  "a.b.c" -> c."""
  if "<" in content:
    return content.split("<")[0].strip()
  return content.lstrip("~").split(".")[-1]


def _plain(text: str) -> str:
  """reST roles and literals reduced to their text, spaces collapsed."""
  text = _ROLE.sub(lambda m: _role_text(m.group(1)), text)
  text = _LITERAL.sub(lambda m: m.group(1) or m.group(2), text)
  return " ".join(text.split())


def _is_prose(paragraph: str) -> bool:
  letters = sum(c.isalpha() for c in paragraph)
  visible = sum(not c.isspace() for c in paragraph)
  return (len(paragraph.split()) >= MIN_WORDS and visible > 0
          and letters / visible >= MIN_LETTER_SHARE
          and "%(" not in paragraph and "{" not in paragraph)


def prose_paragraphs(docstring: str) -> List[str]:
  """The prose of a numpydoc docstring: paragraphs (a string each) of the
  description before the first section and of the KEPT_SECTIONS.

  Dropped: every other section (a title line over an underline of - = ~
  or ^), doctest lines and their output (`>>>` to the next blank line),
  indented blocks, `..` directives with their indented body, paragraphs
  that fail the prose test (MIN_WORDS, MIN_LETTER_SHARE, templates)."""
  lines = inspect.cleandoc(docstring).splitlines() + [""]
  paragraphs, current = [], []
  keep, in_doctest, in_directive = True, False, False
  for index, line in enumerate(lines[:-1]):
    following = lines[index + 1]
    if _UNDERLINE.match(following) and line.strip():
      keep = line.strip().lower() in KEPT_SECTIONS
      current = _flush(paragraphs, current)
      continue
    stripped = line.strip()
    if not stripped:
      in_doctest = False
      current = _flush(paragraphs, current)
      continue
    if _UNDERLINE.match(line):
      continue
    indented = line[:1].isspace()
    in_directive = (bool(_DIRECTIVE.match(line)) or
                    (in_directive and indented))
    in_doctest = in_doctest or stripped.startswith(">>>")
    if keep and not (in_doctest or in_directive or indented):
      current.append(stripped)
    elif current:
      current = _flush(paragraphs, current)
  _flush(paragraphs, current)
  return [p for p in paragraphs if _is_prose(p)]


def _flush(paragraphs: List[str], current: List[str]) -> List[str]:
  if current:
    paragraphs.append(_plain(" ".join(current)))
  return []


def sentences(paragraph: str) -> List[str]:
  """A paragraph cut into sentences (before a capital after . ! ?)."""
  return [s for s in _SENTENCE_END.split(paragraph) if s.strip()]


def file_paragraphs(path: str) -> List[str]:
  """The prose paragraphs of every documentation string of a file, in
  order, each once."""
  seen, out = set(), []
  for doc in documentation_strings(file_io.read_text(path)):
    for paragraph in prose_paragraphs(doc):
      if paragraph not in seen:
        seen.add(paragraph)
        out.append(paragraph)
  return out


def label_of(relative_path: str) -> Optional[str]:
  """The task label of a file (TASK_GROUPS), or None."""
  for label, prefixes in TASK_GROUPS.items():
    if relative_path.startswith(prefixes):
      return label
  return None


@dataclasses.dataclass
class ScienceCorpus:
  """Per split ("train" / "heldout"): (path relative to site-packages, its
  prose paragraphs) for each file with any."""
  files: Dict[str, List[Tuple[str, List[str]]]]

  def documents(self, split: str) -> List[List[str]]:
    """Every file of `split` as a document: its sentences, a line each."""
    return [[s for p in paragraphs for s in sentences(p)]
            for _, paragraphs in self.files[split]]

  def labelled(self, split: str) -> Dict[str, List[str]]:
    """{label: paragraphs of `split` files of that label}; held-out
    paragraphs that occur in a training file are left out."""
    in_train = {p for _, ps in self.files["train"] for p in ps}
    pools = {label: [] for label in TASK_GROUPS}
    for path, paragraphs in self.files[split]:
      label = label_of(path)
      if label is not None:
        pools[label].extend(p for p in paragraphs
                            if split == "train" or p not in in_train)
    return pools


def split_files(paths: Sequence[str]) -> Tuple[List[str], List[str]]:
  """(train, held-out) relative paths: code_corpus.split_by_file within
  each top-level package, so each keeps held-out files."""
  train, heldout = [], []
  for package in sorted({p.split("/")[0] for p in paths}):
    t, h = code_corpus.split_by_file(
        [p for p in paths if p.split("/")[0] == package])
    train += t
    heldout += h
  return sorted(train), sorted(heldout)


def iter_package_files(packages: Sequence[str]) -> Iterator[Tuple[str, str]]:
  """(absolute path, path relative to the packages' parent) of each .py
  file of `packages`, tests skipped."""
  for package in packages:
    root = package_root(package)
    parent = os.path.dirname(root)
    for path in stdlib_corpus.python_files(root):
      yield path, os.path.relpath(path, parent).replace(os.sep, "/")


def build_domain(packages: Sequence[str] = PACKAGES) -> ScienceCorpus:
  """Reads and splits the domain (see the module doc)."""
  paragraphs = {rel: file_paragraphs(path)
                for path, rel in iter_package_files(packages)}
  paragraphs = {rel: ps for rel, ps in paragraphs.items() if ps}
  train, heldout = split_files(list(paragraphs))
  return ScienceCorpus({"train": [(p, paragraphs[p]) for p in train],
                        "heldout": [(p, paragraphs[p]) for p in heldout]})


def paragraph_rows(corpus: ScienceCorpus, split: str, per_class: int,
                   seed: int) -> List[Dict[str, str]]:
  """Exactly `per_class` rows {"text", "label"} per TASK_GROUPS label,
  drawn with `seed` from the paragraphs of `split` files, shuffled.

  Raises:
    ValueError: a label has fewer paragraphs than `per_class`.
  """
  rng = random.Random(seed)
  rows = []
  for label, pool in corpus.labelled(split).items():
    if len(pool) < per_class:
      raise ValueError(f"{label}: {len(pool)} {split} paragraphs, fewer "
                       f"than {per_class}")
    rows.extend({"text": p, "label": label}
                for p in rng.sample(sorted(pool), per_class))
  rng.shuffle(rows)
  return rows
