"""benchmarks.memory.peaks runs end to end on a tiny config."""

import os

import pytest

from albert_tf.config import AlbertConfig


@pytest.mark.slow
def test_memory_benchmark_on_a_tiny_config(tmp_path):
  from benchmarks.memory import peaks as bench_memory
  config = str(tmp_path / "tiny.json")
  AlbertConfig(vocab_size=300, embedding_size=16, hidden_size=32,
               num_hidden_layers=2, num_attention_heads=4,
               intermediate_size=64, max_position_embeddings=32,
               ).to_json_file(config)
  result = bench_memory.run([config], [32], [2], steps=2)
  rows = [line for line in result["table"].splitlines()
          if line.startswith("| tiny")]
  assert [row.split("|")[4].strip() for row in rows] == ["off", "on"]
  (check,) = result["checks"]
  # A tiny model's saving is within the noise of RSS; the plan's is exact.
  assert check["plan_saving_mib"] > 0
  chart = bench_memory.draw_chart(sizes=(config, config),
                                  path=str(tmp_path / "memory.png"))
  assert chart.endswith(".png") and os.path.getsize(chart) > 10_000
