"""An English corpus every machine has: the standard library's docstrings.

Module, class and function docstrings are read with `ast` (nothing is imported,
so no module runs), cleaned of doctest and code lines, split into sentences and
written in the pretraining input format: one sentence per line, a blank line
between documents. The output is deterministic for a given Python installation.
"""

import ast
import os
import re
import sysconfig
from typing import Iterator, List, Optional

from albert_common import file_io

# Directories of the standard library that hold tests, vendored code or tools
# rather than documented library modules.
_SKIPPED_DIRS = {"test", "tests", "site-packages", "dist-packages",
                 "lib2to3", "turtledemo", "__pycache__", "ensurepip"}

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'])")
_CODE_LINE = re.compile(r"^\s*(>>>|\.\.\.|\$ |[-=~^*]{3,}$|:\w+:)")


def python_files(root: str) -> Iterator[str]:
  """The .py files below root, in sorted order, skipping tests and tools."""
  for dirpath, dirnames, filenames in os.walk(root):
    dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED_DIRS)
    for name in sorted(filenames):
      if name.endswith(".py"):
        yield os.path.join(dirpath, name)


def docstrings(path: str) -> Iterator[str]:
  """The module, class and function docstrings of a source file (parsed
  with ast; nothing is imported); none for a file that does not parse."""
  try:
    with open(path, encoding="utf-8") as f:
      tree = ast.parse(f.read(), filename=path)
  except (SyntaxError, UnicodeDecodeError, ValueError):
    return
  for node in ast.walk(tree):
    if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                         ast.AsyncFunctionDef)):
      doc = ast.get_docstring(node)
      if doc:
        yield doc


def docstring_to_sentences(doc: str) -> List[str]:
  """Prose sentences of a docstring; code, doctests and rulers are dropped."""
  sentences = []
  for paragraph in re.split(r"\n\s*\n", doc):
    lines = paragraph.splitlines()
    if any(_CODE_LINE.match(line) for line in lines):
      continue
    # Indented paragraphs are usually code or argument tables.
    if lines and lines[0].startswith((" ", "\t")):
      continue
    text = " ".join(line.strip() for line in lines).strip()
    if len(text) < 20 or not re.search(r"[a-z]", text):
      continue
    sentences.extend(s.strip() for s in _SENTENCE_END.split(text) if s.strip())
  return sentences


def iter_documents(stdlib_dir: Optional[str] = None,
                   min_sentences: int = 2,
                   per_module: bool = False) -> Iterator[List[str]]:
  """Yields documents (lists of sentences) from the standard library.

  Args:
    stdlib_dir: the standard library to read; defaults to this interpreter's.
    min_sentences: documents with fewer sentences are skipped.
    per_module: one document per source file (its docstrings in order, long
      documents as encyclopedia articles are) instead of one per docstring.
  """
  root = stdlib_dir or sysconfig.get_paths()["stdlib"]
  for path in python_files(root):
    docs = [docstring_to_sentences(doc) for doc in docstrings(path)]
    if per_module:
      docs = [[sentence for doc in docs for sentence in doc]]
    for sentences in docs:
      if len(sentences) >= min_sentences:
        yield sentences


def write_stdlib_corpus(output_path: str,
                        max_bytes: Optional[int] = None,
                        stdlib_dir: Optional[str] = None) -> dict:
  """Writes the corpus and returns {"documents", "sentences", "bytes"}.

  Args:
    output_path: text file to write, on any filesystem (written under a
      temporary name, then renamed, so a partial corpus is never left
      behind).
    max_bytes: stop before the corpus grows past this many bytes.
    stdlib_dir: the standard library to read; defaults to this interpreter's.
  """
  stats = {"documents": 0, "sentences": 0, "bytes": 0}
  file_io.makedirs(file_io.dirname(output_path))
  tmp_path = file_io.temp_name(output_path)
  try:
    with file_io.open_write(tmp_path) as f:
      for sentences in iter_documents(stdlib_dir):
        block = ("\n".join(sentences) + "\n\n").encode("utf-8")
        if (max_bytes is not None and
            stats["bytes"] + len(block) > max_bytes):
          break
        f.write(block)
        stats["documents"] += 1
        stats["sentences"] += len(sentences)
        stats["bytes"] += len(block)
    file_io.rename(tmp_path, output_path)
  finally:
    file_io.remove(tmp_path)
  return stats
