"""The stdlib topics task: balanced, split by source file, no text twice."""

import collections
import csv
import io

import pytest

from albert_common import file_io
from data_pipeline.corpora import stdlib_topics


@pytest.mark.slow  # the demo's whole corpus
def test_records_split_by_file_and_capped(tmp_path):
  records = stdlib_topics.build_records(max_per_topic=120, dev_fraction=0.2)
  for split, cap in (("train", 120), ("dev", 30)):
    counts = collections.Counter(topic for _, topic in records[split])
    assert set(counts) == set(stdlib_topics.TOPICS)
    assert max(counts.values()) == cap  # the big topics hit the cap
  texts = [t for split in records.values() for t, _ in split]
  assert len(texts) == len(set(texts))  # no text twice, across the split
  # Every text comes from one file, so a dev text is no training text.
  train = {t for t, _ in records["train"]}
  assert not train & {t for t, _ in records["dev"]}
  # Deterministic.
  assert stdlib_topics.build_records(max_per_topic=120) == records


def test_write_task_round_trips_through_csv():
  out = "ram://stdlib_topics_test"
  sizes = stdlib_topics.write_task(out, max_per_topic=40)
  rows = list(csv.DictReader(io.StringIO(
      file_io.read_text(file_io.join(out, "dev.csv")))))
  assert len(rows) == sizes["dev"] == 8 * 10
  assert {r["label"] for r in rows} == set(stdlib_topics.TOPICS)
  assert all(r["text"].strip() for r in rows)


def test_bad_flags_are_one_line_and_exit_1(tmp_path):
  import subprocess
  import sys
  root = __file__.rsplit("/tests/", 1)[0]
  for args, said in ((["--dev_fraction=1.5"], "--dev_fraction=1.5"),
                     (["--max_per_topic=0"], "--max_per_topic=0"),
                     ([], "--output_dir=" + str(tmp_path / "file.txt"))):
    (tmp_path / "file.txt").write_text("a file, not a folder")
    out = tmp_path / "file.txt" if not args else tmp_path / "out"
    run = subprocess.run(
        [sys.executable, "-m", "data_pipeline.corpora.stdlib_topics",
         f"--output_dir={out}"] + args, cwd=root, capture_output=True,
        text=True, check=False)
    assert run.returncode == 1, run.stderr
    assert run.stderr.count("\n") == 1 and said in run.stderr, run.stderr
    assert not (tmp_path / "out").exists()
