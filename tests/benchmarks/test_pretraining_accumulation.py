"""benchmarks/pretraining/accumulation.py runs on a tiny config and reports its
table: K=4 against K=1 time per example, the best possible ratio, memory.
Speed itself is not asserted (BENCHMARKS.md reports it)."""

import numpy as np
import pytest

from albert_tf.config import AlbertConfig

pytestmark = pytest.mark.slow


def test_accumulation_benchmark_on_a_tiny_config(tmp_path):
  from benchmarks.pretraining import accumulation as bench_accumulation
  path = str(tmp_path / "tiny.json")
  AlbertConfig(vocab_size=300, embedding_size=16, hidden_size=32,
               num_hidden_layers=2, num_attention_heads=4,
               intermediate_size=64, max_position_embeddings=32,
               ).to_json_file(path)
  result = bench_accumulation.run(path, micro_batch=2, seq=32, repeats=2)
  lines = result["table"].splitlines()
  assert lines[0].startswith("| model | accumulation | examples / update |")
  assert [line.split("|")[2].strip() for line in lines[2:]] == ["K=1", "K=4"]
  assert [line.split("|")[3].strip() for line in lines[2:]] == ["2", "8"]
  # The ratio is K=4's time per example over K=1's, from the medians the
  # run measured (8 and 2 examples per update), and the table prints it.
  seconds = result["seconds"]
  assert result["ratio"] == pytest.approx(
      (seconds["K=4"] / 8) / (seconds["K=1"] / 2), rel=1e-12)
  assert lines[3].split("|")[7].strip() == f"{result['ratio']:.3f}"
  assert 0 < result["ceiling"] <= 1
  # The bound: K=1's time per example less 3/4 of its clip and update,
  # timed on their own in the same alternation (not K=1 less a separate
  # forward/backward call).
  share = seconds["K=1 update only"] / seconds["K=1"]
  assert result["update_share"] == pytest.approx(share, rel=1e-12)
  assert result["ceiling"] == pytest.approx(1 - share * 3 / 4, rel=1e-12)
  assert lines[3].split("|")[8].strip() == f"{result['ceiling']:.3f}"
  assert all(np.isfinite(v) and v > 100 for v in result["memory_mb"].values())
