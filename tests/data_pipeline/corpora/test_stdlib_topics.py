"""The stdlib topics task: balanced, split by source file, no text twice."""

import collections
import csv
import io

from albert_common import file_io
from data_pipeline.corpora import stdlib_topics


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
