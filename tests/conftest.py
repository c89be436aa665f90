"""Shared fixtures. Test data is built here, on the machine: no network."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402

from data_pipeline import stdlib_corpus  # noqa: E402


@pytest.fixture(scope="session")
def english_corpus(tmp_path_factory):
  """A real English corpus (stdlib docstrings), about 300 KB, in input format."""
  path = str(tmp_path_factory.mktemp("corpus") / "stdlib_docs.txt")
  stdlib_corpus.write_stdlib_corpus(path, max_bytes=300_000)
  return path
