"""The early-exit benchmark's report: the markdown tables, the
accuracy-against-latency chart and the first table's row."""

from typing import Dict, List, Optional

from benchmarks import common


def table_row(table, cuts, patience, auto):
  row = table[patience]
  mean = row["mean_exit_layer"]
  cut = max(1, int(round(mean)))
  return [str(patience) + (" (auto)" if patience == auto else ""),
          f"{row['accuracy']:.3f}", f"{mean:.2f}",
          f"{cuts[cut - 1]:.3f} (cut {cut})"]


def report(depth_rows, rows, compaction, layers, loss, auto, curve,
           batch1_examples, split="test") -> str:
  """The section's text; every figure is on `split` ("test": auto's
  patience was chosen on dev; "dev": on the same set, said so)."""
  trained = ("" if loss is None else
             f"final training loss {loss:.3f}; ")
  chosen = ("chosen on dev" if split == "test" else
            "chosen on this same dev set: no test split was given")
  parts = [f"{split.capitalize()} accuracy per patience ({layers} "
           f"applications; {trained}auto = patience {auto}, {chosen}):",
           common.markdown_table(
               ["patience", f"{split} accuracy", "mean exit layer",
                "static cut at that depth"], depth_rows)]
  examples = (f"the whole {split} set" if batch1_examples <= 0 else
              f"{batch1_examples} {split} examples spread over the file")
  table_rows = [[r["variant"], r["runtime"], f"{r['accuracy']:.3f}",
                 f"{r['mean_exit_layer']:.2f}", f"{r['ms_batch_1']:.2f}",
                 f"{r['examples_per_s_32']:.0f}"] for r in rows]
  parts += [f"Per runtime (ms per example at batch 1, {examples}, one at "
            f"a time; examples/s at batch 32 over the whole {split} set; the "
            "best of the repeats):",
            common.markdown_table(
                ["variant", "runtime", f"{split} accuracy", "mean exit layer",
                 "ms at batch 1", "examples/s at batch 32"], table_rows),
            "SavedModel at batch 32, the exit loop: compaction "
            f"{compaction['compaction']:.0f} examples/s, masking "
            f"{compaction['masking']:.0f} examples/s."]
  curve_rows = (
      [[f"patience {p}", f"{acc:.3f}", f"{ms:.2f}"]
       for ms, acc, p in curve["early exit"]] +
      [[f"static cut {d}" + (" (full depth)" if d == layers else ""),
        f"{acc:.3f}", f"{ms:.2f}"] for ms, acc, d in curve["static cut"]])
  parts += [f"Accuracy against batch-1 latency, every patience and every "
            f"static depth (TensorFlow, in process, {examples}):",
            common.markdown_table(["variant", f"{split} accuracy",
                                   "ms at batch 1"], curve_rows)]
  return "\n\n".join(parts)


def chart_spec(curve, title: str, split: str = "test") -> Dict:
  """The accuracy-against-latency chart (benchmarks.charts "lines")."""
  full = curve["static cut"][-1]
  return dict(name="early_exit", kind="lines", title=title,
              x_label="ms per example at batch 1", unit=f"{split} accuracy",
              series={"early exit (patience 1..L-1)":
                      [[round(ms, 3), acc] for ms, acc, _ in
                       curve["early exit"]],
                      "static cut (depth 1..L)":
                      [[round(ms, 3), acc] for ms, acc, _ in
                       curve["static cut"]],
                      "full depth": [[round(full[0], 3), full[1]]]})


def cut_at_depth(curve, depth: float) -> float:
  """Batch-1 ms of a static cut at a fractional `depth` (the mean exit
  layer): linear between the measured cuts at the depths on either side,
  what running each example's own depth without the exit checks costs
  when time is linear in depth."""
  times = {d: ms for ms, _, d in curve["static cut"]}
  low = max(1, min(int(depth), max(times)))
  high = min(low + 1, max(times))
  share = min(max(depth - low, 0.0), 1.0) if high > low else 0.0
  return times[low] + share * (times[high] - times[low])


def ceiling(curve, mean: float, layers: int):
  """(ms, label): the faster of full depth's time scaled by mean / L (the
  layers' share alone, fixed costs scaled too) and the static cut at the
  mean depth (the same layers, measured, no exit checks), so neither a
  static cut nor the scaled figure runs faster than the ceiling."""
  full_ms = curve["static cut"][-1][0]
  scaled = full_ms * mean / layers
  cut = cut_at_depth(curve, mean)
  if scaled <= cut:
    return scaled, f"full depth x {mean:.2f}/{layers} layers"
  return cut, f"static cut at depth {mean:.2f} (measured cuts, linear)"


def figures(curve, table, auto, layers, machine: str, command: str,
            conditions: str, title: str,
            seq_length: Optional[int] = None) -> List[Dict]:
  """The first table's row, from the same figures as the sweep (`curve`,
  TensorFlow in process, the same examples): auto's batch-1 time against
  full depth's (same weights, same run: the baseline, ours without the
  feature); the ceiling (`ceiling`): what computing less could give if the
  loop cost nothing but its layers. Auto at 0 (no patience keeps the
  accuracy) is full depth itself."""
  full_ms, full_accuracy, depth = curve["static cut"][-1]
  assert depth == layers, (depth, layers)
  if auto:
    ms, accuracy, _ = next(p for p in curve["early exit"] if p[2] == auto)
    mean = table[auto]["mean_exit_layer"]
    label = (f"patience {auto} (auto), {mean:.2f} of {layers} layers, "
             f"accuracy {accuracy:.3f}")
  else:
    ms, accuracy, mean = full_ms, full_accuracy, float(layers)
    label = "auto chose full depth (no patience keeps the accuracy)"
  limit, limit_label = ceiling(curve, mean, layers)
  return [dict(
      job=f"Early exit, batch 1 ({title}"
      + (f", seq {seq_length})" if seq_length else ")"), order=60,
      ours=dict(label=label, value=round(ms, 2), unit="ms"),
      peer=dict(label=f"full depth, same weights, accuracy "
                f"{full_accuracy:.3f}", value=round(full_ms, 2), unit="ms"),
      contender="baseline", higher_is_better=False,
      ceiling=dict(label=limit_label, value=round(limit, 2), unit="ms"),
      reached=round(ms, 2), machine=machine, date=common.today(),
      command=command, conditions=conditions,
      chart=chart_spec(curve, f"Early exit: {title}"))]
