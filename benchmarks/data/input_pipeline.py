"""Input pipeline speed: records/s of the tf.data reader vs what training eats.

  python -m benchmarks.data.input_pipeline --batch_size=8 --seq_length=128

Writes pretraining TFRecords from the stdlib-docstring corpus, then reads
them with `data_pipeline.pretraining.reader.pretraining_dataset` (training
mode: interleave, shuffle, repeat, parse, prefetch) and reports records/s.
In the same run it times our ALBERT-base training step at the same batch and
sequence length, and reports the ratio reader speed / training consumption.
"""

import argparse
import os
import tempfile
import time

from benchmarks import common


def build_records(work_dir: str, seq_length: int, predictions: int) -> str:
  from data_pipeline.corpora import stdlib_corpus
  from data_pipeline.pretraining import instance_options
  from data_pipeline.pretraining import writer as pretraining_writer
  from data_pipeline.tokenization import sentencepiece_trainer
  corpus = os.path.join(work_dir, "corpus.txt")
  stdlib_corpus.write_stdlib_corpus(corpus)
  prefix = os.path.join(work_dir, "spm")
  sentencepiece_trainer.train_sentencepiece(corpus, prefix, vocab_size=5000)
  output = os.path.join(work_dir, "train.tfrecord")
  pretraining_writer.create_pretraining_data(
      corpus, output, prefix + ".model",
      instance_options.InstanceOptions(max_seq_length=seq_length,
                                       max_predictions_per_seq=predictions),
      dupe_factor=2, num_output_shards=4, show_progress=False)
  return output + "-*"


def reader_records_per_second(pattern: str, batch: int, seq: int,
                              predictions: int, batches: int) -> float:
  from data_pipeline.pretraining import reader as pretraining_input
  dataset = pretraining_input.pretraining_dataset(
      pattern, batch_size=batch, max_seq_length=seq,
      max_predictions_per_seq=predictions, is_training=True, seed=1)
  iterator = iter(dataset)
  for _ in range(20):  # fill the shuffle buffer and prefetch
    next(iterator)
  start = time.perf_counter()
  for _ in range(batches):
    next(iterator)["input_word_ids"].numpy()
  return batches * batch / (time.perf_counter() - start)


def training_sequences_per_second(batch: int, seq: int) -> float:
  from benchmarks.pretraining import step as steps
  config = common.load_config("base")
  step = steps.ours_step(config, steps.synthetic_batch(config, batch, seq),
                         jit_compile=False)
  times = common.time_alternating({"ours": step}, repeats=3)
  return batch / common.median(times["ours"])


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--batch_size", type=int, default=8)
  parser.add_argument("--seq_length", type=int, default=128)
  parser.add_argument("--predictions", type=int, default=20)
  parser.add_argument("--batches", type=int, default=2000)
  parser.add_argument("--write", action="store_true")
  args = parser.parse_args()
  with tempfile.TemporaryDirectory() as work_dir:
    pattern = build_records(work_dir, args.seq_length, args.predictions)
    reader = reader_records_per_second(pattern, args.batch_size,
                                       args.seq_length, args.predictions,
                                       args.batches)
  training = training_sequences_per_second(args.batch_size, args.seq_length)
  table = common.markdown_table(
      ["reader records/s", "ALBERT-base training seq/s", "reader / training"],
      [[f"{reader:,.0f}", f"{training:.1f}", f"{reader / training:,.0f}x"]])
  print(table)
  if args.write:
    common.update_benchmarks_md(
        "Input pipeline",
        f"`python -m benchmarks.data.input_pipeline --batch_size="
        f"{args.batch_size} --seq_length={args.seq_length}`; "
        f"{common.machine_line()}. The reader runs in training mode "
        f"(interleave over 4 shards, shuffle, repeat, parse, prefetch).\n\n"
        + table)


if __name__ == "__main__":
  main()
