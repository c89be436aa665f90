"""--pack_examples' input side: the in-graph packer places every example
once, where the reference first-fit puts it (own [CLS], positions from 0,
its slot), its plan averages train_batch_size examples a step, and the
seeded stream resumes by skipping batches."""

import numpy as np
import pytest
import tensorflow as tf

from data_pipeline.tasks import packing

SEQ = 32


def _examples(n, seed, low=3, high=20):
  rng = np.random.default_rng(seed)
  lengths = rng.integers(low, high, n).astype(np.int32)
  mask = (np.arange(SEQ)[None] < lengths[:, None]).astype(np.int32)
  ids = mask * rng.integers(5, 90, (n, SEQ)).astype(np.int32)
  types = mask * (np.arange(SEQ)[None] >= lengths[:, None] // 2)
  features = dict(input_word_ids=ids, input_mask=mask,
                  input_type_ids=types.astype(np.int32))
  return features, lengths


def test_packer_places_every_example_as_the_reference_does():
  n = 700  # two whole windows and a part
  features, lengths = _examples(n, 0)
  plan = packing.plan(lengths, 8, SEQ)
  assert plan.window == packing.WINDOW_EXAMPLES
  assert plan.rows >= 2 and 2 <= plan.slots <= packing.MAX_SLOTS
  dataset = tf.data.Dataset.from_tensor_slices(
      (features, np.arange(n, dtype=np.int32)))
  batches = list(packing.packed_batches(dataset, plan, pad_id=1))
  reference = []  # each window's rows, global example indices
  for start in range(0, n, plan.window):
    window = lengths[start:start + plan.window]
    reference.append([[start + i for i in row] for row in
                      packing.first_fit_decreasing(window, SEQ, plan.slots)])
  rows_seen = []
  for packed, labels in batches:
    packed = {k: v.numpy() for k, v in packed.items()}
    labels = labels.numpy()
    assert packed["input_word_ids"].shape == (plan.rows, SEQ)
    assert packed["example_weights"].shape == (plan.rows, plan.slots)
    for row in range(plan.rows):
      placed = int(packed["example_weights"][row].sum())
      assert np.all(packed["example_weights"][row, :placed] == 1)
      offset = 0
      for slot, i in enumerate(labels[row, :placed]):
        length = lengths[i]
        span = slice(offset, offset + length)
        assert packed["example_starts"][row, slot] == offset
        for name in ("input_word_ids", "input_type_ids"):
          np.testing.assert_array_equal(packed[name][row, span],
                                        features[name][i, :length])
        np.testing.assert_array_equal(packed["input_positions"][row, span],
                                      np.arange(length))
        assert np.all(packed["example_slot_ids"][row, span] == slot + 1)
        assert np.all(packed["input_mask"][row, span] == 1)
        offset += length
      # Padding: the pad id, no slot, no mask.
      assert np.all(packed["input_mask"][row, offset:] == 0)
      assert np.all(packed["input_word_ids"][row, offset:] == 1)
      assert np.all(packed["example_slot_ids"][row, offset:] == 0)
      rows_seen.append(list(labels[row, :placed]))
  # Each window's rows, in a shuffled order; only the last, incomplete
  # batch is dropped.
  expected = [row for rows in reference for row in rows]
  assert 0 <= len(expected) - len(rows_seen) < plan.rows
  start = 0
  for rows in reference:
    got = rows_seen[start:start + len(rows)]
    if len(got) == len(rows):
      assert sorted(got) == sorted(rows)
      assert got != rows  # shuffled: batches mix long and short examples
    else:
      assert all(row in rows for row in got)
    start += len(rows)


def test_first_fit_decreasing_fills_rows_longest_first():
  lengths = [5, 20, 9, 12, 3, 20]
  # Longest first, ties in order: 20 (index 1) opens row 0, 20 (5) row 1,
  # 12 fills row 0, 9 joins row 1, 5 opens row 2, 3 ends row 1 (32 of 32)
  # when it has a third slot.
  assert packing.first_fit_decreasing(lengths, 32, 3) == [[1, 3], [5, 2, 4],
                                                          [0]]
  assert packing.first_fit_decreasing(lengths, 32, 2) == [[1, 3], [5, 2],
                                                          [0, 4]]


def test_plan_averages_the_batch_size():
  rng = np.random.default_rng(1)
  lengths = np.clip(np.round(rng.gamma(4.0, 6.3, 5000)), 4, 66)
  plan = packing.plan(lengths.astype(int), 32, 128)
  assert plan.examples_per_step == pytest.approx(32, rel=0.1)
  assert plan.padded_share < 0.1  # buckets leave about 27% here
  assert plan.min_examples < 32 < plan.max_examples
  two = packing.plan(lengths.astype(int), 32, 128, rows_multiple=2)
  assert two.rows % 2 == 0


def test_seeded_packed_stream_resumes_by_skipping():
  features, lengths = _examples(120, 2)
  plan = packing.plan(lengths, 8, SEQ)

  def stream():
    dataset = tf.data.Dataset.from_tensor_slices(
        (features, np.arange(120, dtype=np.int32))).repeat().shuffle(
            120, seed=5)
    return packing.packed_batches(dataset, plan)

  first = [labels.numpy() for _, labels in stream().take(30)]
  resumed = [labels.numpy() for _, labels in stream().skip(12).take(18)]
  for a, b in zip(first[12:], resumed):
    np.testing.assert_array_equal(a, b)
