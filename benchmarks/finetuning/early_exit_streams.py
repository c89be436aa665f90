"""The mask-stream control of benchmarks.finetuning.early_exit_paired.

A paired seed shares the data order and the initial heads between the two
trees, not the dropout masks: 5f0f06f and today draw them differently
(one draw per call, against one per example row), so the same seed gives
each tree another realization. How far does one realization move a run's
test accuracy? Each tree reruns its first seeds with its masks from other
streams (mask_stream.py), everything else equal. From those:

  - the spread of one run over mask streams (per tree and seed, pooled);
  - the noise a single paired difference carries from masks alone,
    sqrt(2) x that spread, against which the paired study's per-seed
    differences are read;
  - new - old between the trees' means over all their streams, per seed.

`result["streams"]`: {seed: {"old"/"new": {stream: scores}}}, streams
1.. (stream 0 is the paired study's own run, `result["exit"]`).
"""

import math
from typing import Dict, List

import numpy as np

from benchmarks import common


def accuracies(result: Dict, seed: int, name: str) -> List[float]:
  """Full-depth test accuracy of `name`'s tree at `seed`: its own stream
  first, then the others in order."""
  own = result["exit"][seed][name]["test"]["full"]
  others = result["streams"][seed][name]
  return [own] + [others[s]["test"]["full"] for s in sorted(others)]


def seeds_with_streams(result: Dict) -> List[int]:
  """Seeds whose both trees have their own run and at least one other
  stream."""
  return sorted(
      seed for seed, trees in result.get("streams", {}).items()
      if seed in result["exit"] and all(trees.get(n) for n in ("old", "new")))


def stream_stats(result: Dict) -> Dict:
  """{seeds, pooled_sd (one run's sd over streams, ddof 1, pooled over
  trees and seeds), pair_noise (sqrt(2) pooled_sd), differences (per
  seed, new mean - old mean over streams), mean, sd, t, own_rank (per
  seed, the rank of old's own stream among old's streams, 1 = best)}."""
  seeds = seeds_with_streams(result)
  variances, differences, ranks = [], [], []
  for seed in seeds:
    old, new = (accuracies(result, seed, n) for n in ("old", "new"))
    variances += [np.var(old, ddof=1), np.var(new, ddof=1)]
    differences.append(float(np.mean(new) - np.mean(old)))
    ranks.append(1 + sum(a > old[0] for a in old[1:]))
  pooled = float(math.sqrt(np.mean(variances))) if variances else 0.0
  n = len(differences)
  mean = float(np.mean(differences)) if n else 0.0
  sd = float(np.std(differences, ddof=1)) if n > 1 else 0.0
  t = mean / (sd / math.sqrt(n)) if sd > 0 else float("nan")
  return dict(seeds=seeds, pooled_sd=pooled, pair_noise=math.sqrt(2) * pooled,
              differences=differences, mean=mean, sd=sd, t=t,
              own_rank=ranks)


def table(result: Dict) -> str:
  """Per seed: each tree's accuracies by stream and mean, the difference
  of the means."""
  stats = stream_stats(result)
  rows = []
  for seed, difference in zip(stats["seeds"], stats["differences"]):
    old, new = (accuracies(result, seed, n) for n in ("old", "new"))
    rows.append([seed, " / ".join(f"{a:.4f}" for a in old),
                 f"{np.mean(old):.4f}", " / ".join(f"{a:.4f}" for a in new),
                 f"{np.mean(new):.4f}", f"{difference * 100:+.2f}"])
  return common.markdown_table(
      ["seed", "old: own / other streams", "old mean",
       "new: own / other streams", "new mean",
       "new - old, means (points)"], rows)


def summary(result: Dict, paired: Dict) -> str:
  """The control read against the paired study: `paired` is the paired
  study's full-depth test statistics (early_exit_paired.paired_stats)."""
  stats = stream_stats(result)
  n = len(stats["seeds"])
  if not n:
    return ""
  streams = len(accuracies(result, stats["seeds"][0], "old"))
  bound = 2 * stats["pair_noise"] / math.sqrt(paired["n"])
  within = abs(paired["mean"]) < bound
  return (
      f"Mask-stream control: seeds {', '.join(map(str, stats['seeds']))} "
      f"rerun by each tree with its masks from {streams - 1} other "
      f"stream(s) (mask_stream.py; data order and initial heads unchanged). "
      f"One run's test accuracy moves by sd {stats['pooled_sd'] * 100:.2f} "
      "points between mask streams alone (pooled over trees and seeds), so "
      "a single paired difference carries sd "
      f"{stats['pair_noise'] * 100:.2f} points of mask noise, and the mean "
      f"of {paired['n']} has 2 sd / sqrt(n) = {bound * 100:.2f}: the paired "
      f"study's {paired['mean'] * 100:+.2f} is "
      + ("within" if within else "NOT within") + " mask noise. Between the "
      f"trees' means over all {streams} streams, new - old per seed: "
      + ", ".join(f"{d * 100:+.2f}" for d in stats["differences"])
      + f" points (mean {stats['mean'] * 100:+.2f}"
      + (f", sd {stats['sd'] * 100:.2f}, paired t {stats['t']:+.2f}"
         if n > 1 else "")
      + "). Rank of the old tree's own stream among its "
      f"{streams} (1 = best): "
      + ", ".join(str(r) for r in stats["own_rank"]) + ".")
