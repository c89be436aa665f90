"""Early exit (PABEE) against full depth and a static-depth cut, per runtime.

  python -m benchmarks.serving.early_exit --size=base --seq_length=64 \
      --train_steps=600 --threads=2 --write

One run: an AlbertEarlyExitClassifier (random initialisation, every layer
shared) is fine-tuned with PABEE's loss (application j weighted j) on a
crafted task of mixed difficulty: half the sentences hold one of three
keywords (the label), half hold two different ones and the label is the
one that comes last. auto's patience (the fastest within --exit_tolerance
points of full depth) is chosen on 192 crafted dev sentences; every
figure is then measured on 192 crafted test sentences nothing selects on:

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
    example, 96 test examples spread over the file, one at a time) and
    batch 32 (examples/s), with its own accuracy and mean exit layer;
  - on the SavedModel at batch 32: the loop that compacts exited rows out
    of the batch (tf.gather) against the one that keeps and masks them.

With --run_dir: a user's run, its --dev_file (auto's choice) and
--test_file (every figure; without it, dev's, said so). The report says
whether the machine was quiet. --write also writes the first table's row
(early_exit_report.figures: auto's patience against full depth,
TensorFlow in process); --runtimes narrows the per-runtime table.
"""

import argparse
import collections
import os
import sys
import tempfile
import time

import numpy as np
import tensorflow as tf

from benchmarks import accuracy as chance
from benchmarks import charts
from benchmarks import common
from benchmarks.serving import early_exit_models as models
from benchmarks.serving import early_exit_report

BATCH = 32
BATCH1_EXAMPLES = 96  # default; 0: the whole reported split
RUNTIMES = ("SavedModel", "LiteRT int8", "ONNX Runtime")
RUNTIME_FLAGS = {"savedmodel": "SavedModel", "litert": "LiteRT int8",
                 "onnx": "ONNX Runtime"}
# `python -m benchmarks.summary --run`'s short mode: the crafted task (no
# user run needed; its sentences fit in 32 pieces) on the demo's 12-layer
# config, auto's patience and SavedModel only in the per-runtime table,
# 48 examples at batch 1; about 5 minutes on 2 cores per 400 training
# steps of 16 x 32 (about 12 TFLOPs) plus the sweep's 23 batch-1 timings.
# The model trains 400 steps at a time until it is above chance on a check
# set, up to 1,600: a model at chance writes no row (400 steps alone left
# this config at chance, final loss ln 3).
SHORT_ARGS = ["--size=configs/demo_12_layers.json", "--seq_length=32",
              "--train_steps=400", "--max_train_steps=1600", "--threads=2",
              "--repeats=2",
              "--batch1_examples=48", "--patiences=auto",
              "--runtimes=savedmodel", "--write"]


# run()'s answer: the markdown report, the per-runtime rows (dicts), the
# SavedModel's compaction / masking examples/s, the accuracy-latency curve
# (see _curve), the reported split's table per patience, auto's patience,
# the depth L.
# labels: the reported split's labels (the chance check before a row is
# written); split: its name, "test" (or "dev" without a test file).
Result = collections.namedtuple(
    "Result", "report rows compaction curve table auto layers labels split",
    defaults=(None,))


def _picks(n: int, limit: int) -> np.ndarray:
  """Indices of `limit` examples spread over n (all of them if limit is 0
  or >= n): the batch-1 timings' examples."""
  return np.linspace(0, n - 1, n if limit <= 0 else min(n, limit)
                     ).astype(int)


class _TokenIds(tf.Module):
  """A token-ids SavedModel (the signatures the converters read, as an
  early-exit export has them: export_tflite converts the unbranched loop,
  ONNX here the token-ids one)."""

  def __init__(self, model, patience=None, compact=True):
    super().__init__()
    self.model = model
    self.patience = patience
    self.compact = compact

  def outputs(self, inputs, branches=True):
    if self.patience is None:
      logits = self.model(inputs, training=False)["logits"]
      return dict(logits=logits, probabilities=tf.nn.softmax(logits))
    out = self.model.early_exit(inputs, self.patience, compact=self.compact,
                                branches=branches)
    return dict(logits=out["logits"],
                probabilities=tf.nn.softmax(out["logits"]),
                exit_layer=out["exit_layer"])

  def unbranched_outputs(self, inputs):
    return self.outputs(inputs, branches=False)


def _save(module, path: str) -> str:
  from albert_tf.exports import token_ids
  signatures = {
      token_ids.TOKEN_IDS: token_ids.token_ids_signature(module.outputs)}
  if module.patience is not None:
    signatures[token_ids.TOKEN_IDS_UNBRANCHED] = (
        token_ids.token_ids_signature(module.unbranched_outputs))
  tf.saved_model.save(module, path, signatures=signatures)
  return path


def _runners(saved_model: str, work: str, seq_length: int, threads: int,
             runtimes=RUNTIMES):
  """name -> (batch-1 callable, batch-32 callable) of the SavedModel, the
  LiteRT dynamic-int8 files and the ONNX file of one variant (those of
  `runtimes` only)."""
  from albert_tf.exports import load_saved_model
  from albert_tf.exports.litert import converter as litert
  from albert_tf.exports.litert.interpreter import LiteRTModel
  from albert_tf.exports.onnx import converter as onnx_converter
  from albert_tf.exports.onnx.runtime import OnnxModel
  function = load_saved_model(saved_model).signatures["token_ids"]

  def saved(inputs):
    return {k: v.numpy() for k, v in function(**{
        k: tf.constant(v) for k, v in inputs.items()}).items()}
  runners = {"SavedModel": (saved, saved)}
  if "LiteRT int8" in runtimes:
    files = {}
    for batch in (1, BATCH):
      path = os.path.join(work, f"int8_{batch}.tflite")
      litert.export_tflite(saved_model, path, seq_length=seq_length,
                           batch_size=batch, quantize="dynamic_int8")
      files[batch] = LiteRTModel(open(path, "rb").read(),
                                 num_threads=threads)
    runners["LiteRT int8"] = (files[1], files[BATCH])
  if "ONNX Runtime" in runtimes:
    onnx_path = os.path.join(work, "model.onnx")
    onnx_converter.export_onnx(saved_model, onnx_path)
    onnx_model = OnnxModel(open(onnx_path, "rb").read(), num_threads=threads)
    runners["ONNX Runtime"] = (onnx_model, onnx_model)
  return {k: v for k, v in runners.items() if k in runtimes}


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


def _exit_table(model, dev, dev_labels):
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
        tolerance: float = 0.5, batch1_examples: int = BATCH1_EXAMPLES,
        runtimes=RUNTIMES, max_train_steps: int = 0, test_file=None):
  """(markdown report, rows as dicts): see the module docstring. With
  run_dir (and dev_file, spm_model_file, test_file): that fine-tuned
  run's model, dev and test sets instead of the crafted task."""
  try:
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
  except RuntimeError:  # TensorFlow already started (tests): as it is.
    pass
  from albert_tf.training import early_exit
  with tempfile.TemporaryDirectory() as work:
    if run_dir:
      model, dev, dev_labels, test = models.finetuned_model_and_data(
          run_dir, dev_file, spm_model_file, seq_length, test_file)
      loss = None
    else:
      model, dev, dev_labels, test, loss = models.crafted_model_and_data(
          size, seq_length, train_steps, learning_rate, work,
          max_train_steps)
    layers = model.num_layers
    auto = early_exit.choose_patience(
        _exit_table(model, dev, dev_labels)[0], "accuracy", tolerance)
    # Every figure from here on is on the test split (dev chose auto).
    split = "dev" if test is None else "test"
    shown, labels = (dev, dev_labels) if test is None else test
    table, cuts = _exit_table(model, shown, labels)
    if patiences is None:
      patiences = [1, 2, 3, "auto"]
    patiences = sorted({auto if p == "auto" else p for p in patiences})
    patiences = [p for p in patiences if 0 < p < layers]
    depth_rows = [early_exit_report.table_row(table, cuts, p, auto)
                  for p in range(layers)]
    variants = {"full depth": (models.cut_classifier(model, layers), None,
                               None)}
    for p in patiences:
      mean = table[p]["mean_exit_layer"]
      cut = max(1, int(round(mean)))
      variants[f"patience {p}"] = (model, p, None)
      if cut < layers:  # a cut at L is the full depth
        variants.setdefault(f"static cut {cut}",
                            (models.cut_classifier(model, cut), None, cut))
    rows = []
    for name, (variant, patience, _) in variants.items():
      folder = os.path.join(work, name.replace(" ", "_"))
      saved = _save(_TokenIds(variant, patience), folder + "_saved")
      os.makedirs(folder)
      for runtime, (one, many) in _runners(saved, folder, seq_length,
                                           threads, runtimes).items():
        accuracy, mean, ms, per_s = _measure(one, many, shown, labels,
                                             repeats, batch1_examples)
        rows.append(dict(variant=name, runtime=runtime, accuracy=accuracy,
                         mean_exit_layer=(mean if mean is not None else
                                          float(variant.encoder.config
                                                .num_hidden_layers)),
                         ms_batch_1=ms, examples_per_s_32=per_s))
        print(rows[-1], flush=True)
    compaction = _compaction_rows(model, (patiences or [1])[0], shown,
                                  labels, work, repeats)
    curve = _curve(model, shown, labels, table, cuts, repeats,
                   batch1_examples)
  report = early_exit_report.report(depth_rows, rows, compaction, layers,
                                    loss, auto, curve, batch1_examples, split)
  return Result(report, rows, compaction, curve, table, auto, layers,
                labels, split)


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
    cut = models.cut_classifier(model, depth)
    function = tf.function(lambda x, m=cut: m(x, training=False),
                           input_signature=[spec])
    ms = _batch1_ms(lambda **x: function(x), singles, repeats)
    curve["static cut"].append((ms, cuts[depth - 1], depth))
  return curve


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


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--size", default="base")
  parser.add_argument("--seq_length", type=int, default=64)
  parser.add_argument("--train_steps", type=int, default=600)
  parser.add_argument("--max_train_steps", type=int, default=0,
                      help="the crafted model trains --train_steps more at "
                      "a time, up to this many, until it is above chance "
                      "on a check set (0: --train_steps only)")
  parser.add_argument("--learning_rate", type=float, default=3e-4)
  parser.add_argument("--threads", type=int, default=2)
  parser.add_argument("--repeats", type=int, default=3)
  parser.add_argument("--patiences", default="",
                      help="comma-separated patiences to time, \"auto\" "
                      "for auto's (default: "
                      "1, 2, 3 and auto's)")
  parser.add_argument("--run_dir", default="",
                      help="a run_classifier --early_exit --do_eval "
                      "output_dir: its best checkpoint instead of a model "
                      "trained here (with --dev_file, --spm_model_file)")
  parser.add_argument("--dev_file", default="",
                      help="--run_dir's dev CSV (columns text, label): "
                      "chooses auto's patience")
  parser.add_argument("--test_file", default="",
                      help="--run_dir's test CSV: every figure (without "
                      "it, dev's)")
  parser.add_argument("--spm_model_file", default="")
  parser.add_argument("--task", default="",
                      help="--run_dir's task and model, for the report")
  parser.add_argument("--exit_tolerance", type=float, default=0.5)
  parser.add_argument("--batch1_examples", type=int,
                      default=BATCH1_EXAMPLES,
                      help="examples of the reported split timed at batch 1 "
                      "(0: all)")
  parser.add_argument("--quiet_cores", type=float, default=0.1,
                      help="the run counts as quiet when other processes "
                      "used fewer cores than this on average")
  parser.add_argument("--runtimes", default=",".join(RUNTIME_FLAGS),
                      help="the per-runtime table's runtimes, from "
                      f"{','.join(RUNTIME_FLAGS)}")
  parser.add_argument("--write", action="store_true")
  args = common.parse_args(parser)
  runtimes = [RUNTIME_FLAGS.get(r.strip()) for r in args.runtimes.split(",")]
  if not runtimes or None in runtimes:
    parser.exit(1, f"error: --runtimes={args.runtimes}: give some of "
                f"{','.join(RUNTIME_FLAGS)}\n")
  if args.run_dir and not (args.dev_file and args.spm_model_file):
    parser.error("--run_dir needs --dev_file and --spm_model_file")
  if args.test_file and not args.run_dir:
    parser.error("--test_file goes with --run_dir (the crafted task makes "
                 "its own test sentences)")
  try:
    patiences = ([p if p == "auto" else int(p)
                  for p in args.patiences.split(",")]
                 if args.patiences else None)
  except ValueError:
    parser.exit(1, f"error: --patiences={args.patiences}: give integers or "
                "auto\n")
  window = common.CpuWindow()
  window.start()
  result = run(
      args.size, args.seq_length, args.train_steps, args.repeats,
      args.threads, args.learning_rate, patiences, args.run_dir or None,
      args.dev_file, args.spm_model_file, args.exit_tolerance,
      args.batch1_examples, runtimes, args.max_train_steps,
      args.test_file or None)
  others = window.others()
  quiet = others < args.quiet_cores
  conditions = (f"quiet: other processes {others:.2f} cores on average"
                if quiet else f"loaded: other processes {others:.2f} cores")
  print(result.report)
  print(conditions)
  if args.write:
    try:
      _write(args, result, conditions)
    except chance.ChanceError as e:
      parser.exit(1, f"error: {e}\n")


def _write(args, result, conditions) -> None:
  """BENCHMARKS.md's section, the chart and the first table's row (its
  conditions say whether the run was quiet). A model within noise of
  chance on the reported split (full depth or auto's patience) writes
  nothing (benchmarks.accuracy.ChanceError)."""
  if result.labels is not None:
    for name, patience in (("full depth", 0), (f"patience {result.auto}",
                                               result.auto)):
      chance.check_above_chance(name, result.table[patience]["accuracy"],
                                  result.labels, result.split)
  command = common.command_line("benchmarks.serving.early_exit",
                                sys.argv[1:])
  if args.run_dir:
    what = title = args.task or "a fine-tuned run"
  else:
    what = (f"ALBERT-{common.size_label(args.size)} from random "
            "initialisation on a crafted task of mixed difficulty (not a "
            "pretrained model, not a real task)")
    title = (f"crafted task, {result.layers}-layer "
             f"ALBERT-{common.size_label(args.size)} trained here")
  charts.from_spec(early_exit_report.chart_spec(result.curve,
                                                f"Early exit: {what}",
                                                result.split))
  body = (f"`{command}`; {what}; {common.machine_line()}; {conditions}."
          "\n\n![accuracy against latency](benchmarks/charts/"
          "early_exit.png)\n\n" + result.report)
  rows = early_exit_report.figures(
      result.curve, result.table, result.auto, result.layers,
      common.machine_label(), command, conditions, title, args.seq_length)
  common.update_benchmarks_md("Early exit (PABEE)", body, figures=rows,
                              stage="Serving")


if __name__ == "__main__":
  main()
