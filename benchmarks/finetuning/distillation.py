"""Distilled students against the teacher, static cuts and early exit.

  python -m benchmarks.finetuning.distillation --write

The task: stdlib topics (data_pipeline/corpora/stdlib_topics.py: a
docstring -> one of 8 topics of the standard library, split by source
file). The model: an ALBERT pretrained here by our tools on the standard
library's docstrings (E=64, H=128, I=512, 4 heads, L=8 applications of one
shared layer, seq 64; cached under build/benchmarks/distillation/), and a
narrower one pretrained on the same records (H=64, I=256, L=4). With
k = L/2 and the small student's depth L/4, 3 seeds each (seeds of
fine-tuning / distillation; the pretrained models are one each). A run
that starts from a pretrained checkpoint has --teacher_steps; one that
starts from the fine-tuned teacher has --train_steps more:

  teacher          run_classifier from the pretrained checkpoint, L
  static cut k     the teacher's weights and head after k applications
                   (tools.distill's student before training)
  PABEE cut k      run_classifier --early_exit's model, application k's head
  early exit       that model at the patience whose mean depth is nearest k
  alone k          run_classifier with num_hidden_layers=k (same weights)
  cut k + gold     the static cut fine-tuned further on the gold labels
                   alone (tools.distill --alpha=0, no intermediate loss):
                   the distilled student's start and steps without the
                   teacher's targets
  distilled k      tools.distill --student_layers=k, soft targets (T=2,
                   alpha=0.5) + one intermediate loss: both are tried on the
                   first seed of k=L/2, the better is kept for every student
  and the same for the small students (depths L/4 and L/8; no static cut
  with PABEE heads there);
  narrow alone     run_classifier from the narrower pretrained model
  narrow distilled tools.distill --student_config --student_init_checkpoint
                   from the narrower pretrained model (the 4x student).
  --unlabeled adds one run of distilled k with --unlabeled_file
  (docstrings of modules no topic takes).

Figures: dev accuracy and macro F1 (mean ± max-min over seeds); FLOPs per
example (distillation_runs.flops_per_example); of the first seed's models:
batch-1 ms (median over --batch1_examples dev examples, token ids at fixed
seq length) of the SavedModel's token_ids signature and of its LiteRT
dynamic-int8 file, batch-32 examples/s of the SavedModel, and the LiteRT
file's dev accuracy. Why soft targets may add little: each teacher's
accuracy and mean top probability on its own training records at the
distillation temperature (T=2), softmax of its logits / T
(distillation_report.soft_target_confidence). A static cut or a student
fine-tuned alone runs the graph of the distilled student of its shape (the
same config): it is timed as that one. The machine's load is measured
over the timings only (the training runs before them give no speed
figure). --write writes BENCHMARKS.md's section, the chart,
docs/distillation-benchmark.md and the first table's row (order 65).
"""

import argparse
import os
import sys
import tempfile
from typing import Dict

import numpy as np
import tensorflow as tf

from albert_tf.training.distillation.settings import INTERMEDIATE_LOSSES
from benchmarks import charts
from benchmarks import common
from benchmarks.finetuning import distillation_report as report
from benchmarks.finetuning import distillation_runs as runs
from benchmarks.finetuning import distillation_timing as timing

MODEL = dict(vocab_size=5000, embedding_size=64, hidden_size=128,
             num_hidden_layers=8, num_attention_heads=4,
             intermediate_size=512)
# The narrower student: half the width, half the applications, the same
# heads (so MiniLM's relations compare head by head) and vocabulary;
# pretrained here on the teacher's records. 7.3x fewer FLOPs at seq 64.
NARROW = dict(MODEL, hidden_size=64, intermediate_size=256,
              num_hidden_layers=4)
# `python -m benchmarks.summary --run`'s short mode: one seed, fewer
# pretraining and fine-tuning steps, no loss comparison (about 8 minutes
# on 2 quiet cores).
SHORT_ARGS = ["--seeds=1", "--pretrain_steps=200", "--train_steps=100",
              "--teacher_steps=100",
              "--max_per_topic=200", "--intermediate_losses=hidden_projection",
              "--batch1_examples=32", "--repeats=2", "--write"]
DOCS_PAGE = os.path.join(common.REPO_ROOT, "docs",
                         "distillation-benchmark.md")
# The part of DOCS_PAGE that --write replaces.
DOCS_START = "<!-- written by benchmarks.finetuning.distillation --write -->"
DOCS_END = "<!-- end of the figures -->"


def _dev_inputs(run_dir: str, dev_file: str, spm: str, seq_length: int):
  """A task file's (dev, train) token ids at seq_length and its label
  indices, in the run's label order (packed as fine-tuning packs them)."""
  import csv
  import io

  from albert_common import file_io
  from albert_tf.exports.text_runner import TextRunner
  from data_pipeline.tasks import label_list
  from data_pipeline.tokenization.sentencepiece_tokenizer import (
    SentencePieceTokenizer,
  )
  labels = list(label_list.read(run_dir).labels)
  rows = list(csv.DictReader(io.StringIO(file_io.read_text(dev_file))))
  packer = TextRunner.__new__(TextRunner)  # its packing, no model
  packer.tokenizer = SentencePieceTokenizer(spm)
  packer.seq_length, packer.labels = seq_length, labels
  return (packer.classify_inputs([row["text"] for row in rows]),
          np.array([labels.index(row["label"]) for row in rows]))


def _metrics(logits: np.ndarray, labels: np.ndarray) -> Dict[str, float]:
  from sklearn.metrics import f1_score
  predicted = logits.argmax(-1)
  return dict(accuracy=float(np.mean(predicted == labels)),
              macro_f1=float(f1_score(labels, predicted, average="macro")))


def _logits(model, dev, key="logits") -> np.ndarray:
  n = len(dev["input_word_ids"])
  return np.concatenate([model({k: v[i:i + 64] for k, v in dev.items()},
                               training=False)[key].numpy()
                         for i in range(0, n, 64)])


def _static_cut(teacher_dir: str, depth: int, dev, labels):
  """The teacher's weights and head after `depth` applications."""
  from albert_tf.config import AlbertConfig
  from albert_tf.models.albert_classifier import AlbertClassifier
  from albert_tf.networks.albert_encoder import AlbertEncoder
  from albert_tf.training.distillation import teacher as teacher_lib
  teacher = teacher_lib.read_teacher(teacher_dir)
  config = AlbertConfig.from_dict(dict(teacher.config.to_dict(),
                                       num_hidden_layers=depth))
  model = AlbertClassifier(AlbertEncoder(config, name="encoder"),
                           teacher.label_list.num_labels)
  teacher_lib.restore_weights(model, teacher, is_teacher=False)
  return _metrics(_logits(model, dev), labels)


def _pabee(run_dir: str, dev_file: str, spm: str, seq_length: int,
           half: int, dev, labels):
  """The early-exit run's model, its cut at `half` (that application's
  head) and its early exit at the patience of mean depth nearest `half`:
  (model, patience, {name: metrics with "depth"})."""
  from albert_tf.training import early_exit
  from benchmarks.serving import early_exit_models
  model, _, _ = early_exit_models.finetuned_model_and_data(
      run_dir, dev_file, spm, seq_length)
  all_logits = _logits(model, dev, "all_logits")
  table = early_exit.exit_table(all_logits, lambda x: _metrics(x, labels),
                                "accuracy")
  patience = report.patience_for_depth(table, half)
  logits, layers = early_exit.exit_at(all_logits, patience,
                                      early_exit.DEFAULT_THRESHOLD, False)
  return model, patience, {
      "cut": dict(_metrics(all_logits[:, half - 1], labels), depth=half),
      "exit": dict(_metrics(logits, labels), depth=float(layers.mean()),
                   patience=patience)}


def _teacher_confidence(teacher_dir: str, train, labels) -> Dict:
  """report.soft_target_confidence of the teacher in `teacher_dir` on the
  training records (token ids `train`, label indices `labels`) at the
  distilled runs' temperature."""
  from albert_tf.training.distillation import teacher as teacher_lib
  model = teacher_lib.build_teacher_model(
      teacher_lib.read_teacher(teacher_dir))
  return report.soft_target_confidence(_logits(model, train), labels,
                                       runs.TEMPERATURE)


def run(args) -> Dict:
  """Every contender's figures (see the module docstring)."""
  try:
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
  except RuntimeError:
    pass
  layers = MODEL["num_hidden_layers"]
  half, small, tiny = layers // 2, layers // 4, max(1, layers // 8)
  narrow_layers = NARROW["num_hidden_layers"]
  source = runs.source_model(MODEL, args.pretrain_steps, args.seq_length)
  narrow = runs.source_model(NARROW, args.pretrain_steps, args.seq_length,
                             data_from=source)
  task = runs.task_files(args.max_per_topic)
  seeds = list(range(args.seeds))
  folder = os.path.join(runs.CACHE, "runs-" + runs.key(dict(
      source=source["folder"], steps=args.train_steps, lr=args.learning_rate,
      batch=args.batch_size, topics=args.max_per_topic,
      teacher_steps=args.teacher_steps, narrow=narrow["folder"])))

  def flags(seed, steps=args.train_steps):
    return runs.common_flags(task, source["spm"], args.seq_length,
                             steps, args.batch_size,
                             args.learning_rate, seed)

  def from_pretrained(seed):
    """A run from a pretrained checkpoint: the teacher's budget."""
    return flags(seed, args.teacher_steps)

  def at(name):
    return os.path.join(folder, name)
  width = f"H={NARROW['hidden_size']}"
  names = dict(teacher=f"teacher (L={layers})",
               cut=f"static cut k={half}", pabee=f"PABEE cut k={half}",
               exit=f"early exit (depth ~{half})",
               alone=f"alone k={half}", gold=f"cut k={half} + gold only",
               distilled=f"distilled k={half}",
               cut_small=f"static cut k={small}",
               alone_small=f"alone k={small}",
               gold_small=f"cut k={small} + gold only",
               distilled_small=f"distilled k={small}",
               cut_tiny=f"static cut k={tiny}",
               alone_tiny=f"alone k={tiny}",
               gold_tiny=f"cut k={tiny} + gold only",
               distilled_tiny=f"distilled k={tiny}",
               narrow_alone=f"narrow {width} k={narrow_layers} alone",
               narrow=f"narrow {width} k={narrow_layers} distilled")
  contenders = {name: dict(accuracy=[], macro_f1=[], depth=[])
                for name in names.values()}

  def add(key, metrics, depth):
    figures = contenders[names[key]]
    figures["accuracy"].append(metrics["accuracy"])
    figures["macro_f1"].append(metrics["macro_f1"])
    figures["depth"].append(depth)

  # The intermediate loss: both on the first seed of k=L/2, keep the better.
  runs.finetune(at("teacher-s0"), source, from_pretrained(0))
  tried = {loss: runs.distill(at(f"distilled-k{half}-{loss}-s0"),
                              at("teacher-s0"), flags(0), half, loss)
           for loss in args.intermediate_losses.split(",")}
  loss = max(tried, key=lambda name: tried[name]["accuracy"])
  dev, labels = _dev_inputs(at("teacher-s0"), task["dev"], source["spm"],
                            args.seq_length)
  train, train_labels = _dev_inputs(at("teacher-s0"), task["train"],
                                    source["spm"], args.seq_length)
  pabee0 = patience0 = None
  confidence = []
  for seed in seeds:
    teacher = at(f"teacher-s{seed}")
    add("teacher", runs.finetune(teacher, source, from_pretrained(seed),
                                 export=seed == 0), layers)
    confidence.append(_teacher_confidence(teacher, train, train_labels))
    add("cut", _static_cut(teacher, half, dev, labels), half)
    add("cut_small", _static_cut(teacher, small, dev, labels), small)
    add("cut_tiny", _static_cut(teacher, tiny, dev, labels), tiny)
    pabee_dir = at(f"pabee-s{seed}")
    runs.finetune(pabee_dir, source, from_pretrained(seed), early_exit=True,
                  export=False)
    model, patience, pabee = _pabee(pabee_dir, task["dev"], source["spm"],
                                    args.seq_length, half, dev, labels)
    add("pabee", pabee["cut"], half)
    add("exit", pabee["exit"], pabee["exit"]["depth"])
    if seed == 0:
      pabee0, patience0 = model, patience
    add("alone", runs.finetune(at(f"alone-k{half}-s{seed}"), source,
                               from_pretrained(seed), layers=half,
                               export=False), half)
    add("alone_small", runs.finetune(at(f"alone-k{small}-s{seed}"), source,
                                     from_pretrained(seed), layers=small,
                                     export=False), small)
    add("alone_tiny", runs.finetune(at(f"alone-k{tiny}-s{seed}"), source,
                                    from_pretrained(seed), layers=tiny,
                                    export=False), tiny)
    for key, depth in (("gold", half), ("gold_small", small),
                       ("gold_tiny", tiny)):
      add(key, runs.distill(at(f"gold-k{depth}-s{seed}"), teacher,
                            flags(seed), depth, "none", export=False,
                            alpha=0.0), depth)
    add("distilled", runs.distill(at(f"distilled-k{half}-{loss}-s{seed}"),
                                  teacher, flags(seed), half, loss), half)
    add("distilled_small", runs.distill(
        at(f"distilled-k{small}-{loss}-s{seed}"), teacher, flags(seed),
        small, loss), small)
    add("distilled_tiny", runs.distill(
        at(f"distilled-k{tiny}-{loss}-s{seed}"), teacher, flags(seed),
        tiny, loss), tiny)
    add("narrow_alone", runs.finetune(at(f"narrow-alone-s{seed}"), narrow,
                                      from_pretrained(seed), export=False),
        narrow_layers)
    add("narrow", runs.distill(
        at(f"narrow-{loss}-s{seed}"), teacher, from_pretrained(seed), 0,
        loss, student=(narrow["config"], narrow["checkpoint"])),
        narrow_layers)
  if args.unlabeled:
    name = f"distilled k={half} + unlabeled"
    metrics = runs.distill(at(f"distilled-k{half}-{loss}-unlabeled-s0"),
                           at("teacher-s0"), flags(0), half, loss,
                           unlabeled=task["unlabeled"], export=False)
    contenders[name] = dict(accuracy=[metrics["accuracy"]],
                            macro_f1=[metrics["macro_f1"]], depth=[half])
  flops = {}
  classes = int(labels.max()) + 1
  for name, figures in contenders.items():
    base = NARROW if name.startswith("narrow") else MODEL
    config = dict(base, num_hidden_layers=float(np.mean(figures["depth"])))
    flops[name] = runs.flops_per_example(config, args.seq_length, classes)
  timings = {}
  # Latency wants a quiet machine; the training runs before do not.
  window = common.CpuWindow()
  window.start()
  with tempfile.TemporaryDirectory() as work:
    exports = {names["teacher"]: at("teacher-s0-export"),
               names["distilled"]: at(f"distilled-k{half}-{loss}-s0-export"),
               names["distilled_small"]:
               at(f"distilled-k{small}-{loss}-s0-export"),
               names["distilled_tiny"]:
               at(f"distilled-k{tiny}-{loss}-s0-export"),
               names["narrow"]: at(f"narrow-{loss}-s0-export"),
               names["exit"]: timing.save_early_exit(
                   pabee0, patience0, os.path.join(work, "early_exit"))}
    for name, path in exports.items():
      timings[name] = timing.time_model(
          path, dev, work, args.seq_length, args.batch1_examples,
          args.repeats, args.threads, labels=labels)
      print(name, timings[name], flush=True)
  others = window.others()
  for key, same in (("cut", "distilled"), ("pabee", "distilled"),
                    ("alone", "distilled"), ("gold", "distilled"),
                    ("cut_small", "distilled_small"),
                    ("alone_small", "distilled_small"),
                    ("gold_small", "distilled_small"),
                    ("cut_tiny", "distilled_tiny"),
                    ("alone_tiny", "distilled_tiny"),
                    ("gold_tiny", "distilled_tiny"),
                    ("narrow_alone", "narrow")):
    timings[names[key]] = {k: v for k, v in timings[names[same]].items()
                           if k != "litert_accuracy"}
    timings[names[key]]["as"] = names[same]
  fast = [names["distilled_tiny"], names["narrow"]]
  checks = report.goals(
      contenders, names["teacher"], names["distilled"], fast,
      {names["distilled"]: [names["alone"], names["cut"], names["gold"]],
       names["distilled_small"]: [names["alone_small"], names["cut_small"],
                                  names["gold_small"]],
       names["distilled_tiny"]: [names["alone_tiny"], names["cut_tiny"],
                                 names["gold_tiny"]],
       names["narrow"]: [names["narrow_alone"]]},
      flops,
      dict(teacher_savedmodel_ms=timings[names["teacher"]]["savedmodel_ms"],
           litert_ms={name: timings[name]["litert_ms"] for name in fast}))
  return dict(contenders=contenders, flops=flops, timings=timings,
              checks=checks, names=names, loss=loss, tried=tried,
              patience=patience0, layers=layers, source=source,
              others=others, confidence=confidence)


def _report(args, result) -> str:
  tried = ", ".join(f"{k} {v['accuracy']:.4f}"
                    for k, v in result["tried"].items())
  return (report.contenders_table(result["contenders"], result["flops"],
                                  result["timings"])
          + f"\n\nIntermediate loss kept: {result['loss']} (first seed of "
          f"the k={result['layers'] // 2} student: {tried}). Early exit's "
          f"patience on the first seed: {result['patience']}.\n\n"
          + report.confidence_line(result.get("confidence", ())) + "\n\n"
          "Goals (issue: distillation, section 3):\n\n"
          + report.goals_table(result["checks"]))


def build_parser() -> argparse.ArgumentParser:
  """The command line (SHORT_ARGS parse with it)."""
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--seeds", type=int, default=3)
  parser.add_argument("--pretrain_steps", type=int, default=1500)
  parser.add_argument("--seq_length", type=int, default=64)
  parser.add_argument("--train_steps", type=int, default=300,
                      help="steps of a run that starts from the teacher "
                      "(distilled k-application students, cut + gold)")
  parser.add_argument("--teacher_steps", type=int, default=900,
                      help="steps of a run that starts from a pretrained "
                      "checkpoint (teacher, PABEE, students alone, the "
                      "narrow student distilled)")
  parser.add_argument("--batch_size", type=int, default=32)
  parser.add_argument("--learning_rate", type=float, default=3e-4)
  parser.add_argument("--max_per_topic", type=int, default=400)
  parser.add_argument("--intermediate_losses",
                      default="attention_relation,hidden_projection",
                      help="comma-separated: tried on the first seed of "
                      "k=L/2, the better is kept")
  parser.add_argument("--unlabeled", action="store_true",
                      help="also distil k=L/2 with --unlabeled_file (1 seed)")
  parser.add_argument("--batch1_examples", type=int, default=64)
  parser.add_argument("--repeats", type=int, default=3)
  parser.add_argument("--threads", type=int, default=2)
  parser.add_argument("--quiet_cores", type=float, default=0.1)
  parser.add_argument("--write", action="store_true")
  return parser


def main():
  parser = build_parser()
  args = parser.parse_args()
  losses = args.intermediate_losses.split(",")
  if not set(losses) <= set(INTERMEDIATE_LOSSES):
    parser.exit(1, f"error: --intermediate_losses={args.intermediate_losses}"
                f": give some of {', '.join(INTERMEDIATE_LOSSES)}\n")
  if min(args.seeds, args.train_steps, args.teacher_steps,
         args.pretrain_steps) < 1:
    parser.exit(1, "error: --seeds, --train_steps, --teacher_steps and "
                "--pretrain_steps must be at least 1\n")
  result = run(args)
  others = result["others"]
  conditions = (f"quiet while timed: other processes {others:.2f} cores "
                "on average" if others < args.quiet_cores else
                f"loaded while timed: other processes {others:.2f} cores")
  text = _report(args, result)
  print(text)
  print(conditions)
  if args.write:
    write_outputs(args, result, text, conditions)


def write_outputs(args, result, text, conditions) -> None:
  """BENCHMARKS.md's section with the first table's row, the chart and
  the docs page's figures."""
  command = common.command_line("benchmarks.finetuning.distillation",
                                sys.argv[1:])
  layers = result["layers"]
  title = (f"stdlib topics, ALBERT H=128 L={layers} pretrained here, seq "
           f"{args.seq_length}")
  chart = report.chart_spec(result["contenders"], result["timings"],
                            f"Distillation: {title}")
  charts.from_spec(chart, charts.CHARTS_DIR)
  body = (f"`{command}`; {title}; {args.seeds} seeds of fine-tuning; "
          f"{common.machine_line()}; {conditions}.\n\n"
          "![accuracy against latency](benchmarks/charts/distillation.png)"
          "\n\n" + text)
  row = report.figures_row(result["contenders"], result["timings"],
                           result["names"]["teacher"],
                           result["names"]["distilled"], result["flops"],
                           common.machine_label(), command, conditions,
                           title, chart)
  common.update_benchmarks_md("Distillation", body, figures=[row],
                              stage="Fine-tuning")
  figures = (f"`{command}`; {title}; {common.machine_label()}, "
             f"{common.today()}; {conditions}.\n\n"
             "![accuracy against latency](benchmarks/charts/"
             "distillation.png)\n\n" + text)
  with open(DOCS_PAGE) as f:
    page = f.read()
  start = page.index(DOCS_START) + len(DOCS_START)
  end = page.index(DOCS_END, start)
  with open(DOCS_PAGE, "w") as f:
    f.write(page[:start] + "\n" + figures + "\n" + page[end:])


if __name__ == "__main__":
  main()
