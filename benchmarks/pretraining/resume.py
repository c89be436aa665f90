"""Time to resume pretraining at step 10 and at step 1,000 (tiny model).

  python -m benchmarks.pretraining.resume --write

Trains a tiny ALBERT (H=32, 2 layers) on pretraining TFRecords of the
stdlib-docstring corpus (4 shards, sequence 128), checkpointing at step 10
and step 1,000. Then, for each checkpoint, times in one process what a
restarted job does before its first new step: `build_pretraining` (model,
restore, data stream located at the restored step) and the first training
step after it, which pulls the first resumed batch. For reference it times
the answer the issue rules out: reaching the same stream position by reading
every record before it (`dataset.skip`).
"""

import argparse
import os
import shutil
import tempfile
import time

from albert_common import settings_fields
from benchmarks import common
from benchmarks.data.input_pipeline import build_records


def _params(work_dir, pattern, steps, batch_size, seq_length, predictions):
  from albert_tf.config import AlbertConfig
  from albert_tf.training.pretraining import driver as lib
  config = os.path.join(work_dir, "albert_config.json")
  AlbertConfig(vocab_size=5000, embedding_size=16, hidden_size=32,
               num_hidden_layers=2, num_attention_heads=2,
               intermediate_size=64,
               max_position_embeddings=seq_length).to_json_file(config)
  return lib.PretrainingParams.from_flat(
      input_file=pattern, output_dir=os.path.join(work_dir, "run"),
      albert_config_file=config, train_batch_size=batch_size,
      max_seq_length=seq_length, max_predictions_per_seq=predictions,
      num_train_steps=steps, num_warmup_steps=10, save_checkpoints_steps=10,
      iterations_per_loop=10, keep_checkpoint_max=1000, seed=1)


def _resume_seconds(params, step):
  """(build seconds, first step seconds) of a job restarted at `step`."""
  import tensorflow as tf
  import tf_keras

  from albert_tf.training.pretraining import driver as lib
  run_dir = params.runtime.output_dir + f"_at_{step}"
  shutil.rmtree(run_dir, ignore_errors=True)
  os.makedirs(run_dir)
  for name in tf.io.gfile.listdir(params.runtime.output_dir):
    if name.startswith(f"ckpt-{step}.") or name == "albert_config.json":
      shutil.copy(os.path.join(params.runtime.output_dir, name), run_dir)
  with open(os.path.join(run_dir, "checkpoint"), "w") as f:
    f.write(f'model_checkpoint_path: "ckpt-{step}"\n')
  tf_keras.backend.clear_session()
  resumed = settings_fields.replace(params, output_dir=run_dir,
                                    num_train_steps=step + 1)
  start = time.perf_counter()
  setup = lib.build_pretraining(resumed)
  built = time.perf_counter() - start
  assert int(setup.optimizer.iterations.numpy()) == step
  start = time.perf_counter()
  setup.controller.train(steps=step + 1)
  first_step = time.perf_counter() - start
  return built, first_step


def _skip_by_reading_seconds(pattern, records):
  import tensorflow as tf

  from data_pipeline.pretraining import reader as pretraining_input
  files = pretraining_input.resolve_files(pattern)
  dataset = tf.data.TFRecordDataset(files).repeat().skip(records).take(1)
  start = time.perf_counter()
  for _ in dataset:
    pass
  return time.perf_counter() - start


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--batch_size", type=int, default=32)
  parser.add_argument("--seq_length", type=int, default=128)
  parser.add_argument("--predictions", type=int, default=20)
  parser.add_argument("--steps", default="10,1000")
  parser.add_argument("--write", action="store_true")
  args = parser.parse_args()
  steps = [int(s) for s in args.steps.split(",")]
  from albert_tf.training.pretraining import driver as lib
  rows = []
  with tempfile.TemporaryDirectory() as work_dir:
    pattern = build_records(work_dir, args.seq_length, args.predictions)
    params = _params(work_dir, pattern, max(steps), args.batch_size,
                     args.seq_length, args.predictions)
    started = time.perf_counter()
    lib.run_pretraining(params)
    print(f"trained {max(steps)} steps in "
          f"{time.perf_counter() - started:.0f} s")
    for step in steps:
      built, first = _resume_seconds(params, step)
      naive = _skip_by_reading_seconds(pattern, step * args.batch_size)
      rows.append([f"{step:,}", f"{step * args.batch_size:,}",
                   f"{built:.2f}", f"{first:.2f}", f"{naive:.2f}"])
  rate = steps[-1] * args.batch_size / max(naive, 1e-9)
  full_run = 4096 * 125_000 / rate / 60
  table = common.markdown_table(
      ["resumed at step", "records before it", "build + restore + locate s",
       "first step s", "skip by reading s (ruled out)"], rows)
  print(table)
  if args.write:
    common.update_benchmarks_md(
        "Resuming pretraining",
        "`python -m benchmarks.pretraining.resume "
        f"--batch_size={args.batch_size} "
        f"--seq_length={args.seq_length} --steps={args.steps}`; "
        f"{common.machine_line()}. A tiny model (H=32, 2 layers) on 4 "
        "shards of the stdlib corpus; the restarted job locates the data "
        "stream from the step and the files' record counts "
        "(`data_pipeline/pretraining/record_stream.py`; counted here, as on "
        "a run's first resume, then cached in output_dir) and reads at most "
        "one file group into it, so the time does not grow with the step. "
        "The last column reads every record before the position instead, which "
        "grows with the step: at its rate here "
        f"({rate:,.0f} records/s from local disk), reaching the end of an "
        f"ALBERT-base run (4096 x 125,000 sequences) would take "
        f"{full_run:,.0f} minutes per restart.\n\n" + table)


if __name__ == "__main__":
  main()
