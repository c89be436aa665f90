"""--length_buckets=auto: boundaries fitted to the data by a dynamic program
(equal to a brute-force search), their padding share, and the record a
rerun, an evaluation and an export read back."""

import json
import time

import numpy as np
import pytest

from data_pipeline.tasks import bucket_boundaries
from data_pipeline.tasks import length_buckets


def test_dynamic_program_equals_brute_force_on_small_histograms():
  rng = np.random.default_rng(0)
  for _ in range(60):
    max_seq_length = int(rng.integers(8, 72))
    lengths = rng.integers(0, max_seq_length + 1, int(rng.integers(1, 50)))
    if rng.random() < 0.5:  # skewed, as real tasks are
      lengths = np.minimum(lengths // 3 + 2, max_seq_length)
    counts = bucket_boundaries.histogram(lengths, max_seq_length)
    for max_buckets in (1, 2, 3, 4):
      # Up to 17 candidates: brute force tries at most C(16, 3) subsets.
      for multiple in (m for m in (1, 4, 8) if max_seq_length <= 17 * m):
        fast = bucket_boundaries.optimal_boundaries(counts, max_buckets,
                                                    multiple)
        slow = bucket_boundaries.brute_force_boundaries(counts, max_buckets,
                                                        multiple)
        assert fast == slow, (lengths, max_buckets, multiple)
        assert len(fast) <= max_buckets and fast[-1] == max_seq_length
        assert all(b % multiple == 0 for b in fast[:-1])


def test_sst2_like_lengths_fast_and_less_padding_than_pow2():
  rng = np.random.default_rng(1)
  lengths = np.clip(np.round(rng.gamma(4.0, 6.3, 70_000)), 4, 66).astype(int)
  start = time.perf_counter()
  choice = bucket_boundaries.choose("auto", 512, 4, lengths, "train")
  assert time.perf_counter() - start < 1.0
  assert len(choice.length_buckets) == 4
  assert choice.length_buckets[-1] == 512
  counts = bucket_boundaries.histogram(lengths, 512)
  pow2 = length_buckets.parse_length_buckets("pow2", 512)
  assert choice.padded_share < bucket_boundaries.padded_share(counts, pow2)
  assert choice.compared["pow2"] == pytest.approx(
      bucket_boundaries.padded_share(counts, pow2), abs=1e-4)
  # The padded tokens are those of the examples in their buckets.
  buckets = np.array(choice.length_buckets)
  padded = buckets[np.searchsorted(buckets, lengths)].sum()
  assert bucket_boundaries.padded_tokens(counts, buckets) == padded
  assert choice.padded_share == pytest.approx(1 - lengths.sum() / padded,
                                              abs=1e-4)


def test_pow2_none_and_lists_keep_their_meaning():
  for value, expected in (("pow2", (32, 64, 128)), ("none", (128,)),
                          ("16,48", (16, 48, 128))):
    assert bucket_boundaries.choose(value, 128, 4, [5, 9, 60]).length_buckets \
        == expected
  # auto without data to fit (pretraining, the encoder export): pow2.
  assert bucket_boundaries.choose("auto", 128, 4).length_buckets == (32, 64,
                                                                     128)
  assert length_buckets.parse_length_buckets("pow2", 384) == (
      32, 64, 128, 256, 384)


def test_choice_is_recorded_and_reused_by_a_rerun(tmp_path, caplog):
  folder = str(tmp_path / "run")
  short = [10, 12, 14, 30, 31] * 20
  first = bucket_boundaries.resolve("auto", 64, 2, folder, lambda: short)
  record = json.loads((tmp_path / "run" / "length_buckets.json").read_text())
  assert tuple(record["length_buckets"]) == first == (32, 64)
  assert record["source"] == "train" and record["examples"] == 100
  # Other training data in the same output_dir: the recorded boundaries are
  # kept (a resumed run continues the same batches), with a warning.
  long = [40, 50, 60] * 30
  with caplog.at_level("WARNING"):
    again = bucket_boundaries.resolve("auto", 64, 2, folder, lambda: long)
  assert again == first
  assert "keeping those" in caplog.text
  # Evaluation or export without data: the recorded ones.
  assert bucket_boundaries.resolve("auto", 64, 2, folder, None) == first
  # Other settings choose again; an explicit value is used as given.
  assert bucket_boundaries.resolve("auto", 64, 3, folder,
                                   lambda: long)[-1] == 64
  assert bucket_boundaries.resolve("32", 64, 3, folder, lambda: long) == (
      32, 64)
  assert bucket_boundaries.read(folder).setting == "32"
