"""Peak memory and step time of pretraining, recomputation on and off,
against the memory plan (albert_tf/memory_plan.py).

  python -m benchmarks.memory.peaks --sizes=base,large --seq_lengths=128,512 \
      --batch_sizes=2,4 --steps=3 --write

Each configuration (size, sequence, batch, --recompute_layers) trains
`--steps` LAMB steps of the real pretraining step (PretrainingRunner.
train_step, float32, synthetic batches with 20 predictions) in a child
process of its own. Memory: the child's peak resident memory (VmHWM) minus
its resident memory once the model, the optimizer slots and the traced
step exist: what the step adds, i.e. the plan's gradients, shared
gradients and activations -- peak RSS is a fair proxy for tensors on this
CPU. The first step's peak is the one compared (a fresh process); later
steps' (VmHWM reset between steps through /proc/self/clear_refs) run on a
heap the first step left fragmented and are reported beside it.
Recomputation's measured saving (peak off - peak on) is checked against the
plan's (activations off - on): the goal is within 25%.

Step time: the median of the steps after the first; the section gives the
load average at the start (other processes change the times, not the
memory peaks).

With `--chart` (default on with --write) it draws benchmarks/charts/memory.png:
the plan's peak per replica against sequence length for batches 8 to 64,
recomputation on and off (matplotlib; skipped with a message if it is not
installed).
"""

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Dict, List

from benchmarks import common

SECTION = "Pretraining memory: recomputation and the memory plan"
# `python -m benchmarks.summary --run`'s short mode: the first table's
# configuration only, two fresh processes; about 3 minutes on 2 cores
# (3 min 57 s measured at load average 9 on a 2-core AMD EPYC).
SHORT_ARGS = ["--sizes=base", "--seq_lengths=512", "--batch_sizes=4",
              "--steps=2", "--write"]
CHART = os.path.join(common.REPO_ROOT, "benchmarks", "charts", "memory.png")
PREDICTIONS = 20
MIB = 2**20


def _rss_mb(field: str) -> float:
  with open("/proc/self/status") as f:
    for line in f:
      if line.startswith(field + ":"):
        return int(line.split()[1]) / 1024
  raise RuntimeError(f"no {field} in /proc/self/status")


def worker(size: str, batch: int, seq: int, recompute: bool,
           steps: int) -> Dict[str, float]:
  """In the child: baseline and peak RSS (MiB) and step seconds."""
  import tensorflow as tf

  from albert_tf import optimization
  from albert_tf.models.albert_pretrainer import AlbertPretrainer
  from albert_tf.networks.albert_encoder import AlbertEncoder
  from albert_tf.training.pretraining.runner import PretrainingRunner
  from benchmarks.pretraining.step import synthetic_batch
  config = common.load_config(size)
  model = AlbertPretrainer(AlbertEncoder(config, recompute_layers=recompute))
  optimizer = optimization.create_optimizer("lamb", 1e-4, 10**6, 0)
  data = synthetic_batch(config, batch, seq, predictions=PREDICTIONS)
  dataset = tf.data.Dataset.from_tensors(data).repeat()
  runner = PretrainingRunner(tf.distribute.get_strategy(), model, optimizer,
                             dataset, global_batch_size=batch)
  optimizer._create_all_weights(model.trainable_variables)  # slots first
  iterator = iter(dataset)
  step = tf.function(lambda: runner.train_step(iterator))
  step.get_concrete_function()  # traced before the baseline
  baseline = _rss_mb("VmRSS")
  times, peaks = [], []
  for _ in range(steps):
    start = time.perf_counter()
    step()
    float(runner.optimizer.iterations)
    times.append(time.perf_counter() - start)
    peaks.append(_rss_mb("VmHWM"))
    _reset_peak()
  # The first step also holds grappler's rewrite of the graph.
  return dict(baseline_mib=baseline, first_peak_mib=peaks[0],
              later_peak_mib=max(peaks[1:] or peaks),
              step_seconds=common.median(times[1:] or times))


def _reset_peak() -> None:
  """VmHWM := VmRSS (Linux: writing 5 to /proc/self/clear_refs)."""
  with open("/proc/self/clear_refs", "w") as f:
    f.write("5")


def measure(size: str, batch: int, seq: int, recompute: bool,
            steps: int) -> Dict[str, float]:
  """`worker` in a child process of its own."""
  args = json.dumps(dict(size=size, batch=batch, seq=seq,
                         recompute=recompute, steps=steps))
  result = subprocess.run(
      [sys.executable, "-m", "benchmarks.memory.peaks", "--worker", args],
      cwd=common.REPO_ROOT, capture_output=True, text=True, check=False,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  if result.returncode:
    raise RuntimeError(f"worker {args} failed:\n{result.stderr[-2000:]}")
  return json.loads(result.stdout.strip().splitlines()[-1])


def planned(size: str, batch: int, seq: int, recompute: bool):
  from albert_tf import memory_plan
  return memory_plan.plan(common.load_config(size), batch, seq, PREDICTIONS,
                          recompute_layers=recompute)


def run(sizes: List[str], seqs: List[int], batches: List[int],
        steps: int) -> Dict[str, object]:
  """Rows of the table and each configuration's saving check."""
  rows, checks, configs = [], [], []
  for size in sizes:
    for seq in seqs:
      for batch in batches:
        by_mode = {}
        for recompute in (False, True):
          measured = measure(size, batch, seq, recompute, steps)
          plan = planned(size, batch, seq, recompute)
          step_mib = measured["first_peak_mib"] - measured["baseline_mib"]
          plan_mib = _plan_mib(plan)
          by_mode[recompute] = (step_mib, plan)
          later_mib = measured["later_peak_mib"] - measured["baseline_mib"]
          rows.append([common.size_label(size), seq, batch,
                       "on" if recompute else "off", f"{step_mib:,.0f}",
                       f"{later_mib:,.0f}",
                       f"{plan_mib:,.0f}", f"{step_mib / plan_mib:.2f}",
                       f"{measured['step_seconds']:.2f}"])
        configs.append(dict(
            size=size, seq=seq, batch=batch, off_mib=by_mode[False][0],
            on_mib=by_mode[True][0], plan_on_mib=_plan_mib(by_mode[True][1])))
        saving = by_mode[False][0] - by_mode[True][0]
        plan_saving = (by_mode[False][1].activation_bytes
                       - by_mode[True][1].activation_bytes) / MIB
        checks.append(dict(size=size, seq=seq, batch=batch,
                           measured_saving_mib=saving,
                           plan_saving_mib=plan_saving,
                           ratio=saving / plan_saving))
  checks += _marginal_checks(checks)
  header = ["size", "seq", "batch", "recompute",
            "first step's peak MiB (measured)", "later steps' peak MiB",
            "plan: gradients + shared + activations MiB",
            "measured (first) / plan",
            "step s"]
  return dict(table=common.markdown_table(header, rows), checks=checks,
              configs=configs)


def _plan_mib(plan) -> float:
  """What the plan says a step adds (MiB): gradients, shared gradients
  and activations (the measured step peak's counterpart)."""
  return (plan.gradient_bytes + plan.activation_bytes
          + plan.shared_gradient_bytes) / MIB


def figures(configs, machine: str, command: str, others: float = 0.0
            ) -> List[Dict]:
  """The first table's row, from the largest configuration of the first
  size (the longest sequence, then the largest batch): the step's peak
  with --recompute_layers against the same step without (the baseline),
  the ceiling the memory plan's figure for the step with recomputation;
  all from this run. Every figure is the step's increase over the built
  model (VmHWM minus the RSS with the model, slots and traced step), and
  the labels say so."""
  first = [c for c in configs if c["size"] == configs[0]["size"]]
  c = max(first, key=lambda c: (c["seq"], c["batch"]))
  return [dict(
      job=f"Memory, pretraining step (ALBERT-{common.size_label(c['size'])}"
      f", float32, {c['batch']} x {c['seq']}, --recompute_layers)",
      order=50,
      ours=dict(label="step peak over the built model, --recompute_layers",
                value=round(c["on_mib"]), unit="MiB"),
      peer=dict(label="the same step's peak over the built model, without "
                "recomputation",
                value=round(c["off_mib"]), unit="MiB"),
      contender="baseline", higher_is_better=False,
      ceiling=dict(label="the memory plan: gradients + activations with "
                   "recomputation", value=round(c["plan_on_mib"]),
                   unit="MiB"),
      reached=round(c["on_mib"]), machine=machine, date=common.today(),
      command=command,
      conditions="one fresh process per step; the first step's peak; "
      f"other processes {others:.2f} cores over the run")]


def _marginal_checks(checks) -> List[Dict[str, object]]:
  """Per (size, seq) with two batches or more: the saving's growth from
  the smallest to the largest batch, in which what does not grow with the
  batch (kernels, the graph's runtime state) cancels."""
  marginal = []
  for key in sorted({(c["size"], c["seq"]) for c in checks}):
    rows = sorted((c for c in checks if (c["size"], c["seq"]) == key),
                  key=lambda c: c["batch"])
    if len(rows) < 2:
      continue
    small, large = rows[0], rows[-1]
    measured = large["measured_saving_mib"] - small["measured_saving_mib"]
    planned = large["plan_saving_mib"] - small["plan_saving_mib"]
    marginal.append(dict(size=key[0], seq=key[1],
                         batch=f"{small['batch']} -> {large['batch']}",
                         measured_saving_mib=measured,
                         plan_saving_mib=planned, ratio=measured / planned))
  return marginal


def savings_table(checks) -> str:
  rows = [[common.size_label(c["size"]), c["seq"], c["batch"],
           f"{c['measured_saving_mib']:,.0f}", f"{c['plan_saving_mib']:,.0f}",
           f"{c['ratio']:.2f}"] for c in checks]
  return common.markdown_table(
      ["size", "seq", "batch", "saving measured MiB", "saving planned MiB",
       "measured / planned"], rows)


def draw_chart(sizes=("base", "large"), path: str = CHART) -> str:
  """The plan's peak per replica against sequence length and batch, or a
  sentence saying why there is no chart."""
  try:
    import matplotlib
  except ImportError:
    return "no chart: matplotlib is not installed (pip install matplotlib)"
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  from albert_tf import memory_plan
  seqs = [64, 128, 256, 384, 512]
  fig, axes = plt.subplots(1, len(sizes), figsize=(5.5 * len(sizes), 4.2),
                           sharey=True)
  for ax, size in zip(axes, sizes):
    config = common.load_config(size)
    for color, batch in zip(("C0", "C1", "C2", "C3"), (8, 16, 32, 64)):
      for recompute, style in ((False, "-"), (True, "--")):
        peaks = [memory_plan.plan(config, batch, seq, PREDICTIONS,
                                  "bfloat16", recompute_layers=recompute
                                  ).peak_bytes / 2**30 for seq in seqs]
        ax.plot(seqs, peaks, style, color=color, marker="o",
                label=f"batch {batch}" + (", recompute" if recompute
                                          else ""))
    for limit in (16, 80):
      ax.axhline(limit * memory_plan.USABLE_FRACTION, color="grey",
                 linewidth=0.8)
      ax.text(seqs[0], limit * memory_plan.USABLE_FRACTION,
              f" 90% of {limit} GiB", va="bottom", fontsize=8)
    ax.set_yscale("log")
    ax.set_xlabel("sequence length")
    ax.set_title(f"ALBERT-{common.size_label(size)}, bfloat16, LAMB, "
                 "one replica")
  axes[0].set_ylabel("planned peak per micro-batch (GiB)")
  axes[0].legend(fontsize=7, ncol=2, loc="lower right")
  fig.tight_layout()
  fig.savefig(path, dpi=100)
  plt.close(fig)
  return path


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--sizes", default="base,large")
  parser.add_argument("--seq_lengths", default="128,512")
  parser.add_argument("--batch_sizes", default="2")
  parser.add_argument("--steps", type=int, default=3)
  parser.add_argument("--write", action="store_true",
                      help="update BENCHMARKS.md and "
                      "benchmarks/charts/memory.png")
  parser.add_argument("--section", default=SECTION,
                      help="the BENCHMARKS.md section to write")
  parser.add_argument("--worker", help=argparse.SUPPRESS)
  if "--worker" in sys.argv:
    args = parser.parse_args()
    print(json.dumps(worker(**json.loads(args.worker))))
    return
  args = common.parse_args(parser)
  # The load over the run (every step runs in a child: its CPU is ours).
  window = common.CpuWindow(children=True)
  window.start()
  result = run(args.sizes.split(","), [int(s) for s in
                                       args.seq_lengths.split(",")],
               [int(b) for b in args.batch_sizes.split(",")], args.steps)
  checks = result["checks"]
  # The goal is judged on the savings' growth with the batch when measured.
  judged = [c for c in checks if "->" in str(c["batch"])] or checks
  within = all(abs(c["ratio"] - 1) <= 0.25 for c in judged)
  body = (result["table"] + "\n\nRecomputation's saving, measured against "
          "the plan's, per batch and (rows 'a -> b') its growth from batch a "
          "to b, where what does not grow with the batch cancels (goal: "
          "within 25% on the growth when measured, else per batch: "
          f"{'met' if within else 'NOT met'}):\n\n"
          + savings_table(result["checks"]))
  others = window.others()
  print(body)
  print(f"other processes {others:.2f} cores over the run")
  if args.write:
    write(args.section, common.command_line("benchmarks.memory.peaks",
                                            sys.argv[1:]), body, result,
          others)


def write(section: str, command: str, body: str, result,
          others: float = 0.0) -> None:
  """The section (`body`: run's tables), the chart and the first table's
  row (figures; others: the cores other processes used over the run)."""
  chart = draw_chart()
  name = os.path.basename(chart)
  picture = (f"\n\n![memory plan](benchmarks/charts/{name})"
             if chart.endswith(".png") else f"\n\n{chart}")
  common.update_benchmarks_md(
      section, f"`{command}`; {common.machine_line()}; other processes "
      f"{others:.2f} cores over the run. "
      "Step peak: the child's VmHWM minus its RSS with the model, the "
      "optimizer slots and the traced step built (an increase over the "
      "built model, not the process's peak); float32.\n\n" + body
      + picture,
      figures=figures(result["configs"], common.machine_label(), command,
                      others),
      stage="Memory")


if __name__ == "__main__":
  main()
