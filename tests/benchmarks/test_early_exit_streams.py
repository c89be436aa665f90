"""The mask-stream control of benchmarks.finetuning.early_exit_paired:
its statistics on crafted figures, and mask_stream.py's seed shift on
the real dropout layer (in a subprocess: it patches modules)."""

import math
import os
import subprocess
import sys

import numpy as np
import pytest

from benchmarks.finetuning import early_exit_paired as paired
from benchmarks.finetuning import early_exit_streams as streams

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def _scores(full):
  row = dict(full=full, p1=full, p2=full, p3=full)
  return dict(test=row, dev=row, labels=dict(test=[0, 1] * 50))


def _result(exit_pairs, stream_pairs):
  """exit_pairs: {seed: (old, new)}; stream_pairs: {seed: (old list, new
  list)} of streams 1..."""
  return {
      "exit": {s: dict(old=_scores(o), new=_scores(n))
               for s, (o, n) in exit_pairs.items()},
      "plain": {},
      "streams": {s: {name: {i + 1: _scores(a) for i, a in enumerate(acc)}
                      for name, acc in (("old", o), ("new", n))}
                  for s, (o, n) in stream_pairs.items()}}


def test_stream_statistics_on_crafted_accuracies():
  result = _result({1: (0.30, 0.26), 2: (0.28, 0.25), 3: (0.29, 0.27)},
                   {1: ([0.24, 0.26], [0.28, 0.24]),
                    2: ([0.22, 0.25], [0.25, 0.22])})
  stats = streams.stream_stats(result)
  assert stats["seeds"] == [1, 2]  # seed 3 has no other stream
  old1, new1 = [0.30, 0.24, 0.26], [0.26, 0.28, 0.24]
  old2, new2 = [0.28, 0.22, 0.25], [0.25, 0.25, 0.22]
  pooled = math.sqrt(np.mean([np.var(a, ddof=1)
                              for a in (old1, new1, old2, new2)]))
  assert stats["pooled_sd"] == pytest.approx(pooled)
  assert stats["pair_noise"] == pytest.approx(math.sqrt(2) * pooled)
  differences = [np.mean(new1) - np.mean(old1), np.mean(new2) - np.mean(old2)]
  assert stats["differences"] == pytest.approx(differences)
  assert stats["mean"] == pytest.approx(np.mean(differences))
  assert stats["own_rank"] == [1, 1]
  table = streams.table(result).splitlines()
  assert table[2].startswith("| 1 | 0.3000 / 0.2400 / 0.2600 | 0.2667 |")
  assert table[2].rstrip().endswith(f"| {differences[0] * 100:+.2f} |")


def test_the_control_reads_the_paired_gap_against_mask_noise():
  # Streams spread by sd ~2.9 points: a paired -2 over 4 seeds is noise.
  noisy = _result({1: (0.30, 0.28), 2: (0.30, 0.28), 3: (0.30, 0.28),
                   4: (0.30, 0.28)},
                  {1: ([0.25, 0.31], [0.25, 0.31]),
                   2: ([0.25, 0.31], [0.25, 0.31])})
  text = paired.control(noisy)
  assert "-2.00 is within mask noise" in text
  assert "Rank of the old tree's own stream among its 3 (1 = best): 2, 2" in (
      text)
  # Streams that agree to 0.1 point: the same gap is not noise.
  tight = _result({1: (0.30, 0.28), 2: (0.30, 0.28), 3: (0.30, 0.28),
                   4: (0.30, 0.28)},
                  {1: ([0.299, 0.301], [0.279, 0.281]),
                   2: ([0.299, 0.301], [0.279, 0.281])})
  assert "-2.00 is NOT within mask noise" in paired.control(tight)
  assert paired.control(_result({1: (0.3, 0.28)}, {})) == ""
  assert paired.at_chance(_result({1: (0.9, 0.9)},
                                  {1: ([0.9], [0.5])})) == [
      paired.at_chance(_result({1: (0.9, 0.5)}, {}))[0].replace(
          "exit seed 1 new", "exit seed 1 stream 1 new")]


_PROBE = """
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np, tensorflow as tf
from albert_tf.layers import checkpointed_dropout as cd
from albert_tf.networks import layer_loop
from benchmarks.finetuning import mask_stream

layer = cd.CheckpointedDropout(0.5)
x = tf.ones([4, 8])
seed = tf.constant([3, 4], tf.int64)

def mask():
  with cd.seeded(seed):
    return layer(x, training=True).numpy()

before = mask()
assert np.array_equal(before, mask())
mask_stream.shift_seeds(7)
after = mask()
assert layer_loop.next_seed is cd.next_seed  # imported by name: shifted too
assert np.array_equal(after, mask())  # a stream is deterministic
with cd.seeded(seed):
  expected = tf.random.experimental.stateless_fold_in(
      tf.random.experimental.stateless_fold_in(seed, 0),
      mask_stream.STREAM_BASE + 7)
  assert np.array_equal(cd.next_seed().numpy(), expected.numpy())
# A training call outside any scope (5f0f06f's embeddings and heads) is
# put under a scope of a seed from the layer's generator: shifted too.
state = layer.rng.state.numpy()
unscoped = layer(x, training=True).numpy()
layer.rng.state.assign(state)
with cd.seeded(layer.rng.make_seeds(1)[:, 0]):
  assert np.array_equal(unscoped, layer(x, training=True).numpy())
assert np.array_equal(layer(x, training=False).numpy(), x.numpy())
print((before != after).mean(), (after == 0).mean())
"""


def test_mask_stream_shifts_every_seeded_mask():
  done = subprocess.run([sys.executable, "-c", _PROBE, REPO],
                        capture_output=True, text=True, cwd=REPO,
                        timeout=120)
  assert done.returncode == 0, done.stderr[-2000:]
  changed, dropped = map(float, done.stdout.split())
  assert changed > 0.2  # half the elements of two rate-0.5 masks differ
  assert 0.2 < dropped < 0.8
