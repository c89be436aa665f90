"""One contender of benchmarks.finetuning.peers, in its own process.

  python -m benchmarks.finetuning.peers_worker --contender=auto --task=sst2 \
      --size=base --batch_size=32 --seq_length=128 --steps=8

Builds the contender, warms it up (every batch shape it will meet traced
or run once), trains `--steps` steps on the task's example stream and
prints one JSON line: examples and seconds of the timed steps, their
padded and real tokens, and the CPU that other processes used meanwhile
(from /proc/stat, minus this process's own time), in cores.

Contenders: ours through the fine-tuning runner's `fit` step (AdamW,
clipping) -- `none` (every batch at --seq_length), `pow2` and `auto`
(length buckets: powers of two; fitted to the data, at most 4), `pack`
(--pack_examples) -- and Hugging Face's AlbertForSequenceClassification on
PyTorch with Trainer's CPU defaults (fused AdamW, weight decay 0, gradient
norm 1.0, linear schedule, sdpa attention, float32): `hf_dynamic` (each
batch padded to its longest, DataCollatorWithPadding) and `hf_128` (every
batch at --seq_length). Every contender reads the same seeded stream of
examples (the order of the runner's shuffle); ours batch it their way,
Hugging Face's take 32 consecutive examples, as the runner's `none` does.
"""

import argparse
import json
import os
import tempfile

import numpy as np

from benchmarks import common

OURS = ("none", "pow2", "auto", "pack")
THEIRS = ("hf_dynamic", "hf_128")
WARMUP_STEPS = 2
EXAMPLES = 4000
TINY = dict(vocab_size=1000, embedding_size=16, hidden_size=32,
            num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
            max_position_embeddings=64, hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0)


def config_dict(size: str) -> dict:
  """The official-format config of `size` ("tiny": TINY)."""
  if size == "tiny":
    from albert_tf.config import AlbertConfig
    return AlbertConfig(**TINY).to_dict()
  return common.load_config(size).to_dict()


def task_features(task: str, seq: int, vocab_size: int):
  """glue Features of the generated task
  (benchmarks.finetuning.length_buckets.TASKS)."""
  from benchmarks.finetuning import length_buckets as task_lengths
  return task_lengths.TASKS[task][1](EXAMPLES, seq, vocab_size)


def stream_order(n: int, count: int, seed: int = 0) -> np.ndarray:
  """The first `count` example indices of the runner's training stream
  (make_dataset: repeat, then shuffle(min(n, 100000), seed))."""
  import tensorflow as tf
  dataset = tf.data.Dataset.range(n).repeat().shuffle(min(n, 100_000),
                                                      seed=seed)
  return np.fromiter(dataset.take(count).as_numpy_iterator(), np.int64)


# --- ours --------------------------------------------------------------------


def build_ours(contender: str, task: str, size: str, batch: int, seq: int,
               dtype: str = "float32"):
  """(runner, dataset, buckets, plan) of one of our contenders ("pack",
  or a --length_buckets value), warmed up at every bucket's shape."""
  import tensorflow as tf

  from albert_tf.config import AlbertConfig
  from albert_tf.models.albert_classifier import AlbertClassifier
  from albert_tf.training import dataset_options
  from albert_tf.training.finetuning import params as finetuning_params
  from albert_tf.training.finetuning import runner as finetuning_runner
  from albert_tf.training.finetuning import task as finetuning_task
  from data_pipeline.tasks import bucket_boundaries
  from data_pipeline.tasks import packing
  from data_pipeline.tasks.glue import features as glue_features
  config = AlbertConfig.from_dict(config_dict(size))
  features = task_features(task, seq, config.vocab_size)
  folder = tempfile.mkdtemp(prefix="bench_peers_")
  config_file = os.path.join(folder, "albert_config.json")
  config.to_json_file(config_file)
  pack = contender == "pack"
  flag = "none" if pack else contender
  buckets = bucket_boundaries.choose(flag, seq, 4,
                                     features.lengths).length_buckets
  plan = packing.plan(features.lengths, batch, seq) if pack else None

  def loss(labels, outputs):
    return tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=outputs["logits"])

  task_spec = finetuning_task.FinetuningTask(
      name=task, build_model=lambda encoder, cfg: AlbertClassifier(encoder, 2),
      loss_fn=loss, length_buckets=buckets, packed_training=pack)
  params = finetuning_params.FinetuningParams.from_flat(
      output_dir=os.path.join(folder, "run"), albert_config_file=config_file,
      do_train=True, max_seq_length=seq, train_batch_size=batch,
      learning_rate=1e-5, train_step=10**6, warmup_step=10,
      save_checkpoints_steps=10**6, iterations_per_loop=1, log_steps=10**6,
      seed=0, length_buckets=flag, pack_examples=pack, dtype=dtype)
  runner = finetuning_runner.FinetuningRunner(params, task_spec)
  # As the runner's train(): without tf.data's autotuning thread, whose
  # teardown at the end of `fit` would add up to the window's length.
  dataset = dataset_options.without_autotune_thread(glue_features.make_dataset(
      features, seq, batch, is_training=True, seed=0, buckets=buckets,
      packing=plan))
  # Warm-up: one step at every bucket's shape.
  first = next(iter(dataset))
  for length in ([] if pack else buckets):
    shaped = _at_length(first, length)
    runner.trainer.fit(tf.data.Dataset.from_tensors(shaped),
                       steps_per_epoch=1, epochs=1, verbose=0)
  return runner, dataset, buckets, plan


def run_ours(contender: str, task: str, size: str, batch: int, seq: int,
             steps: int, dtype: str) -> dict:
  runner, dataset, buckets, plan = build_ours(contender, task, size, batch,
                                              seq, dtype)
  pack = plan is not None
  runner.trainer.fit(dataset, steps_per_epoch=WARMUP_STEPS, epochs=1,
                     verbose=0)
  timed = dataset.skip(WARMUP_STEPS)
  with common.CpuWindow() as window:
    runner.trainer.fit(timed, steps_per_epoch=steps, epochs=1, verbose=0)
  examples = padded = tokens = 0
  for batch_features, _ in timed.take(steps):
    mask = batch_features["input_mask"].numpy()
    padded += mask.size
    tokens += int(mask.sum())
    examples += (int(batch_features["example_weights"].numpy().sum())
                 if pack else len(mask))
  trainer = runner.trainer
  return dict(examples=examples, seconds=window.seconds,
              other_cores=window.other_cores, padded_tokens=padded,
              tokens=tokens, traces=trainer.train_traces if
              trainer.per_shape_steps else 1,
              shapes=(len(buckets) if not pack else 1),
              buckets=list(buckets), rows=plan.rows if plan else None)


def _at_length(batch, length: int):
  """A (features, labels) batch with its sequence tensors cut or padded
  (with zeros: padding) to `length`: the shape of a bucket's batch."""
  import tensorflow as tf
  features, labels = batch

  def fit(x):
    width = x.shape[-1]
    if width >= length:
      return x[..., :length]
    return tf.pad(x, [[0, 0], [0, length - width]])
  return {k: fit(v) for k, v in features.items()}, labels


# --- Hugging Face ------------------------------------------------------------


def run_theirs(contender: str, task: str, size: str, batch: int, seq: int,
               steps: int, dtype: str) -> dict:
  import torch
  import transformers
  values = config_dict(size)
  features = task_features(task, seq, values["vocab_size"])
  order = stream_order(len(features), (WARMUP_STEPS + steps) * batch)
  config = transformers.AlbertConfig(
      vocab_size=values["vocab_size"],
      embedding_size=values["embedding_size"],
      hidden_size=values["hidden_size"],
      num_hidden_layers=values["num_hidden_layers"],
      num_attention_heads=values["num_attention_heads"],
      intermediate_size=values["intermediate_size"],
      hidden_act="gelu_new",  # the tanh GELU, as ours and the official
      hidden_dropout_prob=values["hidden_dropout_prob"],
      attention_probs_dropout_prob=values["attention_probs_dropout_prob"],
      max_position_embeddings=values["max_position_embeddings"],
      type_vocab_size=values["type_vocab_size"], num_labels=2,
      pad_token_id=0)
  torch.manual_seed(0)
  model = transformers.AlbertForSequenceClassification._from_config(
      config, attn_implementation="sdpa")
  model.train()
  optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5,
                                weight_decay=0.0, eps=1e-8, fused=True)
  scheduler = transformers.get_linear_schedule_with_warmup(optimizer, 0,
                                                           10**6)
  padded_ids = features.padded(seq)
  labels = torch.as_tensor(features.labels, dtype=torch.long)
  autocast = dtype == "bfloat16"

  def make_batch(indices):
    lengths = features.lengths[indices]
    width = seq if contender == "hf_128" else int(lengths.max())
    return ({name: torch.as_tensor(padded_ids[name][indices, :width],
                                   dtype=torch.long)
             for name in ("input_word_ids", "input_mask", "input_type_ids")},
            labels[indices])

  def step(inputs, targets):
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
      outputs = model(input_ids=inputs["input_word_ids"],
                      attention_mask=inputs["input_mask"],
                      token_type_ids=inputs["input_type_ids"],
                      labels=targets)
    outputs.loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)

  batches = [make_batch(order[i * batch:(i + 1) * batch])
             for i in range(WARMUP_STEPS + steps)]
  for inputs, targets in batches[:WARMUP_STEPS]:
    step(inputs, targets)
  with common.CpuWindow() as window:
    for inputs, targets in batches[WARMUP_STEPS:]:
      step(inputs, targets)
  timed = batches[WARMUP_STEPS:]
  return dict(examples=steps * batch, seconds=window.seconds,
              other_cores=window.other_cores,
              padded_tokens=sum(int(b["input_mask"].numel())
                                for b, _ in timed),
              tokens=sum(int(b["input_mask"].sum()) for b, _ in timed),
              traces=None, shapes=len({b["input_mask"].shape
                                       for b, _ in timed}),
              threads=torch.get_num_threads())


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--contender", required=True, choices=OURS + THEIRS)
  parser.add_argument("--task", default="sst2")
  parser.add_argument("--size", default="base")
  parser.add_argument("--batch_size", type=int, default=32)
  parser.add_argument("--seq_length", type=int, default=128)
  parser.add_argument("--steps", type=int, default=8)
  parser.add_argument("--dtype", default="float32",
                      choices=("float32", "bfloat16"))
  args = parser.parse_args()
  run = run_ours if args.contender in OURS else run_theirs
  result = run(args.contender, args.task, args.size, args.batch_size,
               args.seq_length, args.steps, args.dtype)
  result.update(contender=args.contender, task=args.task, dtype=args.dtype,
                steps=args.steps, load=os.getloadavg()[0])
  print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
  main()
