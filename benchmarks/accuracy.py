"""Accuracy figures a reader can trust, written once for every accuracy
harness (distillation, the domain benchmark, early exit):

  select              the look (checkpoint, patience, loss) chosen on dev;
                      the figure is its test accuracy, beside the last
                      look's; every contender gets the same number of looks
  paired / beats      seeds are paired: the mean of per-seed differences,
                      their spread and signs; "A beats B" is met only when
                      that mean exceeds the spread (and there are 2 seeds)
  check_above_chance  a model within 2 binomial standard deviations of its
                      split's majority-class rate writes no row
"""

import math
from typing import Dict, Optional, Sequence

import numpy as np

CHANCE_SDS = 2.0  # binomial standard deviations above the majority rate


class ChanceError(ValueError):
  """A model whose accuracy is within noise of chance: it writes no row."""


class LooksError(ValueError):
  """Contenders that did not get the same number of looks at dev."""


def majority_rate(labels: Sequence) -> float:
  """The share of the most frequent label (what always answering it
  scores)."""
  labels = np.asarray(labels)
  if not labels.size:
    raise ValueError("no labels")
  _, counts = np.unique(labels, return_counts=True)
  return float(counts.max() / labels.size)


def binomial_sd(rate: float, rows: int) -> float:
  """The standard deviation of an accuracy measured on `rows` rows whose
  true rate is `rate`: sqrt(p (1 - p) / n)."""
  return math.sqrt(rate * (1.0 - rate) / max(rows, 1))


def check_above_chance(name: str, accuracy: float, labels: Sequence,
                       split: str = "test", sds: float = CHANCE_SDS) -> None:
  """Raises ChanceError (one line naming the model) unless `accuracy` is
  more than `sds` binomial standard deviations above the majority-class
  rate of `labels` (the split's gold labels)."""
  rate = majority_rate(labels)
  margin = sds * binomial_sd(rate, len(labels))
  if accuracy <= rate + margin:
    raise ChanceError(
        f"{name}: {split} accuracy {accuracy:.4f} is within {sds:g} "
        f"binomial standard deviations ({margin:.4f}) of the majority-class "
        f"rate {rate:.4f} on {len(labels)} rows: a model at chance writes "
        "no row (train it until it learns)")


def select(looks: Sequence[Dict], name: str = "") -> Dict:
  """The look chosen on dev and the figures it reports.

  looks: in training order, each {"dev": dev accuracy, "test": {metric:
  value} on the test split, optional "at": what the look is (a step, a
  patience)}. Returns {"test": the chosen look's test metrics, "last": the
  last look's, "dev": the chosen dev accuracy, "at", "looks": how many}.
  Ties go to the earliest look."""
  if not looks:
    raise ValueError(f"{name or 'a contender'}: no look at dev")
  best = max(range(len(looks)), key=lambda i: (looks[i]["dev"], -i))
  return dict(test=dict(looks[best]["test"]), last=dict(looks[-1]["test"]),
              dev=float(looks[best]["dev"]), at=looks[best].get("at", best),
              looks=len(looks))


def check_equal_looks(looks: Dict[str, int]) -> None:
  """LooksError unless every contender (name -> looks at dev) had the
  same number: a contender selected among more looks is favoured."""
  if len(set(looks.values())) > 1:
    listed = ", ".join(f"{k} {v}" for k, v in sorted(looks.items()))
    raise LooksError(f"contenders had different numbers of looks at dev "
                     f"({listed}): give each the same")


# Seeds a "beats" verdict needs (beats).
MIN_SEEDS = 3


def paired(a: Sequence[float], b: Sequence[float]) -> Dict:
  """Per-seed differences a - b (the same seed at the same index):
  {"mean", "spread" (max - min; 0 for one seed), "n", "signs" ("+", "-"
  or "0" per seed), "differences"}."""
  if len(a) != len(b) or not a:
    raise ValueError(f"paired seeds need equal, non-empty lists: {len(a)} "
                     f"and {len(b)} values")
  differences = [float(x) - float(y) for x, y in zip(a, b)]
  signs = "".join("+" if d > 0 else "-" if d < 0 else "0"
                  for d in differences)
  return dict(mean=float(np.mean(differences)),
              spread=float(max(differences) - min(differences)),
              n=len(differences), signs=signs, differences=differences)


def beats(a: Sequence[float], b: Sequence[float],
          margin: float = 0.0) -> Dict:
  """The goal "A beats B (by more than `margin`)" on paired seeds: met when
  there are at least MIN_SEEDS seeds and the mean paired difference minus
  `margin` exceeds the differences' spread. {"met", "figures", **paired}.

  Two seeds give no verdict: their spread is one difference minus the
  other, which two equal differences make 0, so any mean would exceed it."""
  pair = paired(a, b)
  met = pair["n"] >= MIN_SEEDS and pair["mean"] - margin > pair["spread"]
  bar = f" - {margin:.4f}" if margin else ""
  figures = (f"paired mean {pair['mean']:+.4f}{bar} against spread "
             f"{pair['spread']:.4f} ({pair['n']} seeds, signs "
             f"{pair['signs']})")
  if pair["n"] < MIN_SEEDS:
    figures += (f"; fewer than {MIN_SEEDS} seeds give no verdict (read the "
                "signs): not met")
  return dict(pair, met=met, figures=figures)


def paired_cell(pair: Optional[Dict]) -> str:
  """"+0.0123 ± 0.0040 (++-)": a table cell of a paired difference."""
  if not pair:
    return ""
  return f"{pair['mean']:+.4f} ± {pair['spread']:.4f} ({pair['signs']})"
