"""What tf.data's autotuning thread adds to the end of `fit` and `predict`.

  python -m benchmarks.investigations.iterator_teardown --size=base \
      --batch_size=8 --seq_length=32 --steps=8 --rounds=4

Our classifier trainer (FinetuningTrainer, AdamW) in one process runs
`fit` for `--steps` steps and `predict` over `--steps` batches of a
fine-tuning dataset (in-memory examples, parallel map, prefetch), with
tf.data's autotuner on (TensorFlow's default) and off
(albert_tf.training.dataset_options, what our runners use), alternating.
For each call: the seconds of its steps (first batch to the last one's end,
from Keras callbacks) and the seconds after them until the call returned
(the iterator's teardown). With the autotuner on, the teardown waits for
the tuning thread's next wake; its period doubles from 10 ms, so a call
can take up to twice its steps' time.
"""

import argparse
import time

import numpy as np
import tf_keras

from benchmarks import common
from benchmarks.finetuning import peers_worker as worker

SECTION = "tf.data autotuning and the end of fit / predict"


class _Clock(tf_keras.callbacks.Callback):
  """Times the first batch's start and the last batch's end."""

  def __init__(self):
    super().__init__()
    self.first = self.last = None

  def _begin(self, batch, logs=None):
    if self.first is None:
      self.first = time.perf_counter()

  def _end(self, batch, logs=None):
    self.last = time.perf_counter()

  on_train_batch_begin = on_predict_batch_begin = _begin
  on_train_batch_end = on_predict_batch_end = _end


def _dataset(autotune: bool, features, batch: int, seq: int,
             training: bool):
  from albert_tf.training import dataset_options
  from data_pipeline.tasks.glue import features as glue_features
  dataset = glue_features.make_dataset(features, seq, batch,
                                       is_training=training, seed=0)
  return dataset if autotune else dataset_options.without_autotune_thread(
      dataset)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--size", default="base")
  parser.add_argument("--batch_size", type=int, default=8)
  parser.add_argument("--seq_length", type=int, default=32)
  parser.add_argument("--steps", type=int, default=8)
  parser.add_argument("--rounds", type=int, default=4)
  parser.add_argument("--write", action="store_true",
                      help="update BENCHMARKS.md")
  args = parser.parse_args(argv)
  runner, _, _, _ = worker.build_ours("none", "sst2", args.size,
                                      args.batch_size, args.seq_length)
  trainer = runner.trainer
  features = worker.task_features("sst2", args.seq_length,
                                  runner.config.vocab_size)
  calls = {
      "fit": lambda data, clock: trainer.fit(
          data, steps_per_epoch=args.steps, epochs=1, verbose=0,
          callbacks=[clock]),
      "predict": lambda data, clock: trainer.predict(
          data.take(args.steps), verbose=0, callbacks=[clock]),
  }
  times = {(call, on): ([], []) for call in calls for on in (True, False)}
  for round_index in range(args.rounds + 1):  # round 0: warm-up
    for call, run in calls.items():
      for autotune in ((True, False) if round_index % 2 else (False, True)):
        data = _dataset(autotune, features, args.batch_size,
                        args.seq_length, call == "fit")
        clock = _Clock()
        run(data, clock)
        end = time.perf_counter()
        if round_index:
          steps, after = times[call, autotune]
          steps.append(clock.last - clock.first)
          after.append(end - clock.last)
          print(f"round {round_index} {call} autotune "
                f"{'on ' if autotune else 'off'}: steps "
                f"{clock.last - clock.first:.2f} s, then "
                f"{end - clock.last:.2f} s until it returned", flush=True)
  rows = []
  for (call, autotune), (steps, after) in times.items():
    rows.append([f"`{call}`", "on (default)" if autotune else "off (ours)",
                 f"{np.median(steps):.2f}",
                 f"{np.mean(after):.2f} ({min(after):.2f}-{max(after):.2f})",
                 f"{sum(a > 0.05 for a in after)} of {len(after)}",
                 f"{np.mean(np.add(steps, after)):.2f}"])
  table = common.markdown_table(
      ["call", "tf.data autotune", "its steps, s (median)",
       "after the last step, s (mean, range)", "calls that waited",
       "the call, s (mean)"],
      rows)
  print(table)
  if args.write:
    common.update_benchmarks_md(SECTION, (
        "`python -m benchmarks.investigations.iterator_teardown "
        f"--size={args.size} "
        f"--batch_size={args.batch_size} --seq_length={args.seq_length} "
        f"--steps={args.steps} --rounds={args.rounds} --write`; "
        f"{common.machine_line()}. "
        f"{args.rounds} rounds, on and off alternating; {args.steps} steps "
        "a call.\n\n" + table))


if __name__ == "__main__":
  main()
