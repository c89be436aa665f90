"""The pure parts of `benchmarks.finetuning.distillation`: the patience
whose mean depth is nearest a cut, the figures per contender over seeds,
the teacher's confidence on its training records at the distillation
temperature, the issue's goal checks, the report, the chart and the first
table's row.
"""

from typing import Dict, List, Optional, Sequence

import numpy as np

from benchmarks import accuracy
from benchmarks import common

ORDER = 65  # the first table: after early exit (60)


def patience_for_depth(table: Sequence[Dict], depth: float) -> int:
  """The patience (1..L-1) whose mean exit layer is nearest `depth`
  (ties: the smaller patience, the faster). table[p]["mean_exit_layer"]
  as albert_tf.training.early_exit.exit_table gives it (0: full depth)."""
  if len(table) < 2:
    raise ValueError(f"no patience in a table of {len(table)} rows")
  return min(range(1, len(table)),
             key=lambda p: (abs(table[p]["mean_exit_layer"] - depth), p))


def contender_names(layers: int, train_steps: int, narrow: Dict
                    ) -> Dict[str, str]:
  """key -> the contender's name in the tables (narrow: the narrower
  student's config fields)."""
  half, small, tiny = layers // 2, layers // 4, max(1, layers // 8)
  width = f"H={narrow['hidden_size']}"
  narrow_layers = narrow["num_hidden_layers"]
  return dict(teacher=f"teacher (L={layers})",
              teacher_more=f"teacher (L={layers}) + {train_steps} steps",
              cut=f"static cut k={half}", pabee=f"PABEE cut k={half}",
              exit=f"early exit (depth ~{half})",
              alone=f"alone k={half}", gold=f"cut k={half} + gold only",
              distilled=f"distilled k={half}",
              cut_small=f"static cut k={small}",
              alone_small=f"alone k={small}",
              gold_small=f"cut k={small} + gold only",
              distilled_small=f"distilled k={small}",
              cut_tiny=f"static cut k={tiny}",
              alone_tiny=f"alone k={tiny}",
              gold_tiny=f"cut k={tiny} + gold only",
              distilled_tiny=f"distilled k={tiny}",
              narrow_alone=f"narrow {width} k={narrow_layers} alone",
              narrow=f"narrow {width} k={narrow_layers} distilled",
              on_task=f"distilled k={half} + on-task unlabeled",
              off_task=f"distilled k={half} + off-task unlabeled")


def spread(values: Sequence[float]) -> float:
  """Seed-to-seed spread: max - min (0 for one seed)."""
  return float(max(values) - min(values)) if values else 0.0


def summary(values: Sequence[float]) -> Dict:
  """{"mean", "spread", "n"} of per-seed values."""
  return dict(mean=float(np.mean(values)), spread=spread(values),
              n=len(values))


def soft_target_confidence(logits, labels,
                           temperature: float) -> Dict[str, float]:
  """What the soft targets can carry beyond the gold labels: the teacher's
  accuracy on the records of its logits [N, C] (labels [N] class
  indices) and the mean top probability of softmax(logits / temperature).
  A top probability near 1 on records it gets right means the soft targets
  are near one-hot there: nearly the gold labels again."""
  logits = np.asarray(logits, np.float64) / temperature
  logits = logits - logits.max(axis=-1, keepdims=True)
  probs = np.exp(logits)
  probs /= probs.sum(axis=-1, keepdims=True)
  labels = np.asarray(labels)
  return dict(accuracy=float(np.mean(probs.argmax(-1) == labels)),
              mean_top_probability=float(probs.max(-1).mean()),
              temperature=float(temperature), records=int(len(labels)))


def confidence_line(per_seed: Sequence[Dict]) -> str:
  """One sentence of the section: soft_target_confidence per teacher seed
  and their mean."""
  if not per_seed:
    return ""
  seeds = "; ".join(
      f"seed {i}: accuracy {c['accuracy']:.4f}, mean top probability "
      f"{c['mean_top_probability']:.4f}" for i, c in enumerate(per_seed))
  mean_top = float(np.mean([c["mean_top_probability"] for c in per_seed]))
  mean_acc = float(np.mean([c["accuracy"] for c in per_seed]))
  return (f"The teacher on its {per_seed[0]['records']} training records, "
          f"softmax at the distillation temperature T="
          f"{per_seed[0]['temperature']:g}: accuracy {mean_acc:.4f}, mean "
          f"top probability {mean_top:.4f} (mean of {len(per_seed)} seeds; "
          f"{seeds}).")


def goals(contenders: Dict[str, Dict], teacher: str, half: str,
          fast: Sequence[str], beats: Dict[str, Sequence[str]],
          flops: Dict[str, int], speed: Dict[str, float]) -> List[Dict]:
  """The issue's goals, each {"goal", "met", "figures"}.

  contenders: name -> {"accuracy": per-seed test accuracies, the same
  seed at the same index}; teacher: the teacher with the distilled
  students' budget ("teacher + 300 steps"); half: the distilled k=L/2
  student; fast: the distilled students meant to be 4x cheaper (each
  checked on its own; its FLOPs ratio is checked, not assumed); beats:
  distilled student -> the alternatives it must beat, on paired seeds
  (accuracy.beats: the mean per-seed difference exceeds its spread, 3
  seeds at least); flops: name -> FLOPs per example; speed:
  {"teacher_savedmodel_ms", "litert_ms": {fast student: ms}} (batch 1)."""
  def acc(name):
    return summary(contenders[name]["accuracy"])
  ref = acc(teacher)["mean"]
  out = []
  kept = acc(half)["mean"] / ref
  out.append(dict(goal="k = L/2: the distilled student keeps >= 98% of "
                  "the teacher's accuracy", met=kept >= 0.98,
                  figures=f"{acc(half)['mean']:.4f} / {ref:.4f} = "
                  f"{kept:.1%}"))
  for student in fast:
    ratio = flops[teacher] / flops[student]
    kept = acc(student)["mean"] / ref
    out.append(dict(goal=f">= 4x fewer FLOPs: {student} keeps >= 95%",
                    met=ratio >= 4 and kept >= 0.95,
                    figures=f"{ratio:.2f}x fewer FLOPs; "
                    f"{acc(student)['mean']:.4f} / {ref:.4f} = {kept:.1%}"))
  for student, others in beats.items():
    for other in others:
      if student not in contenders or other not in contenders:
        continue
      check = accuracy.beats(contenders[student]["accuracy"],
                             contenders[other]["accuracy"])
      out.append(dict(goal=f"{student} beats {other} (paired seeds)",
                      met=check["met"], figures=check["figures"]))
  for student in fast:
    litert_ms = speed["litert_ms"][student]
    faster = speed["teacher_savedmodel_ms"] / litert_ms
    out.append(dict(goal=f"LiteRT int8 of {student} >= 8x faster at batch "
                    "1 than the teacher's float32 SavedModel",
                    met=faster >= 8,
                    figures=f"{speed['teacher_savedmodel_ms']:.2f} ms / "
                    f"{litert_ms:.2f} ms = {faster:.1f}x"))
  return out


def goals_table(checks: Sequence[Dict]) -> str:
  return common.markdown_table(
      ["goal", "met", "figures"],
      [(c["goal"], "met" if c["met"] else "not met", c["figures"])
       for c in checks])


def at_chance(contenders: Dict[str, Dict], labels: Sequence
              ) -> Dict[str, str]:
  """name -> the one-line refusal of each contender whose mean test
  accuracy is within noise of chance (accuracy.check_above_chance)."""
  refused = {}
  for name, figures in contenders.items():
    try:
      accuracy.check_above_chance(name, float(np.mean(figures["accuracy"])),
                                  labels)
    except accuracy.ChanceError as e:
      refused[name] = str(e)
  return refused


def contenders_table(contenders: Dict[str, Dict], flops: Dict[str, int],
                     timings: Dict[str, Dict],
                     skip: Sequence[str] = ()) -> str:
  """One row per contender (but those in `skip`: at chance): test
  accuracy at the look dev chose and macro F1 (mean ± spread over seeds),
  the last look's test accuracy, FLOPs, mean depth, batch-1 ms (SavedModel,
  LiteRT int8) and batch-32 examples/s of the timed model it shares its
  graph with, and the LiteRT int8 file's test accuracy where it was
  measured (the first seed's model; timings: name -> {"savedmodel_ms",
  "litert_ms", "per_s", "litert_accuracy", "as"})."""
  rows = []
  for name, figures in contenders.items():
    if name in skip:
      continue
    a, f = summary(figures["accuracy"]), summary(figures["macro_f1"])
    last = summary(figures.get("last") or figures["accuracy"])
    t = timings.get(name, {})
    ms = [f"{t[k]:.2f}" if k in t else "" for k in ("savedmodel_ms",
                                                     "litert_ms")]
    rows.append((name, f"{a['mean']:.4f} ± {a['spread']:.4f} ({a['n']})",
                 f"{f['mean']:.4f} ± {f['spread']:.4f}",
                 f"{last['mean']:.4f} ± {last['spread']:.4f}",
                 f"{flops[name] / 1e6:.1f}",
                 f"{np.mean(figures['depth']):.2f}", *ms,
                 f"{t['per_s']:.0f}" if t else "",
                 f"{t['litert_accuracy']:.4f}" if "litert_accuracy" in t
                 else "", t.get("as", "")))
  return common.markdown_table(
      ["contender", "test accuracy at dev's choice (mean ± spread, seeds)",
       "macro F1", "test accuracy, last step", "MFLOPs / example",
       "mean depth", "batch 1 ms SavedModel", "batch 1 ms LiteRT int8",
       "batch 32 ex/s SavedModel", "LiteRT int8 test accuracy (seed 1)",
       "timed as"],
      rows)


def chart_spec(contenders: Dict[str, Dict], timings: Dict[str, Dict],
               title: str) -> Dict:
  """Accuracy (mean over seeds) against SavedModel batch-1 ms, one point
  per timed contender (benchmarks.charts "lines", one series each)."""
  series = {}
  for name, figures in contenders.items():
    if name in timings:
      series[name] = [[round(timings[name]["savedmodel_ms"], 3),
                       round(float(np.mean(figures["accuracy"])), 4)]]
  return dict(name="distillation", kind="lines", title=title,
              x_label="ms per example at batch 1 (SavedModel, token ids)",
              unit="test accuracy (mean of seeds)", series=series)


def figures_row(contenders: Dict[str, Dict], timings: Dict[str, Dict],
                teacher: str, half: str, flops: Dict[str, int],
                machine: str, command: str, conditions: str, title: str,
                chart: Optional[Dict] = None, peak: float = 0.0) -> Dict:
  """The first table's row: the distilled k=L/2 student's batch-1
  SavedModel time against the teacher's (same run, ours without
  distillation: the baseline); ceiling: the student's FLOPs per example
  at `peak` FLOP/s, the best float32 matmul rate at the model's
  feed-forward shapes measured in the same run (the teacher's time
  scaled by the FLOPs ratio is not a limit: a smaller graph beats it)."""
  half_acc = float(np.mean(contenders[half]["accuracy"]))
  teacher_acc = float(np.mean(contenders[teacher]["accuracy"]))
  ms = timings[half]["savedmodel_ms"]
  teacher_ms = timings[teacher]["savedmodel_ms"]
  ceiling = 1000.0 * flops[half] / peak
  row = dict(
      job=f"Distillation, batch 1 ({title})", order=ORDER,
      ours=dict(label=f"{half}, test accuracy {half_acc:.3f}",
                value=round(ms, 2), unit="ms"),
      peer=dict(label=f"{teacher}, same run, test accuracy "
                f"{teacher_acc:.3f}",
                value=round(teacher_ms, 2), unit="ms"),
      contender="baseline", higher_is_better=False,
      ceiling=dict(label=f"{half}'s {flops[half] / 1e6:.1f} MFLOPs an "
                   f"example at {peak / 1e9:.1f} GFLOP/s, the best float32 "
                   "matmul at the model's feed-forward shapes (batch 1 and "
                   "32), same run",
                   value=round(ceiling, 3), unit="ms"),
      reached=round(ms, 2), machine=machine, date=common.today(),
      command=command, conditions=conditions)
  if chart:
    row["chart"] = chart
  return row
