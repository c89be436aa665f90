"""The fine-tuning step's fixed cost: what does not scale with tokens.

  python -m benchmarks.investigations.step_overhead --size=base \
      --batch_size=32 --repeats=5

Our classifier train step (FinetuningTrainer.train_step: forward, loss,
gradients, clipping, AdamW; the last block at [CLS] only) in one process,
the contenders alternating, medians of `--repeats`:

- at sequence 32, 64 and 128 (one static shape each, as a length bucket
  runs): seconds a step and microseconds per padded token;
- at 32 with the sequence length unknown to the graph ([batch, None], what
  one trace for every bucket would run);
- the fixed cost: the same step on the same graph (same ops, same depth)
  with the model shrunk to width 32 at batch 1 x 8 tokens, where the
  arithmetic is nil: what running the step's ops costs whatever the size;
- the optimizer update alone (clip to norm 1, apply) for the model's
  variables: AdamW, AdamW compiled by XLA (`jit_compile` on the apply
  step only), LAMB.
"""

import argparse

import numpy as np
import tensorflow as tf

from benchmarks import common

SECTION = "Fine-tuning step: fixed cost and time per padded token"
LENGTHS = (32, 64, 128)


def _loss(labels, outputs):
  return tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=labels, logits=outputs["logits"])


def _trainer(config, optimizer: str = "adamw"):
  from albert_tf import optimization
  from albert_tf.models.albert_classifier import AlbertClassifier
  from albert_tf.networks.albert_encoder import AlbertEncoder
  from albert_tf.training.finetuning import bucketed_steps
  from albert_tf.training.finetuning.model import FinetuningTrainer
  trainer = FinetuningTrainer(AlbertClassifier(AlbertEncoder(config), 2),
                              _loss)
  trainer.compile(optimizer=optimization.create_optimizer(
      optimizer, 1e-5, 10**6, 10))
  bucketed_steps.build_optimizer_weights(trainer)
  return trainer


def _batch(batch: int, seq: int, vocab_size: int, seed: int = 0):
  rng = np.random.default_rng(seed)
  return (dict(input_word_ids=tf.constant(
      rng.integers(5, vocab_size, (batch, seq)), tf.int32),
               input_mask=tf.ones([batch, seq], tf.int32),
               input_type_ids=tf.zeros([batch, seq], tf.int32)),
          tf.constant(rng.integers(0, 2, (batch,)), tf.int32))


def _apply(trainer, jit_compile: bool, optimizer: str = "adamw"):
  """clip + apply of fixed gradients, as the step's update does."""
  from albert_tf import optimization
  variables = trainer.model.trainable_variables
  opt = optimization.create_optimizer(optimizer, 1e-5, 10**6, 10)
  opt._create_all_weights(variables)  # noqa: SLF001
  grads = [tf.random.normal(v.shape, stddev=1e-3) for v in variables]

  def apply():
    clipped, norm = tf.clip_by_global_norm(grads, 1.0)
    opt.apply_gradients(zip(clipped, variables),
                        experimental_aggregate_gradients=False)
    return norm
  return tf.function(apply, jit_compile=jit_compile)


def run(size: str, batch: int, repeats: int) -> str:
  from albert_tf.config import AlbertConfig
  config = common.load_config(size)
  small = AlbertConfig.from_dict(dict(
      config.to_dict(), hidden_size=32, embedding_size=16,
      intermediate_size=64, num_attention_heads=4, vocab_size=1000))
  trainer = _trainer(config)
  static = tf.function(trainer.train_step)
  spec = (dict(input_word_ids=tf.TensorSpec([batch, None], tf.int32),
               input_mask=tf.TensorSpec([batch, None], tf.int32),
               input_type_ids=tf.TensorSpec([batch, None], tf.int32)),
          tf.TensorSpec([batch], tf.int32))
  dynamic = tf.function(trainer.train_step, input_signature=[spec])
  small_step = tf.function(_trainer(small).train_step)
  batches = {seq: _batch(batch, seq, config.vocab_size) for seq in LENGTHS}
  tiny_batch = _batch(1, 8, small.vocab_size)
  contenders = {f"step at {seq}": (lambda data=data: static(data))
                for seq, data in batches.items()}
  contenders["step at 32, length unknown to the graph"] = (
      lambda: dynamic(batches[32]))
  contenders["fixed cost: same graph, width 32, 1 x 8 tokens"] = (
      lambda: small_step(tiny_batch))
  for name, jit, optimizer in (("AdamW", False, "adamw"),
                               ("AdamW, XLA", True, "adamw"),
                               ("LAMB", False, "lamb")):
    contenders[f"update only: {name}"] = _apply(trainer, jit, optimizer)
  ops = len(static.get_concrete_function(batches[32]).graph.get_operations())
  times = common.time_alternating(contenders, repeats, warmup=2)
  rows = []
  for name, values in times.items():
    seconds = common.median(values)
    seq = {f"step at {s}": s for s in LENGTHS}.get(
        name, 32 if name.startswith("step at 32") else None)
    per_token = (f"{seconds / (batch * seq) * 1e6:.2f}" if seq else "")
    rows.append([name, f"{seconds * 1000:.1f}", per_token])
  table = common.markdown_table(
      ["step", "ms (median)", "us per padded token"], rows)
  table += (f"\n\nThe train step's graph has {ops} ops before Grappler "
            f"(ALBERT-{common.size_label(size)} classifier, "
            f"{config.num_hidden_layers} layers, forward and backward).")
  print(table)
  return table


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--size", default="base")
  parser.add_argument("--batch_size", type=int, default=32)
  parser.add_argument("--repeats", type=int, default=5)
  parser.add_argument("--write", action="store_true",
                      help="update BENCHMARKS.md")
  args = common.parse_args(parser)
  machine = common.machine_line()
  table = run(args.size, args.batch_size, args.repeats)
  if args.write:
    import os
    common.update_benchmarks_md(SECTION, (
        "`python -m benchmarks.investigations.step_overhead "
        f"--size={args.size} "
        f"--batch_size={args.batch_size} --repeats={args.repeats} --write`; "
        f"{machine}, {os.getloadavg()[0]:.1f} at the end. Float32, all "
        "rows alternating in one process.\n\n" + table))


if __name__ == "__main__":
  main()
