"""benchmarks.data.padding reports what the records it writes hold."""

import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

_ROOT = os.path.abspath(os.path.join(__file__, "../../.."))


@pytest.mark.slow
def test_padding_benchmark_counts_what_the_records_hold(tmp_path):
  done = subprocess.run(
      [sys.executable, "-m", "benchmarks.data.padding",
       "--max_seq_lengths=64", "--dupe_factor=1", f"--work_dir={tmp_path}"],
      cwd=_ROOT, capture_output=True, text=True, timeout=600)
  assert done.returncode == 0, done.stderr[-3000:]
  table = [line for line in done.stdout.splitlines() if line.startswith("|")]
  rows = {cells[0]: cells for cells in
          ([c.strip() for c in line.strip("|").split("|")]
           for line in table[2:])}
  assert sorted(rows) == ["demo", "wikipedia-like"]
  for name, row in rows.items():
    masks = [tf.train.Example.FromString(record.numpy()).features
             .feature["input_mask"].int64_list.value for record in
             tf.data.TFRecordDataset(str(tmp_path / f"{name}-64.tfrecord"))]
    assert len(masks) == int(row[4].replace(",", ""))
    padding = 1 - np.mean([np.mean(m) for m in masks])
    assert f"{padding:.1%}" == row[6]
  # Longer documents leave less of each sequence empty.
  assert (float(rows["wikipedia-like"][6][:-1]) <
          float(rows["demo"][6][:-1]))
