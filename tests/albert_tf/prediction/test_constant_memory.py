"""tools.predict's memory is flat in the input's size: peak RSS on an
input 4x larger is within 10% (a stand-in model, so the figure is the
reader's, batcher's and writer's own; a reader holding the file would add
its size, 3 x 24 MB here, to a ~100 MB process)."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))

_CHILD = """
import resource, sys
from albert_tf.prediction import runner
from albert_tf.prediction.exported_model import ExportDescription
from albert_tf.prediction.options import PredictOptions

class Model:
  def __init__(self, *args):
    pass
  def predict(self, texts_a, texts_b=None):
    return [{"value": float(len(t))} for t in texts_a]

manifest = runner.predict_files(
    PredictOptions(model="stand-in", input_file=sys.argv[1],
                   output_dir=sys.argv[2], id_column="id",
                   rows_per_shard=2000),
    Model, ExportDescription("regression", pair=False))
print(manifest["rows"], resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _peak_rss_kb(tmp_path, rows):
  path = tmp_path / f"in{rows}.jsonl"
  text = "word " * 80
  with open(path, "w", encoding="utf-8") as f:
    for i in range(rows):
      f.write(json.dumps({"id": i, "text": f"{i} {text}"}) + "\n")
  result = subprocess.run(
      [sys.executable, "-c", _CHILD, str(path), str(tmp_path / f"out{rows}")],
      cwd=ROOT, capture_output=True, text=True, timeout=900)
  assert result.returncode == 0, result.stderr[-2000:]
  count, peak = map(int, result.stdout.split()[-2:])
  assert count == rows
  return peak


@pytest.mark.slow
def test_peak_rss_is_flat_in_the_input_size(tmp_path):
  small = _peak_rss_kb(tmp_path, 60_000)   # ~26 MB of JSON lines
  large = _peak_rss_kb(tmp_path, 240_000)  # ~103 MB
  assert large <= small * 1.10, (small, large)
