"""Early exit (PABEE) against full depth and a static-depth cut, per runtime.

  python -m benchmarks.serving.early_exit --size=base --seq_length=64 \
      --train_steps=600 --threads=2 --write

One run: an AlbertEarlyExitClassifier (random initialisation, every layer
shared) is fine-tuned with PABEE's loss (application j weighted j) on a
crafted task of mixed difficulty: half the sentences hold one of three
keywords (the label), half hold two different ones and the label is the
one that comes last. Then, on 192 crafted dev sentences:

  - every patience 1..L-1 is scored from one pass of per-application
    logits (albert_tf/training/early_exit.py): accuracy and mean exit
    layer;
  - baselines on the same weights: full depth (the AlbertClassifier of
    application L's head: what an export without --early_exit runs) and a
    static-depth cut (the same shared layer applied round(mean exit
    layer) times for every example, that application's head);
  - for the chosen patiences and both baselines, a token-ids SavedModel is
    written and converted to LiteRT dynamic int8 (batch 1 and batch 32
    files) and ONNX (float32); each runtime is timed at batch 1 (ms per
    example, every dev example in turn) and batch 32 (examples/s), with
    its own accuracy and mean exit layer;
  - on the SavedModel at batch 32: the loop that compacts exited rows out
    of the batch (tf.gather) against the one that keeps and masks them.

The machine is shared: timings are as loaded (the load average is in the
report).
"""

import argparse
import os
import tempfile
import time

import numpy as np
import tensorflow as tf
import tf_keras

from benchmarks import common

KEYWORDS = ("module", "function", "object")
DEV_SIZE = 192
BATCH = 32


def crafted_task(words, n: int, seed: int):
  """(sentences, labels): 3-9 filler words; one keyword (the label) or,
  in half the sentences, two different keywords: the later one is the
  label."""
  rng = np.random.default_rng(seed)
  texts, labels = [], []
  for i in range(n):
    chosen = list(rng.choice(words, int(rng.integers(3, 10))))
    first, last = rng.choice(len(KEYWORDS), 2, replace=False)
    if i % 2:
      at = sorted(rng.choice(len(chosen) + 1, 2, replace=False))
      chosen.insert(at[0], KEYWORDS[first])
      chosen.insert(at[1] + 1, KEYWORDS[last])
    else:
      chosen.insert(int(rng.integers(len(chosen) + 1)), KEYWORDS[last])
    texts.append(" ".join(chosen))
    labels.append(int(last))
  return texts, np.array(labels)


def _train(model, inputs, labels, steps: int, learning_rate: float):
  """PABEE's loss, Adam, batch 16."""
  from albert_tf.models.albert_early_exit_classifier import early_exit_loss
  data = tf.data.Dataset.from_tensor_slices((inputs, labels)).shuffle(
      len(labels), seed=0).repeat().batch(16)
  optimizer = tf_keras.optimizers.Adam(learning_rate)

  @tf.function
  def step(x, y):
    with tf.GradientTape() as tape:
      loss = tf.reduce_mean(early_exit_loss(y, model(x, training=True),
                                            regression=False))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss

  for x, y in data.take(steps):
    loss = step(x, y)
  return float(loss)


def _cut_classifier(model, depth: int):
  """The full-depth AlbertClassifier of `depth` applications, sharing the
  early-exit model's encoder weights, with application depth's head."""
  from albert_tf.config import AlbertConfig
  from albert_tf.models.albert_classifier import AlbertClassifier
  from albert_tf.networks.albert_encoder import AlbertEncoder
  config = AlbertConfig.from_dict(dict(model.encoder.config.to_dict(),
                                       num_hidden_layers=depth))
  encoder = AlbertEncoder(config)
  encoder.set_weights(model.encoder.get_weights())
  classifier = AlbertClassifier(encoder, model.num_classes, dropout_rate=0.0)
  classifier.classifier.dense.kernel.assign(model.head_kernel[depth - 1])
  classifier.classifier.dense.bias.assign(model.head_bias[depth - 1])
  return classifier


class _TokenIds(tf.Module):
  """A token-ids SavedModel (the signature the converters read)."""

  def __init__(self, model, patience=None, compact=True):
    super().__init__()
    self.model = model
    self.patience = patience
    self.compact = compact

  def outputs(self, inputs):
    if self.patience is None:
      logits = self.model(inputs, training=False)["logits"]
      return dict(logits=logits, probabilities=tf.nn.softmax(logits))
    out = self.model.early_exit(inputs, self.patience, compact=self.compact)
    return dict(logits=out["logits"],
                probabilities=tf.nn.softmax(out["logits"]),
                exit_layer=out["exit_layer"])


def _save(module, path: str) -> str:
  from albert_tf.exports import token_ids
  function = token_ids.token_ids_signature(module.outputs)
  tf.saved_model.save(module, path,
                      signatures={token_ids.TOKEN_IDS: function})
  return path


def _runners(saved_model: str, work: str, seq_length: int, threads: int):
  """name -> (batch-1 callable, batch-32 callable) of the SavedModel, the
  LiteRT dynamic-int8 files and the ONNX file of one variant."""
  from albert_tf.exports import load_saved_model
  from albert_tf.exports.litert import converter as litert
  from albert_tf.exports.litert.interpreter import LiteRTModel
  from albert_tf.exports.onnx import converter as onnx_converter
  from albert_tf.exports.onnx.runtime import OnnxModel
  function = load_saved_model(saved_model).signatures["token_ids"]

  def saved(inputs):
    return {k: v.numpy() for k, v in function(**{
        k: tf.constant(v) for k, v in inputs.items()}).items()}
  files = {}
  for batch in (1, BATCH):
    path = os.path.join(work, f"int8_{batch}.tflite")
    litert.export_tflite(saved_model, path, seq_length=seq_length,
                         batch_size=batch, quantize="dynamic_int8")
    files[batch] = LiteRTModel(open(path, "rb").read(), num_threads=threads)
  onnx_path = os.path.join(work, "model.onnx")
  onnx_converter.export_onnx(saved_model, onnx_path)
  onnx_model = OnnxModel(open(onnx_path, "rb").read(), num_threads=threads)
  return {"SavedModel": (saved, saved),
          "LiteRT int8": (files[1], files[BATCH]),
          "ONNX Runtime": (onnx_model, onnx_model)}


def _measure(call_1, call_32, inputs, labels, repeats: int):
  """(accuracy, mean exit layer or None, ms per example at batch 1,
  examples/s at batch 32)."""
  outputs = call_32(inputs)
  accuracy = float(np.mean(outputs["logits"].argmax(-1) == labels))
  layers = outputs.get("exit_layer")
  mean_layer = None if layers is None else float(np.mean(layers))
  singles = [{k: v[i:i + 1] for k, v in inputs.items()}
             for i in range(min(len(labels), 32))]
  call_1(singles[0])
  best_1, best_32 = float("inf"), float("inf")
  for _ in range(repeats):
    start = time.perf_counter()
    for one in singles:
      call_1(one)
    best_1 = min(best_1, (time.perf_counter() - start) / len(singles))
    start = time.perf_counter()
    for i in range(0, len(labels), BATCH):
      call_32({k: v[i:i + BATCH] for k, v in inputs.items()})
    best_32 = min(best_32, time.perf_counter() - start)
  return accuracy, mean_layer, 1000 * best_1, len(labels) / best_32


def _model_and_data(size, seq_length, train_steps, learning_rate, work):
  """The fine-tuned early-exit model and the dev inputs / labels."""
  from albert_tf.exports.litert.runner import TextRunner
  from albert_tf.models import AlbertEarlyExitClassifier
  from albert_tf.networks.albert_encoder import AlbertEncoder
  from benchmarks.serving.litert import _words
  from data_pipeline.corpora import stdlib_corpus
  from data_pipeline.tokenization import sentencepiece_trainer
  from data_pipeline.tokenization.sentencepiece_tokenizer import (
    SentencePieceTokenizer,
  )
  tf_keras.utils.set_random_seed(0)
  corpus = os.path.join(work, "corpus.txt")
  stdlib_corpus.write_stdlib_corpus(corpus, max_bytes=300_000)
  spm = os.path.join(work, "spm")
  sentencepiece_trainer.train_sentencepiece(corpus, spm, vocab_size=2000)
  words = _words(corpus)
  packer = TextRunner.__new__(TextRunner)  # its packing, no model
  packer.tokenizer = SentencePieceTokenizer(spm + ".model")
  packer.seq_length, packer.labels = seq_length, list(map(str, range(3)))
  config = common.load_config(size)
  model = AlbertEarlyExitClassifier(AlbertEncoder(config), len(KEYWORDS),
                                    dropout_rate=0.0)
  texts, labels = crafted_task(words, 3000, seed=0)
  loss = _train(model, packer.classify_inputs(texts), labels, train_steps,
                learning_rate)
  dev_texts, dev_labels = crafted_task(words, DEV_SIZE, seed=1)
  return model, packer.classify_inputs(dev_texts), dev_labels, loss


def _dev_table(model, dev, dev_labels):
  """Per patience (0..L-1) accuracy and mean exit layer; per depth the
  static cut's accuracy (from one pass of per-application logits)."""
  from albert_tf.training import early_exit
  all_logits = np.concatenate([
      model({k: v[i:i + BATCH] for k, v in dev.items()},
            training=False)["all_logits"].numpy()
      for i in range(0, len(dev_labels), BATCH)])

  def metrics(logits):
    return {"accuracy": float(np.mean(logits.argmax(-1) == dev_labels))}
  table = early_exit.exit_table(all_logits, metrics, "accuracy")
  cuts = [metrics(all_logits[:, j])["accuracy"]
          for j in range(all_logits.shape[1])]
  return table, cuts


def run(size: str, seq_length: int = 64, train_steps: int = 600,
        repeats: int = 3, threads: int = 2, learning_rate: float = 3e-4,
        patiences=None):
  """(markdown report, rows as dicts): see the module docstring."""
  try:
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
  except RuntimeError:  # TensorFlow already started (tests): as it is.
    pass
  from albert_tf.training import early_exit
  with tempfile.TemporaryDirectory() as work:
    model, dev, dev_labels, loss = _model_and_data(
        size, seq_length, train_steps, learning_rate, work)
    layers = model.num_layers
    table, cuts = _dev_table(model, dev, dev_labels)
    auto = early_exit.choose_patience(table, "accuracy", 0.5)
    if patiences is None:
      patiences = sorted({1, 2, 3, auto} - {0})
    patiences = [p for p in patiences if 0 < p < layers]
    depth_rows = [_table_row(table, cuts, p, auto) for p in range(layers)]
    variants = {"full depth": (_cut_classifier(model, layers), None, None)}
    for p in patiences:
      mean = table[p]["mean_exit_layer"]
      cut = max(1, int(round(mean)))
      variants[f"patience {p}"] = (model, p, None)
      if cut < layers:  # a cut at L is the full depth
        variants.setdefault(f"static cut {cut}",
                            (_cut_classifier(model, cut), None, cut))
    rows = []
    for name, (variant, patience, _) in variants.items():
      folder = os.path.join(work, name.replace(" ", "_"))
      saved = _save(_TokenIds(variant, patience), folder + "_saved")
      os.makedirs(folder)
      for runtime, (one, many) in _runners(saved, folder, seq_length,
                                           threads).items():
        accuracy, mean, ms, per_s = _measure(one, many, dev, dev_labels,
                                             repeats)
        rows.append(dict(variant=name, runtime=runtime, accuracy=accuracy,
                         mean_exit_layer=(mean if mean is not None else
                                          float(variant.encoder.config
                                                .num_hidden_layers)),
                         ms_batch_1=ms, examples_per_s_32=per_s))
        print(rows[-1], flush=True)
    compaction = _compaction_rows(model, patiences[0], dev, dev_labels,
                                  work, repeats)
  report = _report(depth_rows, rows, compaction, layers, loss, auto)
  return report, rows, compaction


def _table_row(table, cuts, patience, auto):
  row = table[patience]
  mean = row["mean_exit_layer"]
  cut = max(1, int(round(mean)))
  return [str(patience) + (" (auto)" if patience == auto else ""),
          f"{row['accuracy']:.3f}", f"{mean:.2f}",
          f"{cuts[cut - 1]:.3f} (cut {cut})"]


def _compaction_rows(model, patience, dev, dev_labels, work, repeats):
  """SavedModel at batch 32: compaction against masking."""
  from albert_tf.exports import load_saved_model
  results = {}
  for compact in (True, False):
    path = _save(_TokenIds(model, patience, compact),
                 os.path.join(work, f"compact_{compact}"))
    function = load_saved_model(path).signatures["token_ids"]
    batches = [{k: tf.constant(v[i:i + BATCH]) for k, v in dev.items()}
               for i in range(0, len(dev_labels), BATCH)]
    function(**batches[0])
    best = float("inf")
    for _ in range(max(repeats, 3)):
      start = time.perf_counter()
      for batch in batches:
        function(**batch)["logits"].numpy()
      best = min(best, time.perf_counter() - start)
    results["compaction" if compact else "masking"] = len(dev_labels) / best
  return results


def _report(depth_rows, rows, compaction, layers, loss, auto) -> str:
  header = ["patience", "dev accuracy", "mean exit layer",
            "static cut at that depth"]
  parts = [f"Dev accuracy per patience ({layers} applications; final "
           f"training loss {loss:.3f}; auto = patience {auto}):",
           common.markdown_table(header, depth_rows)]
  table_rows = [[r["variant"], r["runtime"], f"{r['accuracy']:.3f}",
                 f"{r['mean_exit_layer']:.2f}", f"{r['ms_batch_1']:.2f}",
                 f"{r['examples_per_s_32']:.0f}"] for r in rows]
  parts += ["Per runtime (ms per example at batch 1, every dev example "
            "in turn; examples/s at batch 32):",
            common.markdown_table(
                ["variant", "runtime", "dev accuracy", "mean exit layer",
                 "ms at batch 1", "examples/s at batch 32"], table_rows),
            "SavedModel at batch 32, the exit loop: compaction "
            f"{compaction['compaction']:.0f} examples/s, masking "
            f"{compaction['masking']:.0f} examples/s."]
  return "\n\n".join(parts)


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--size", default="base")
  parser.add_argument("--seq_length", type=int, default=64)
  parser.add_argument("--train_steps", type=int, default=600)
  parser.add_argument("--learning_rate", type=float, default=3e-4)
  parser.add_argument("--threads", type=int, default=2)
  parser.add_argument("--repeats", type=int, default=3)
  parser.add_argument("--patiences", default="",
                      help="comma-separated patiences to time (default: "
                      "1, 2, 3 and auto's)")
  parser.add_argument("--write", action="store_true")
  args = common.parse_args(parser)
  patiences = ([int(p) for p in args.patiences.split(",")]
               if args.patiences else None)
  report, _, _ = run(args.size, args.seq_length, args.train_steps,
                     args.repeats, args.threads, args.learning_rate,
                     patiences)
  print(report)
  if args.write:
    common.update_benchmarks_md(
        "Early exit (PABEE)",
        f"`python -m benchmarks.serving.early_exit --size={args.size} "
        f"--seq_length={args.seq_length} --train_steps={args.train_steps} "
        f"--learning_rate={args.learning_rate:g} --threads={args.threads}`;"
        f" ALBERT-{common.size_label(args.size)} from random initialisation "
        "on a crafted task of mixed difficulty (not a pretrained model, "
        f"not a real task); {common.machine_line()}; the machine was "
        "shared with other jobs: timings as loaded.\n\n" + report,
        stage="Serving")


if __name__ == "__main__":
  main()
