"""PNG charts of benchmark figures (matplotlib: pip install ".[benchmarks]").

Two kinds, drawn from plain numbers so that a harness (with --write) and
benchmarks.summary (from BENCHMARKS.md's recorded figures) draw the same
picture:

  bars   contenders side by side per group (e.g. ours, Model Garden per
         model size), each group's ceiling (the matmul peak in the bars'
         unit) marked as a line above it
  lines  a value against a length per contender (serving latency against
         tokens, one line per runtime)
"""

import os
from typing import Dict, Optional, Sequence, Tuple

CHARTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          "charts")


def _pyplot():
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  return plt


def bars(path: str, title: str, unit: str,
         groups: Sequence[Tuple[str, Dict[str, float]]],
         ceilings: Optional[Sequence[Optional[float]]] = None,
         ceiling_label: str = "peak") -> str:
  """Grouped bars: groups = [(group label, {contender: value})]; a
  missing or zero value leaves a gap. ceilings[i] (same unit) is drawn as
  a dashed line over group i, labelled `ceiling_label`. Returns path."""
  import numpy as np
  plt = _pyplot()
  names = list(dict.fromkeys(n for _, values in groups for n in values))
  width = 0.8 / max(len(names), 1)
  x = np.arange(len(groups))
  fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(groups) + 3), 3.6))
  for j, name in enumerate(names):
    ax.bar(x - 0.4 + width * (j + 0.5),
           [values.get(name) or 0.0 for _, values in groups], width,
           label=name)
  for i, ceiling in enumerate(ceilings or []):
    if ceiling:
      ax.hlines(ceiling, i - 0.45, i + 0.45, colors="black",
                linestyles="dashed",
                label=ceiling_label if i == 0 else None)
  ax.set_xticks(x, [label for label, _ in groups])
  ax.set_ylabel(unit)
  ax.set_title(title, fontsize=10)
  ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
  return _save(fig, path)


def lines(path: str, title: str, x_label: str, unit: str,
          series: Dict[str, Sequence[Tuple[float, float]]]) -> str:
  """One line per contender through its (x, y) points. Returns path.
  Past ten contenders the colours repeat, so the markers change with
  every ten: no two contenders look alike."""
  plt = _pyplot()
  fig, ax = plt.subplots(figsize=(7.5, 3.6))
  markers = "osD^v"
  for i, (name, points) in enumerate(series.items()):
    points = sorted(p for p in points if p[1] is not None)
    ax.plot([p[0] for p in points], [p[1] for p in points],
            marker=markers[i // 10 % len(markers)], label=name)
  ax.set_xlabel(x_label)
  ax.set_ylabel(unit)
  ax.set_title(title, fontsize=10)
  ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
  return _save(fig, path)


def from_spec(spec: Dict, folder: str = CHARTS_DIR) -> str:
  """Draws a figures block's "chart" (benchmarks.common.figures_block) to
  folder/<name>.png."""
  path = os.path.join(folder, spec["name"] + ".png")
  if spec["kind"] == "lines":
    return lines(path, spec["title"], spec["x_label"], spec["unit"],
                 {k: [tuple(p) for p in v] for k, v in spec["series"].items()})
  return bars(path, spec["title"], spec["unit"],
              [(g[0], g[1]) for g in spec["groups"]], spec.get("ceilings"))


def _save(fig, path: str) -> str:
  os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
  fig.tight_layout()
  # Fixed metadata: the same figures draw the same bytes.
  fig.savefig(path, dpi=80, metadata={"Software": None})
  _pyplot().close(fig)
  return path
