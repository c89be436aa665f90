"""Packing (--pack_examples) against length buckets, alternating in one process.

  python -m benchmarks.bench_packing --size=base --batch_size=32 \
      --seq_length=128 --rounds=3 --steps=4 --tasks=sst2,mrpc \
      --contenders=auto,pack --write

The contenders (`none`, `pow2`, `auto` length buckets; `pack`) are built
as benchmarks.finetuning_peers_worker builds ours -- the fine-tuning
runner's `fit` step on the task's generated example stream, every batch
shape run once first -- but all in this process, taking turns `--steps`
steps at a time for `--rounds` rounds, so that the machine's load falls
on all alike and their ratio holds under it (bench_finetuning_peers, one
process each, is the comparison with other stacks). Examples per second
of the timed steps, and the padded positions an example took.
"""

import argparse
import os
import time

from benchmarks import common
from benchmarks import finetuning_peers_worker as worker

SECTION = "Packing against length buckets (one process)"


def _contender(name: str, task: str, size: str, batch: int, seq: int):
  """(runner, dataset, is packed) for one contender, warmed up."""
  import tempfile

  import tensorflow as tf

  from albert_tf.config import AlbertConfig
  from albert_tf.models.albert_classifier import AlbertClassifier
  from albert_tf.training.finetuning import params as finetuning_params
  from albert_tf.training.finetuning import runner as finetuning_runner
  from albert_tf.training.finetuning import task as finetuning_task
  from data_pipeline.tasks import bucket_boundaries
  from data_pipeline.tasks import packing
  from data_pipeline.tasks.glue import features as glue_features
  config = AlbertConfig.from_dict(worker.config_dict(size))
  features = worker.task_features(task, seq, config.vocab_size)
  folder = tempfile.mkdtemp(prefix="bench_packing_")
  config_file = os.path.join(folder, "albert_config.json")
  config.to_json_file(config_file)
  pack = name == "pack"
  flag = "none" if pack else name
  buckets = bucket_boundaries.choose(flag, seq, 4,
                                     features.lengths).length_buckets
  plan = packing.plan(features.lengths, batch, seq) if pack else None

  def loss(labels, outputs):
    return tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=outputs["logits"])

  runner = finetuning_runner.FinetuningRunner(
      finetuning_params.FinetuningParams.from_flat(
          output_dir=os.path.join(folder, "run"),
          albert_config_file=config_file, do_train=True, max_seq_length=seq,
          train_batch_size=batch, learning_rate=1e-5, train_step=10**6,
          warmup_step=10, save_checkpoints_steps=10**6,
          iterations_per_loop=1, log_steps=10**6, seed=0,
          length_buckets=flag, pack_examples=pack),
      finetuning_task.FinetuningTask(
          name=name, loss_fn=loss, length_buckets=buckets,
          build_model=lambda encoder, cfg: AlbertClassifier(encoder, 2),
          packed_training=pack))
  dataset = glue_features.make_dataset(features, seq, batch, is_training=True,
                                       seed=0, buckets=buckets, packing=plan)
  first = next(iter(dataset))
  for length in ([] if pack else buckets):
    runner.trainer.fit(tf.data.Dataset.from_tensors(
        worker._at_length(first, length)),  # noqa: SLF001
                       steps_per_epoch=1, epochs=1, verbose=0)
  label = (plan.describe() if plan else
           "buckets " + ",".join(map(str, buckets)))
  return runner, dataset, pack, label


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
  from benchmarks import bench_finetuning_peers
  return bench_finetuning_peers.TASK_LABELS.get(task, task)


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
        f"`python -m benchmarks.bench_packing --size={args.size} "
        f"--batch_size={args.batch_size} --seq_length={args.seq_length} "
        f"--rounds={args.rounds} --steps={args.steps} "
        f"--tasks={args.tasks} --contenders={args.contenders} --write`; "
        f"{machine}, {os.getloadavg()[0]:.1f} at the end. Float32; the "
        "contenders alternate in one process.\n\n" + table))


if __name__ == "__main__":
  main()
