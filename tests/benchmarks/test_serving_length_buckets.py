"""benchmarks/serving/length_buckets.py on a tiny config: the table's
shape and sane numbers (never a speed)."""

import pytest

from albert_tf.config import AlbertConfig


@pytest.mark.slow
def test_serving_latency_table(tmp_path):
  from benchmarks.serving import length_buckets
  path = str(tmp_path / "tiny.json")
  AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
               num_hidden_layers=2, num_attention_heads=4,
               intermediate_size=64, max_position_embeddings=64,
               ).to_json_file(path)
  table = length_buckets.run(path, 64, 3)
  lines = table.splitlines()
  assert lines[0].split("|")[1:-1] == [
      " model ", " tokens ", " bucket ", " none ms (seq 64) ", " auto ms ",
      " speed-up ", " max prob. diff "]
  rows = [[c.strip() for c in line.split("|")[1:-1]] for line in lines[2:]]
  assert [(r[0], r[1], r[2]) for r in rows] == [
      ("tiny", "12", "32"), ("tiny", "25", "32"), ("tiny", "60", "64")]
  for row in rows:
    none_ms, auto_ms = float(row[3]), float(row[4])
    assert 0 < none_ms < 10_000 and 0 < auto_ms < 10_000
    assert row[5].endswith("x") and float(row[5][:-1]) > 0
    assert float(row[6]) <= 1e-5  # the same model: float rounding only
