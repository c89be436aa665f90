"""LiteRT on a phone-like CPU: the SavedModel, float and dynamic-int8 .tflite.

  python -m benchmarks.serving.litert --size=base --seq_length=128 --threads=2

One run: an ALBERT classifier (random initialisation) is fine-tuned briefly
on a crafted task (which of three keywords a sentence holds; sentences of
stdlib docstring words, our SentencePiece model of them), exported as the
raw-text SavedModel of run_classifier, and converted with
tools.export_tflite's library (none, float16, dynamic_int8) at batch 1 x
--seq_length. Reported per variant: latency at batch 1 (the SavedModel's
token-ids signature with TensorFlow limited to --threads; the LiteRT
interpreter of ai_edge_litert with --threads, the same process, calls
alternating), file size (the SavedModel's variables + graph; the .tflite),
accuracy on 200 crafted dev sentences and its change against the SavedModel.
"""

import argparse
import os
import tempfile

import numpy as np
import tensorflow as tf
import tf_keras

from benchmarks import common

KEYWORDS = ("module", "function", "object")
TRAIN_SEQ = 32  # fine-tuning length; the positions used, not --seq_length


def corpus_words(corpus: str):
  with open(corpus, encoding="utf-8") as f:
    words = [w.lower() for w in f.read().split() if w.isalpha()]
  return sorted({w for w in words[:20000] if w not in KEYWORDS})[:400]


def keyword_task(words, n: int, seed: int):
  """(sentences, labels): class i holds KEYWORDS[i] among 3-9 words."""
  rng = np.random.default_rng(seed)
  texts, labels = [], []
  for _ in range(n):
    label = int(rng.integers(len(KEYWORDS)))
    chosen = list(rng.choice(words, int(rng.integers(3, 10))))
    chosen.insert(int(rng.integers(len(chosen) + 1)), KEYWORDS[label])
    texts.append(" ".join(chosen))
    labels.append(label)
  return texts, np.array(labels)


def _dir_size(path: str) -> int:
  return sum(os.path.getsize(os.path.join(folder, name))
             for folder, _, names in os.walk(path) for name in names)


def run(size: str, seq_length: int, threads: int, repeats: int,
        train_steps: int, learning_rate: float = 1e-4) -> str:
  """The markdown table (see the module docstring)."""
  from albert_tf import exports
  from albert_tf.exports.litert import converter as tflite
  from albert_tf.exports.litert.runner import TextRunner
  from albert_tf.models.albert_classifier import AlbertClassifier
  from albert_tf.networks.albert_encoder import AlbertEncoder
  from data_pipeline.corpora import stdlib_corpus
  from data_pipeline.tokenization import sentencepiece_trainer
  try:
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
  except RuntimeError:  # TensorFlow already started (tests): as it is.
    pass
  tf_keras.utils.set_random_seed(0)
  config = common.load_config(size)
  labels = [str(i) for i in range(len(KEYWORDS))]
  with tempfile.TemporaryDirectory() as work:
    corpus = os.path.join(work, "corpus.txt")
    stdlib_corpus.write_stdlib_corpus(corpus, max_bytes=300_000)
    spm = os.path.join(work, "spm")
    sentencepiece_trainer.train_sentencepiece(corpus, spm, vocab_size=2000)
    words = corpus_words(corpus)

    model = AlbertClassifier(AlbertEncoder(config), len(KEYWORDS),
                             dropout_rate=0.0)
    packer = TextRunner.__new__(TextRunner)  # its packing, no model yet
    from data_pipeline.tokenization.sentencepiece_tokenizer import (
      SentencePieceTokenizer,
    )
    packer.tokenizer = SentencePieceTokenizer(spm + ".model")
    packer.seq_length, packer.labels = TRAIN_SEQ, labels
    texts, train_labels = keyword_task(words, 2000, seed=0)
    model.compile(optimizer=tf_keras.optimizers.Adam(learning_rate),
                  loss={"logits": tf_keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True)})
    data = tf.data.Dataset.from_tensor_slices(
        (packer.classify_inputs(texts), {"logits": train_labels})).shuffle(
            2000, seed=0).repeat().batch(16)
    model.fit(data, steps_per_epoch=train_steps, epochs=1, verbose=0)
    # A fresh model with the weights: compile()'s optimizer slots would be
    # saved too (3x the SavedModel's size).
    trained = AlbertClassifier(AlbertEncoder(config), len(KEYWORDS),
                               dropout_rate=0.0)
    trained.set_weights(model.get_weights())
    saved_model = exports.export_classifier(
        trained, os.path.join(work, "export"), spm + ".model", labels, 1,
        seq_length)

    dev_texts, dev_labels = keyword_task(words, 200, seed=1)
    conversion = tflite.Conversion(saved_model, seq_length, 1)
    rows, runners, sizes = [], {}, {}
    for quantize in ("none", "float16", "dynamic_int8"):
      path = os.path.join(work, "tflite", f"{quantize}.tflite")
      description = conversion.write(path, quantize)
      runners[quantize] = TextRunner.from_file(path, num_threads=threads)
      sizes[quantize] = description["size_bytes"]
    runners["none"].seq_length = seq_length
    dev_inputs = runners["none"].classify_inputs(dev_texts)
    one = {k: v[:1] for k, v in dev_inputs.items()}
    tf_one = {k: tf.constant(v) for k, v in one.items()}
    function = conversion.function
    times = common.time_alternating(
        {"savedmodel": lambda: function(**tf_one)["logits"],
         **{q: (lambda r=r: r.model(one)) for q, r in runners.items()}},
        repeats=repeats)

    def accuracy(logits):
      return float(np.mean(np.argmax(logits, -1) == dev_labels))

    saved_logits = np.concatenate([
        function(**{k: tf.constant(v[i:i + 50]) for k, v in
                    dev_inputs.items()})["logits"].numpy()
        for i in range(0, len(dev_labels), 50)])
    base = accuracy(saved_logits)
    saved_ms = common.median(times["savedmodel"]) * 1000
    rows.append(["SavedModel (TF)", f"{saved_ms:.1f}",
                 f"{_dir_size(saved_model) / 1e6:.2f}", f"{base:.3f}", "-"])
    for quantize, runner in runners.items():
      acc = accuracy(runner.model(dev_inputs)["logits"])
      name = {"none": "LiteRT float32", "float16": "LiteRT float16",
              "dynamic_int8": "LiteRT dynamic int8"}[quantize]
      rows.append([name, f"{common.median(times[quantize]) * 1000:.1f}",
                   f"{sizes[quantize] / 1e6:.2f}", f"{acc:.3f}",
                   f"{100 * (acc - base):+.1f} pt"])
      print(rows[-1], flush=True)
  return common.markdown_table(
      ["model", "ms at batch 1", "file MB", "crafted dev accuracy",
       "change vs SavedModel"], rows)


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--size", default="base")
  parser.add_argument("--seq_length", type=int, default=128)
  parser.add_argument("--threads", type=int, default=2)
  parser.add_argument("--repeats", type=int, default=20)
  parser.add_argument("--train_steps", type=int, default=100)
  parser.add_argument("--learning_rate", type=float, default=1e-4)
  parser.add_argument("--write", action="store_true")
  args = common.parse_args(parser)
  table = run(args.size, args.seq_length, args.threads, args.repeats,
              args.train_steps, args.learning_rate)
  print(table)
  if args.write:
    common.update_benchmarks_md(
        "LiteRT (TFLite)",
        f"`python -m benchmarks.serving.litert --size={args.size} "
        f"--seq_length={args.seq_length} --threads={args.threads} "
        f"--train_steps={args.train_steps} --learning_rate="
        f"{args.learning_rate:g}`; ALBERT-{args.size}, sequence "
        f"{args.seq_length}, {args.threads} threads, one process, "
        f"ai-edge-litert 2.3.0; {common.machine_line()}. Accuracy: a "
        f"classifier fine-tuned {args.train_steps} steps (batch 16, sequence "
        f"{TRAIN_SEQ}) from random initialisation on a crafted 3-keyword "
        "task, 200 crafted dev sentences.\n\n" + table)


if __name__ == "__main__":
  main()
