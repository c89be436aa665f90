"""Exported encoder inference: latency at batch 1, throughput at batch 32.

  python -m benchmarks.bench_inference --size=base --seq_length=128

Exports an ALBERT encoder (random weights; speed does not depend on them)
with `tools.export_savedmodel`'s library function, reloads it with
`tf.saved_model.load` and times its `serving_default` signature. Model
Garden's AlbertEncoder with the same config runs in the same process as a
reference (an in-memory `tf.function`, not a SavedModel).
"""

import argparse
import os
import tempfile

import numpy as np
import tensorflow as tf
import tf_keras

from albert_tf.config import AlbertConfig
from benchmarks import common


def export_random_encoder(config: AlbertConfig, work_dir: str) -> str:
  from albert_tf import exports
  from albert_tf.models.albert_pretrainer import AlbertPretrainer
  from albert_tf.networks.albert_encoder import AlbertEncoder
  from data_pipeline import sentencepiece_trainer
  from data_pipeline import stdlib_corpus
  corpus = os.path.join(work_dir, "corpus.txt")
  stdlib_corpus.write_stdlib_corpus(corpus, max_bytes=300_000)
  spm = os.path.join(work_dir, "spm")
  sentencepiece_trainer.train_sentencepiece(corpus, spm, vocab_size=2000)
  checkpoint = tf.train.Checkpoint(
      model=AlbertPretrainer(AlbertEncoder(config))).save(
          os.path.join(work_dir, "ckpt", "ckpt"))
  export_dir = os.path.join(work_dir, "export")
  exports.export_savedmodel(config, checkpoint, spm + ".model", export_dir,
                            seq_length=128)
  return os.path.join(export_dir, "encoder")


def inputs(batch: int, seq: int, vocab: int):
  rng = np.random.default_rng(0)
  return dict(input_word_ids=tf.constant(rng.integers(5, vocab, (batch, seq)),
                                         tf.int32),
              input_mask=tf.ones([batch, seq], tf.int32),
              input_type_ids=tf.zeros([batch, seq], tf.int32))


def garden_encoder(config: AlbertConfig):
  from albert_tf.checkpoints.converter import build_garden_encoder
  encoder = build_garden_encoder(
      config, dropout_rate=0.0, attention_dropout_rate=0.0,
      initializer=tf_keras.initializers.TruncatedNormal(stddev=0.02))
  return tf.function(lambda x: encoder(x, training=False)["pooled_output"])


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--size", default="base")
  parser.add_argument("--seq_length", type=int, default=128)
  parser.add_argument("--repeats", type=int, default=10)
  parser.add_argument("--write", action="store_true")
  args = common.parse_args(parser)
  config = common.load_config(args.size)
  rows = []
  with tempfile.TemporaryDirectory() as work_dir:
    serving = tf.saved_model.load(export_random_encoder(
        config, work_dir)).signatures["serving_default"]
    garden = garden_encoder(config)
    for batch in (1, 32):
      x = inputs(batch, args.seq_length, config.vocab_size)
      times = common.time_alternating(
          {"ours": lambda x=x: serving(**x)["pooled_output"],
           "garden": lambda x=x: garden(x)},
          repeats=args.repeats if batch == 1 else max(3, args.repeats // 3))
      ours, garden_s = (common.median(times["ours"]),
                        common.median(times["garden"]))
      rows.append([batch, f"{ours * 1000:.0f}", f"{batch / ours:.1f}",
                   f"{garden_s * 1000:.0f}", f"{batch / garden_s:.1f}"])
      print(rows[-1], flush=True)
  table = common.markdown_table(
      ["batch", "ours ms/batch (SavedModel)", "ours seq/s",
       "Garden ms/batch (in memory)", "Garden seq/s"], rows)
  print(table)
  if args.write:
    common.update_benchmarks_md(
        "Inference", f"`python -m benchmarks.bench_inference --size="
        f"{args.size} --seq_length={args.seq_length}`; ALBERT-{args.size}, "
        f"sequence {args.seq_length}; {common.machine_line()}.\n\n" + table)


if __name__ == "__main__":
  main()
