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
    example, 96 dev examples spread over the file, one at a time) and
    batch 32 (examples/s), with its own accuracy and mean exit layer;
  - on the SavedModel at batch 32: the loop that compacts exited rows out
    of the batch (tf.gather) against the one that keeps and masks them.

The machine is shared: timings are as loaded (the load average is in the
report).
"""

import argparse
import collections
import os
import shlex
import sys
import tempfile
import time
from typing import Dict, List

import numpy as np
import tensorflow as tf
import tf_keras

from benchmarks import charts
from benchmarks import common

KEYWORDS = ("module", "function", "object")
DEV_SIZE = 192
BATCH = 32
BATCH1_EXAMPLES = 96  # default; 0: the whole dev set


# run()'s answer: the markdown report, the per-runtime rows (dicts), the
# SavedModel's compaction / masking examples/s, the accuracy-latency curve
# (see _curve), the dev table per patience, auto's patience, the depth L.
Result = collections.namedtuple(
    "Result", "report rows compaction curve table auto layers")


def _picks(n: int, limit: int) -> np.ndarray:
  """Indices of `limit` examples spread over n (all of them if limit is 0
  or >= n): the batch-1 timings' examples."""
  return np.linspace(0, n - 1, n if limit <= 0 else min(n, limit)
                     ).astype(int)


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


def _measure(call_1, call_32, inputs, labels, repeats: int,
             batch1_examples: int):
  """(accuracy, mean exit layer or None, ms per example at batch 1,
  examples/s at batch 32), the best of `repeats` passes."""
  outputs = call_32(inputs)
  accuracy = float(np.mean(outputs["logits"].argmax(-1) == labels))
  layers = outputs.get("exit_layer")
  mean_layer = None if layers is None else float(np.mean(layers))
  # Batch 1: examples spread over the file (a real task's examples need
  # different depths).
  singles = [{k: v[i:i + 1] for k, v in inputs.items()}
             for i in _picks(len(labels), batch1_examples)]
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


def _finetuned_model_and_data(run_dir, dev_file, spm_model_file,
                              seq_length):
  """The best checkpoint of a `run_classifier --early_exit` run (its
  albert_config.json, labels.json and best/) and the dev file's inputs and
  label indices (columns text, label), packed as fine-tuning packs them."""
  import csv
  import io

  from albert_common import file_io
  from albert_tf.config import AlbertConfig
  from albert_tf.exports.text_runner import TextRunner
  from albert_tf.models import AlbertEarlyExitClassifier
  from albert_tf.networks.albert_encoder import AlbertEncoder
  from data_pipeline.tasks import label_list
  from data_pipeline.tokenization.sentencepiece_tokenizer import (
    SentencePieceTokenizer,
  )
  config = AlbertConfig.from_json_file(
      file_io.join(run_dir, "albert_config.json"))
  labels = list(label_list.read(run_dir).labels)
  model = AlbertEarlyExitClassifier(AlbertEncoder(config), len(labels),
                                    dropout_rate=0.0)
  best = tf.train.latest_checkpoint(file_io.join(run_dir, "best"))
  if best is None:
    raise SystemExit(f"--run_dir {run_dir}: no best/ checkpoint (was it run "
                     "with --do_eval?)")
  tf.train.Checkpoint(model=model).restore(best).expect_partial(
      ).assert_existing_objects_matched()
  rows = list(csv.DictReader(io.StringIO(file_io.read_text(dev_file))))
  packer = TextRunner.__new__(TextRunner)  # its packing, no model
  packer.tokenizer = SentencePieceTokenizer(spm_model_file)
  packer.seq_length, packer.labels = seq_length, labels
  dev = packer.classify_inputs([row["text"] for row in rows])
  dev_labels = np.array([labels.index(row["label"]) for row in rows])
  return model, dev, dev_labels


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
        patiences=None, run_dir=None, dev_file=None, spm_model_file=None,
        tolerance: float = 0.5, batch1_examples: int = BATCH1_EXAMPLES):
  """(markdown report, rows as dicts): see the module docstring. With
  run_dir (and dev_file, spm_model_file): that fine-tuned run's model
  and dev set instead of the crafted task."""
  try:
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
  except RuntimeError:  # TensorFlow already started (tests): as it is.
    pass
  from albert_tf.training import early_exit
  with tempfile.TemporaryDirectory() as work:
    if run_dir:
      model, dev, dev_labels = _finetuned_model_and_data(
          run_dir, dev_file, spm_model_file, seq_length)
      loss = None
    else:
      model, dev, dev_labels, loss = _model_and_data(
          size, seq_length, train_steps, learning_rate, work)
    layers = model.num_layers
    table, cuts = _dev_table(model, dev, dev_labels)
    auto = early_exit.choose_patience(table, "accuracy", tolerance)
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
                                             repeats, batch1_examples)
        rows.append(dict(variant=name, runtime=runtime, accuracy=accuracy,
                         mean_exit_layer=(mean if mean is not None else
                                          float(variant.encoder.config
                                                .num_hidden_layers)),
                         ms_batch_1=ms, examples_per_s_32=per_s))
        print(rows[-1], flush=True)
    compaction = _compaction_rows(model, patiences[0], dev, dev_labels,
                                  work, repeats)
    curve = _curve(model, dev, dev_labels, table, cuts, repeats,
                   batch1_examples)
  report = _report(depth_rows, rows, compaction, layers, loss, auto, curve,
                   batch1_examples)
  return Result(report, rows, compaction, curve, table, auto, layers)


def _batch1_ms(function, singles, repeats: int) -> float:
  """Best-of-repeats ms per example of function(inputs) one at a time."""
  function(**singles[0])
  best = float("inf")
  for _ in range(repeats):
    start = time.perf_counter()
    for one in singles:
      function(**one)["logits"].numpy()
    best = min(best, (time.perf_counter() - start) / len(singles))
  return 1000 * best


def _curve(model, dev, dev_labels, table, cuts, repeats: int,
           batch1_examples: int):
  """Accuracy against batch-1 latency, every patience and every static
  depth, in this process (TensorFlow graphs of the same weights, as the
  SavedModel runs them): {"early exit": [(ms, accuracy, patience)],
  "static cut": [(ms, accuracy, depth)]}. Patience 0 is the full depth."""
  layers = model.num_layers
  singles = [{k: tf.constant(v[i:i + 1]) for k, v in dev.items()}
             for i in _picks(len(dev_labels), batch1_examples)]
  spec = {k: tf.TensorSpec([1, v.shape[1]], tf.int32)
          for k, v in dev.items()}

  @tf.function(input_signature=[spec, tf.TensorSpec([], tf.int32)])
  def exits(inputs, patience):
    return model.early_exit(inputs, patience)

  curve = {"early exit": [], "static cut": []}
  for patience in range(1, layers):
    ms = _batch1_ms(lambda **x: exits(x, tf.constant(patience)), singles,
                    repeats)
    curve["early exit"].append((ms, table[patience]["accuracy"], patience))
  for depth in range(1, layers + 1):
    cut = _cut_classifier(model, depth)
    function = tf.function(lambda x, m=cut: m(x, training=False),
                           input_signature=[spec])
    ms = _batch1_ms(lambda **x: function(x), singles, repeats)
    curve["static cut"].append((ms, cuts[depth - 1], depth))
  return curve


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


def _report(depth_rows, rows, compaction, layers, loss, auto, curve,
            batch1_examples) -> str:
  trained = ("" if loss is None else
             f"final training loss {loss:.3f}; ")
  parts = [f"Dev accuracy per patience ({layers} applications; "
           f"{trained}auto = patience {auto}):",
           common.markdown_table(
               ["patience", "dev accuracy", "mean exit layer",
                "static cut at that depth"], depth_rows)]
  examples = ("the whole dev set" if batch1_examples <= 0 else
              f"{batch1_examples} dev examples spread over the file")
  table_rows = [[r["variant"], r["runtime"], f"{r['accuracy']:.3f}",
                 f"{r['mean_exit_layer']:.2f}", f"{r['ms_batch_1']:.2f}",
                 f"{r['examples_per_s_32']:.0f}"] for r in rows]
  parts += [f"Per runtime (ms per example at batch 1, {examples}, one at "
            "a time; examples/s at batch 32 over the whole dev set; the "
            "best of the repeats):",
            common.markdown_table(
                ["variant", "runtime", "dev accuracy", "mean exit layer",
                 "ms at batch 1", "examples/s at batch 32"], table_rows),
            "SavedModel at batch 32, the exit loop: compaction "
            f"{compaction['compaction']:.0f} examples/s, masking "
            f"{compaction['masking']:.0f} examples/s."]
  curve_rows = (
      [[f"patience {p}", f"{acc:.3f}", f"{ms:.2f}"]
       for ms, acc, p in curve["early exit"]] +
      [[f"static cut {d}" + (" (full depth)" if d == layers else ""),
        f"{acc:.3f}", f"{ms:.2f}"] for ms, acc, d in curve["static cut"]])
  parts += [f"Accuracy against batch-1 latency, every patience and every "
            f"static depth (TensorFlow, in process, {examples}):",
            common.markdown_table(["variant", "dev accuracy",
                                   "ms at batch 1"], curve_rows)]
  return "\n\n".join(parts)


def chart_spec(curve, title: str) -> Dict:
  """The accuracy-against-latency chart (benchmarks.charts "lines")."""
  full = curve["static cut"][-1]
  return dict(name="early_exit", kind="lines", title=title,
              x_label="ms per example at batch 1", unit="dev accuracy",
              series={"early exit (patience 1..L-1)":
                      [[round(ms, 3), acc] for ms, acc, _ in
                       curve["early exit"]],
                      "static cut (depth 1..L)":
                      [[round(ms, 3), acc] for ms, acc, _ in
                       curve["static cut"]],
                      "full depth": [[round(full[0], 3), full[1]]]})


def figures(rows, table, auto, layers, machine: str, command: str,
            conditions: str, title: str, curve=None) -> List[Dict]:
  """The first table's row: auto's batch-1 time in the SavedModel against
  full depth's (same weights, same run); the ceiling is full depth's time
  scaled by the layers auto runs (mean exit layer / L): what computing
  less could give if the loop cost nothing but its layers."""
  saved = {r["variant"]: r for r in rows if r["runtime"] == "SavedModel"}
  ours, full = saved.get(f"patience {auto}"), saved.get("full depth")
  if ours is None or full is None:
    return []
  mean = table[auto]["mean_exit_layer"]
  return [dict(
      job=f"Early exit, batch 1 ({title})", order=60,
      ours=dict(label=f"patience {auto} (auto), {mean:.2f} of {layers} "
                f"layers, accuracy {ours['accuracy']:.3f}",
                value=round(ours["ms_batch_1"], 2), unit="ms"),
      peer=dict(label=f"full depth, same weights, accuracy "
                f"{full['accuracy']:.3f}",
                value=round(full["ms_batch_1"], 2), unit="ms"),
      higher_is_better=False,
      ceiling=dict(label=f"full depth x {mean:.2f}/{layers} layers",
                   value=round(full["ms_batch_1"] * mean / layers, 2),
                   unit="ms"),
      reached=round(ours["ms_batch_1"], 2), machine=machine,
      date=time.strftime("%Y-%m-%d"), command=command,
      conditions=conditions,
      **({"chart": chart_spec(curve, f"Early exit: {title}")} if curve
         else {}))]


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
  parser.add_argument("--run_dir", default="",
                      help="a run_classifier --early_exit --do_eval "
                      "output_dir: its best checkpoint instead of a model "
                      "trained here (with --dev_file, --spm_model_file)")
  parser.add_argument("--dev_file", default="",
                      help="--run_dir's dev CSV (columns text, label)")
  parser.add_argument("--spm_model_file", default="")
  parser.add_argument("--task", default="",
                      help="--run_dir's task and model, for the report")
  parser.add_argument("--exit_tolerance", type=float, default=0.5)
  parser.add_argument("--batch1_examples", type=int,
                      default=BATCH1_EXAMPLES,
                      help="dev examples timed at batch 1 (0: all)")
  parser.add_argument("--quiet_cores", type=float, default=0.1,
                      help="the run counts as quiet when other processes "
                      "used fewer cores than this on average")
  parser.add_argument("--write", action="store_true")
  args = common.parse_args(parser)
  if args.run_dir and not (args.dev_file and args.spm_model_file):
    parser.error("--run_dir needs --dev_file and --spm_model_file")
  patiences = ([int(p) for p in args.patiences.split(",")]
               if args.patiences else None)
  window = common.CpuWindow()
  window.start()
  result = run(
      args.size, args.seq_length, args.train_steps, args.repeats,
      args.threads, args.learning_rate, patiences, args.run_dir or None,
      args.dev_file, args.spm_model_file, args.exit_tolerance,
      args.batch1_examples)
  others = window.others()
  quiet = others < args.quiet_cores
  conditions = (f"quiet: other processes {others:.2f} cores on average"
                if quiet else f"loaded: other processes {others:.2f} cores")
  print(result.report)
  print(conditions)
  if args.write:
    _write(args, result, conditions, quiet)


def _write(args, result, conditions, quiet) -> None:
  """BENCHMARKS.md's section, the chart, and (a quiet run of a fine-tuned
  model only) the first table's row."""
  command = ("python -m benchmarks.serving.early_exit " +
             shlex.join(sys.argv[1:]))
  if args.run_dir:
    what = args.task or "a fine-tuned run"
  else:
    what = (f"ALBERT-{common.size_label(args.size)} from random "
            "initialisation on a crafted task of mixed difficulty (not a "
            "pretrained model, not a real task)")
  charts.from_spec(chart_spec(result.curve, f"Early exit: {what}"))
  body = (f"`{command}`; {what}; {common.machine_line()}; {conditions}."
          "\n\n![accuracy against latency](benchmarks/charts/"
          "early_exit.png)\n\n" + result.report)
  rows = []
  if quiet and args.run_dir:
    rows = figures(result.rows, result.table, result.auto, result.layers,
                   common.machine_line(), command, conditions,
                   args.task or "a fine-tuned run", result.curve)
  common.update_benchmarks_md("Early exit (PABEE)", body, figures=rows,
                              stage="Serving")


if __name__ == "__main__":
  main()
