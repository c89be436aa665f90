"""Gradient clipping's global norm at ALBERT-base scale: the dense
gradient's (ours) against an embedding lookup's rows counted one by one
(tf.clip_by_global_norm on the raw gradients, as google-research/albert's
optimization.py and Model Garden clip).

  python -m benchmarks.investigations.clip_norm --batch_size=8 --seq_length=128

A lookup (tf.gather) gives its table an IndexedSlices gradient: one row per
token. tf.clip_by_global_norm takes the norm of those rows, so a row
gathered n times adds n squared parts where the dense gradient has the
square of their sum. Which gradients stay IndexedSlices depends on the
model: a table also used densely (the MLM decoder tied to the word
embeddings) is summed to a dense gradient by TensorFlow itself, in the
official TF1 script as in Keras; a one-hot or sliced table is dense from
the start. This measures ALBERT-base (configs/albert_base.json, random
initial weights) on one batch of token ids drawn with natural text's
repeats (Zipf, s = 1.1, over the 30,000 ids; two segments), for our
pretrainer (MLM at 20 positions + SOP) and our classifier (2 classes, the
fine-tuning step, where no decoder ties the word table), and prints for
each: the dense norm, the rows-one-by-one norm (with our lookups), the
official script's (its token types and positions dense: one-hot and slice;
its word table dense when tied, by rows when not), their ratio, and the
clip factor min(1, 1 / norm) of each.
"""

import argparse
import os

import numpy as np
import tensorflow as tf

from benchmarks import common

REPO_ROOT = common.REPO_ROOT
WORD_TABLE = "word_embeddings"


def _batch(batch: int, seq: int, vocab: int, predictions: int, seed: int):
  """Token ids with natural repeats, two segments, MLM positions, labels."""
  rng = np.random.default_rng(seed)
  ids = rng.zipf(1.1, size=(batch, seq)) % (vocab - 5) + 5  # (B, S)
  ids[:, 0], ids[:, seq // 2], ids[:, -1] = 2, 3, 3  # [CLS], [SEP]s
  types = np.zeros((batch, seq), np.int32)
  types[:, seq // 2 + 1:] = 1
  positions = np.stack([np.sort(rng.choice(np.arange(1, seq - 1),
                                           predictions, replace=False))
                        for _ in range(batch)])  # (B, P)
  return dict(
      input_word_ids=tf.constant(ids, tf.int32),
      input_mask=tf.ones((batch, seq), tf.int32),
      input_type_ids=tf.constant(types),
      masked_lm_positions=tf.constant(positions, tf.int32),
      masked_lm_ids=tf.constant(rng.integers(5, vocab, (batch, predictions)),
                                tf.int32),
      labels=tf.constant(rng.integers(0, 2, batch), tf.int32))


def _gradients(model, batch, pretraining: bool):
  names = ("input_word_ids", "input_mask", "input_type_ids") + (
      ("masked_lm_positions",) if pretraining else ())
  with tf.GradientTape() as tape:
    outputs = model({k: batch[k] for k in names}, training=False)
    if pretraining:
      mlm = tf.nn.sparse_softmax_cross_entropy_with_logits(
          batch["masked_lm_ids"], outputs["mlm_logits"])
      sop = tf.nn.sparse_softmax_cross_entropy_with_logits(
          batch["labels"], outputs["sop_logits"])
      loss = tf.reduce_mean(mlm) + tf.reduce_mean(sop)
    else:
      loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
          batch["labels"], outputs["logits"]))
  variables = model.trainable_variables
  return variables, tape.gradient(loss, variables)


def _squares(grad, by_rows: bool) -> float:
  if isinstance(grad, tf.IndexedSlices) and by_rows:
    grad = grad.values
  return float(tf.reduce_sum(tf.square(tf.convert_to_tensor(grad))))


def norms(variables, grads):
  """(dense, rows one by one with our lookups, the official script's), and
  the names of the gradients that are IndexedSlices."""
  sparse = [v.name for v, g in zip(variables, grads)
            if isinstance(g, tf.IndexedSlices)]
  dense = sum(_squares(g, False) for g in grads)
  rows = sum(_squares(g, True) for g in grads)
  # The official model looks up only the word table (token types one-hot,
  # positions sliced): only its gradient may be counted by rows.
  official = sum(_squares(g, WORD_TABLE in v.name)
                 for v, g in zip(variables, grads))
  return (np.sqrt(dense), np.sqrt(rows), np.sqrt(official)), sparse


def run(batch_size: int, seq_length: int, seed: int = 0) -> str:
  from albert_tf import AlbertConfig
  from albert_tf import AlbertEncoder
  from albert_tf.models import AlbertClassifier
  from albert_tf.models import AlbertPretrainer
  config = AlbertConfig.from_json_file(
      os.path.join(REPO_ROOT, "configs", "albert_base.json"))
  tf.keras.utils.set_random_seed(seed)
  batch = _batch(batch_size, seq_length, config.vocab_size, 20, seed)
  lines = [f"ALBERT-base, batch {batch_size} x {seq_length}, Zipf(1.1) ids "
           f"(seed {seed}), random initial weights; "
           f"{common.machine_label()}",
           "model | IndexedSlices gradients | dense norm | rows one by one "
           "| official script | rows / dense | clip factor dense, rows"]
  for name, pretraining in (("pretrainer", True), ("classifier", False)):
    encoder = AlbertEncoder(config)
    model = (AlbertPretrainer(encoder) if pretraining
             else AlbertClassifier(encoder, 2))
    (dense, rows, official), sparse = norms(
        *_gradients(model, batch, pretraining))
    short = ", ".join(n.split(":")[0].split("/")[-2] for n in sparse) or "-"
    lines.append(
        f"{name} | {short} | {dense:.4f} | {rows:.4f} | {official:.4f} | "
        f"{rows / dense:.4f} | {min(1, 1 / dense):.4f}, "
        f"{min(1, 1 / rows):.4f}")
  return "\n".join(lines)


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--batch_size", type=int, default=8)
  parser.add_argument("--seq_length", type=int, default=128)
  parser.add_argument("--seed", type=int, default=0)
  args = parser.parse_args()
  print(run(args.batch_size, args.seq_length, args.seed))


if __name__ == "__main__":
  main()
