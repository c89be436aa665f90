"""Fixtures the fault test files share (tests/project/test_faults_*.py):
a tiny config file and a crafted SST-2 folder, one of each per module."""

import pytest

from tests.project.fault_kit import write_config
from tests.project.fault_kit import write_sst2


@pytest.fixture(scope="module")
def config_file(tmp_path_factory):
  return write_config(tmp_path_factory.mktemp("config"))


@pytest.fixture(scope="module")
def sst2_dir(tmp_path_factory, english_corpus):
  path = str(tmp_path_factory.mktemp("glue") / "SST-2")
  write_sst2(path, english_corpus)
  return path
