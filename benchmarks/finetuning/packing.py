"""Packing (--pack_examples) against length buckets, alternating in one process.

  python -m benchmarks.finetuning.packing --size=base --batch_size=32 \
      --seq_length=128 --rounds=3 --steps=4 --tasks=sst2,mrpc \
      --contenders=auto,pack --write

The contenders (`none`, `pow2`, `auto` length buckets; `pack`) are built
as benchmarks.finetuning.peers_worker builds ours -- the fine-tuning
runner's `fit` step on the task's generated example stream, every batch
shape run once first -- but all in this process, taking turns `--steps`
steps at a time for `--rounds` rounds, so that the machine's load falls
on all alike and their ratio holds under it (peers, one
process each, is the comparison with other stacks). Examples per second
of the timed steps, and the padded positions an example took.
"""

import argparse
import os
import time

from benchmarks import common
from benchmarks.finetuning import peers_worker as worker

SECTION = "Packing against length buckets (one process)"


def _contender(name: str, task: str, size: str, batch: int, seq: int):
  """(runner, dataset, is packed, label) for one contender, warmed up."""
  runner, dataset, buckets, plan = worker.build_ours(name, task, size, batch,
                                                     seq)
  label = (plan.describe() if plan else
           "buckets " + ",".join(map(str, buckets)))
  return runner, dataset, plan is not None, label


def run(size: str, batch: int, seq: int, rounds: int, steps: int, tasks,
        contenders) -> str:
  rows = []
  for task in tasks:
    runs = {name: _contender(name, task, size, batch, seq)
            for name in contenders}
    totals = {name: dict(seconds=0.0, examples=0, padded=0)
              for name in contenders}
    for round_index in range(rounds):
      start = round_index * steps
      for name, (runner, dataset, pack, _) in runs.items():
        begin = time.perf_counter()
        runner.trainer.fit(dataset.skip(start), steps_per_epoch=steps,
                           epochs=1, verbose=0)
        totals[name]["seconds"] += time.perf_counter() - begin
        for features, _ in dataset.skip(start).take(steps):
          mask = features["input_mask"].numpy()
          totals[name]["padded"] += mask.size
          totals[name]["examples"] += (
              int(features["example_weights"].numpy().sum()) if pack
              else len(mask))
    first = contenders[0]
    base = totals[first]["examples"] / totals[first]["seconds"]
    for name in contenders:
      total = totals[name]
      rate = total["examples"] / total["seconds"]
      rows.append([worker_label(task), name, runs[name][3], f"{rate:.2f}",
                   f"{total['padded'] / total['examples']:.1f}",
                   f"{rate / base:.2f}x"])
  table = common.markdown_table(
      ["task", "contender", "batches", "examples/s",
       "padded positions / example", f"vs {contenders[0]}"], rows)
  print(table)
  return table


def worker_label(task: str) -> str:
  from benchmarks.finetuning import peers
  return peers.TASK_LABELS.get(task, task)


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--size", default="base")
  parser.add_argument("--batch_size", type=int, default=32)
  parser.add_argument("--seq_length", type=int, default=128)
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--steps", type=int, default=4)
  parser.add_argument("--tasks", default="sst2,mrpc")
  parser.add_argument("--contenders", default="auto,pack")
  parser.add_argument("--write", action="store_true",
                      help="update BENCHMARKS.md")
  args = parser.parse_args()
  machine = common.machine_line()
  tasks = [t for t in args.tasks.split(",") if t]
  contenders = [c for c in args.contenders.split(",") if c]
  table = run(args.size, args.batch_size, args.seq_length, args.rounds,
              args.steps, tasks, contenders)
  if args.write:
    common.update_benchmarks_md(SECTION, (
        f"`python -m benchmarks.finetuning.packing --size={args.size} "
        f"--batch_size={args.batch_size} --seq_length={args.seq_length} "
        f"--rounds={args.rounds} --steps={args.steps} "
        f"--tasks={args.tasks} --contenders={args.contenders} --write`; "
        f"{machine}, {os.getloadavg()[0]:.1f} at the end. Float32; the "
        "contenders alternate in one process.\n\n" + table))


if __name__ == "__main__":
  main()
