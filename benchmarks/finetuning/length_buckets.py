"""Fine-tuning throughput with length buckets against without (#24).

  python -m benchmarks.finetuning.length_buckets --size=base --batch_size=32 \
      --seq_length=128 --steps=12 --tasks=sst2,mrpc

Generated tasks (`--tasks`): `sst2`, single sentences with SST-2's length
distribution (token lengths with [CLS] and [SEP]: gamma(4, 6.3), mean about
25, clipped to 4..66); `mrpc`, sentence pairs as MRPC's (each sentence
gamma(6, 3.7) tokens, mean about 22, clipped to 3..45; packed
`[CLS] a [SEP] b [SEP]` mean about 47, mostly under 64). Each is trained
through the FinetuningRunner's `fit` step (AdamW, clipping) with
`--length_buckets=auto` and with `none`, each after 6 warm-up steps
(which trace every bucket shape this stream uses). The third contender is
Model Garden's pipeline: its AlbertEncoder + BertClassifier
(`classifier_step.garden_step`, the same AdamW step with clipping)
on the same stream padded to `--seq_length`, as Model Garden's own
fine-tuning input is, one compiled step a batch. The three runs alternate,
`ROUND` steps at a time, so that machine noise (other processes) spreads
over all; examples per second of the timed steps (total time, since
bucketed rounds differ in shape), the ratios are the speed-ups.

Memory: the three ALBERT-base pipelines at batch 32 hold about 11.6 GB
resident; on a shared machine that is the process an OOM killer picks.
"""

import argparse
import tempfile
import time

import numpy as np
import tensorflow as tf

from benchmarks import common

WARMUP = 6
ROUND = 3


def sst2_like_features(n: int, seq: int, vocab_size: int, seed: int = 0):
  """glue_features.Features of `n` generated sentences (lengths as SST-2's)."""
  from data_pipeline.tasks.glue import features as glue_features
  rng = np.random.default_rng(seed)
  lengths = np.clip(np.round(rng.gamma(4.0, 6.3, n)), 4,
                    min(66, seq)).astype(np.int32)
  ids = np.concatenate([np.r_[2, rng.integers(5, vocab_size, k - 2), 3]
                        for k in lengths]).astype(np.int32)
  return glue_features.Features(ids, lengths, lengths.copy(),
                       rng.integers(0, 2, n).astype(np.int32),
                       [str(i) for i in range(n)])


def mrpc_like_features(n: int, seq: int, vocab_size: int, seed: int = 0):
  """glue_features.Features of `n` generated sentence pairs (lengths as
  MRPC's)."""
  from data_pipeline.tasks.glue import features as glue_features
  rng = np.random.default_rng(seed)
  longest = min(45, (seq - 3) // 2)
  a, b = (np.clip(np.round(rng.gamma(6.0, 3.7, n)), 3, longest).astype(
      np.int32) for _ in range(2))
  ids = np.concatenate([
      np.r_[2, rng.integers(5, vocab_size, i), 3,
            rng.integers(5, vocab_size, j), 3]
      for i, j in zip(a, b)]).astype(np.int32)
  return glue_features.Features(ids, a + b + 3, a + 2,
                       rng.integers(0, 2, n).astype(np.int32),
                       [str(i) for i in range(n)])


TASKS = {"sst2": ("SST-2-like", sst2_like_features),
         "mrpc": ("MRPC-like pairs", mrpc_like_features)}


def _runner(config_file: str, features, batch: int, seq: int,
            buckets_flag: str):
  """(FinetuningRunner, its training stream) after WARMUP steps."""
  from albert_tf.models.albert_classifier import AlbertClassifier
  from albert_tf.training import dataset_options
  from albert_tf.training.finetuning import params as finetuning_params
  from albert_tf.training.finetuning import runner as finetuning_runner
  from albert_tf.training.finetuning import task as finetuning_task
  from data_pipeline.tasks import length_buckets
  from data_pipeline.tasks.glue import features as glue_features
  buckets = length_buckets.parse_length_buckets(buckets_flag, seq)

  def loss(labels, outputs):
    return tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=outputs["logits"])

  task = finetuning_task.FinetuningTask(
      name="sst2_like",
      build_model=lambda encoder, config: AlbertClassifier(encoder, 2),
      loss_fn=loss, length_buckets=buckets)
  params = finetuning_params.FinetuningParams.from_flat(
      output_dir=tempfile.mkdtemp(prefix="bench_buckets_"),
      albert_config_file=config_file, do_train=True, max_seq_length=seq,
      train_batch_size=batch, learning_rate=1e-5, train_step=10**6,
      warmup_step=10, save_checkpoints_steps=10**6, iterations_per_loop=1,
      log_steps=10**6, seed=0, length_buckets=buckets_flag)
  runner = finetuning_runner.FinetuningRunner(params, task)
  # As the runner's train(): without tf.data's autotuning thread, whose
  # teardown would add to the end of every timed `fit`.
  dataset = dataset_options.without_autotune_thread(glue_features.make_dataset(
      features, seq, batch, is_training=True, seed=0, buckets=buckets))
  runner.trainer.fit(dataset.take(WARMUP), steps_per_epoch=WARMUP, epochs=1,
                     verbose=0)
  return runner, dataset


def _garden(config_file: str, features, batch: int, seq: int):
  """A function running Model Garden's classifier step on `count` batches
  of the unbucketed stream from batch `start`, after WARMUP steps."""
  from benchmarks.finetuning import classifier_step
  from data_pipeline.tasks.glue import features as glue_features
  step = classifier_step.garden_step(common.load_config(config_file),
                                           num_classes=2)
  dataset = glue_features.make_dataset(features, seq, batch,
                                       is_training=True, seed=0)

  def train(start: int, count: int):
    for features_batch, labels in dataset.skip(start).take(count):
      iterations = step(features_batch, labels)
    iterations.numpy()

  train(0, WARMUP)
  return train


def examples_per_second(config_file: str, features, batch: int, seq: int,
                        steps: int, buckets_flags, garden: bool = True):
  """{flag: (examples/s of `steps` timed steps, train-step traces, batch
  shapes)}, and "garden": (examples/s, None, None) if `garden`; the runs
  alternating ROUND steps at a time."""
  runs = {flag: _runner(config_file, features, batch, seq, flag)
          for flag in buckets_flags}
  contenders = {
      flag: (lambda start, count, runner=runner, dataset=dataset:
             runner.trainer.fit(dataset.skip(start), steps_per_epoch=count,
                                epochs=1, verbose=0))
      for flag, (runner, dataset) in runs.items()}
  if garden:
    contenders["garden"] = _garden(config_file, features, batch, seq)
  seconds = dict.fromkeys(contenders, 0.0)
  for done in range(0, steps, ROUND):
    count = min(ROUND, steps - done)
    for name, train in contenders.items():
      start = time.perf_counter()
      train(WARMUP + done, count)
      seconds[name] += time.perf_counter() - start
  results = {flag: (steps * batch / seconds[flag], runner.trainer.train_traces,
                    sorted(shape[0] for shape in runner.trainer.train_shapes))
             for flag, (runner, _) in runs.items()}
  if garden:
    results["garden"] = (steps * batch / seconds["garden"], None, None)
  return results


def run(size: str, batch: int, seq: int, steps: int,
        buckets_flag: str = "auto", tasks=("sst2",)) -> str:
  """The markdown table: examples/s without and with buckets and of Model
  Garden's pipeline, a row per task (TASKS)."""
  config = common.load_config(size)
  config_file = size if size.endswith(".json") else (
      f"{common.REPO_ROOT}/configs/albert_{size}.json")
  rows = []
  for task in tasks:
    label, make_features = TASKS[task]
    features = make_features(4000, seq, config.vocab_size)
    results = examples_per_second(config_file, features, batch, seq, steps,
                                  ("none", buckets_flag))
    padded = results["none"][0]
    bucketed, traces, shapes = results[buckets_flag]
    garden = results["garden"][0]
    lengths = features.lengths
    rows.append([
        common.size_label(size), label, f"{lengths.mean():.1f}",
        f"{np.mean(lengths > 32):.0%} / {np.mean(lengths > 64):.0%}",
        f"{padded:.1f}", f"{bucketed:.1f}", f"{garden:.1f}",
        f"{bucketed / padded:.2f}x", f"{bucketed / garden:.2f}x",
        f"{padded / garden:.2f}x",
        f"{traces} ({', '.join('x'.join(map(str, s)) for s in shapes)})"])
  header = ["model", "task", "mean tokens", "share > 32 / > 64",
            "none ex/s", f"{buckets_flag} ex/s", "Garden ex/s",
            f"{buckets_flag}/none", f"{buckets_flag}/Garden", "none/Garden",
            "traces (shapes)"]
  table = common.markdown_table(header, rows)
  print(table)
  return table


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--size", default="base")
  parser.add_argument("--batch_size", type=int, default=32)
  parser.add_argument("--seq_length", type=int, default=128)
  parser.add_argument("--steps", type=int, default=12)
  parser.add_argument("--length_buckets", default="auto")
  parser.add_argument("--tasks", default="sst2,mrpc",
                      help="comma list of " + ", ".join(TASKS))
  parser.add_argument("--write", action="store_true",
                      help="update BENCHMARKS.md")
  args = common.parse_args(parser)
  tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
  unknown = [t for t in tasks if t not in TASKS]
  if unknown or not tasks:
    parser.exit(1, f"error: --tasks={args.tasks}: give a comma list of "
                f"{', '.join(TASKS)}\n")
  machine = common.machine_line()
  table = run(args.size, args.batch_size, args.seq_length, args.steps,
              args.length_buckets, tasks)
  if args.write:
    common.update_benchmarks_md(
        "Fine-tuning with length buckets",
        f"`python -m benchmarks.finetuning.length_buckets --size={args.size} "
        f"--batch_size={args.batch_size} --seq_length={args.seq_length} "
        f"--steps={args.steps} --length_buckets={args.length_buckets} "
        f"--tasks={','.join(tasks)}`; {machine}. Generated tasks with "
        "SST-2's length distribution (single sentences) and MRPC's "
        "(sentence pairs), trained through the fine-tuning runner with and "
        "without buckets, alternating with Model Garden's pipeline "
        "(AlbertEncoder + BertClassifier, every batch padded to "
        "--seq_length). Serving latency: see \"Serving latency with length "
        "buckets\"."
        "\n\n" + table)


if __name__ == "__main__":
  main()
