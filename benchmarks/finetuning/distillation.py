"""Distilled students against the teacher, static cuts and early exit.

  python -m benchmarks.finetuning.distillation --write

The task: stdlib topics (data_pipeline/corpora/stdlib_topics.py: a
docstring -> one of 8 topics of the standard library), split by source
file into train, dev, a held-out test split and on-task unlabeled text
(topic_splits). The model: an ALBERT pretrained here by our tools on the
standard library's docstrings (E=64, H=128, I=512, 4 heads, L=8
applications of one shared layer, seq 64; cached under
build/benchmarks/distillation/, keyed by the settings and the code's
revision), and a narrower one pretrained on the same records (H=64,
I=256, L=4). With k = L/2 and the small student's depth L/4, 3 seeds each
(seeds of fine-tuning / distillation; the pretrained models are one
each). Budgets: a run from a pretrained checkpoint has --teacher_steps
(T); one that starts from the fine-tuned teacher has --train_steps (S)
more; a student trained alone gets T + S, the steps behind a distilled
one:

  teacher          run_classifier from the pretrained checkpoint, L, T
  teacher + S      the teacher fine-tuned S more steps on the gold labels
                   (tools.distill --student_layers=L --alpha=0): the
                   teacher at the distilled students' budget, the
                   reference of "keeps x% of the teacher"
  static cut k     the teacher's weights and head after k applications
  PABEE cut k      run_classifier --early_exit's model, application k's head
  early exit       that model at the patience whose mean depth on dev is
                   nearest k
  alone k          run_classifier with num_hidden_layers=k, T + S steps
  cut k + gold     the static cut fine-tuned further on the gold labels
                   alone (tools.distill --alpha=0, no intermediate loss)
  distilled k      tools.distill --student_layers=k, soft targets (T=2,
                   alpha=0.5) + one intermediate loss, chosen on dev by a
                   k=L/2 student of a seed that is not reported
  and the same for the small students (depths L/4 and L/8);
  narrow alone     run_classifier from the narrower model, 2 T steps
  narrow distilled tools.distill --student_config --student_init_checkpoint
                   from the narrower pretrained model, T steps.
  --unlabeled adds, per seed, distilled k with --unlabeled_file of on-task
  text (held-out docstrings of the topics' own modules, no labels, at least
  as many rows as train) and its control: the same with as many rows of
  docstrings of modules no topic takes.

Selection: every run keeps its 3 checkpoints (distillation_eval.LOOKS),
each scored on dev and test; the figure is test accuracy at the
checkpoint dev chose (a static cut: among the teacher's checkpoints;
early exit: among its run's), beside the last checkpoint's. Every
contender has the same number of looks at dev (checked). A contender
whose test accuracy is within 2 binomial standard deviations of the
majority-class rate writes no row; the teacher or the distilled k=L/2
student at chance writes nothing.

Figures: test accuracy and macro F1 (mean ± max-min over seeds); goals
"A beats B" on paired seeds (the mean of per-seed differences against
their spread, the signs per seed); FLOPs per example
(distillation_runs.flops_per_example); of the first seed's models:
batch-1 ms (median over --batch1_examples test examples, token ids at
fixed seq length) of the SavedModel's token_ids signature and of its
LiteRT dynamic-int8 file, batch-32 examples/s of the SavedModel, and the
LiteRT file's test accuracy. Why soft targets may add little: each
teacher's accuracy and mean top probability on its own training records
at the distillation temperature (T=2), softmax of its logits / T
(distillation_report.soft_target_confidence). A static cut or a student
fine-tuned alone runs the graph of the distilled student of its shape
(the same config): it is timed as that one. The machine's load is
measured over the timings only (the training runs before them give no
speed figure). --write writes BENCHMARKS.md's section, the chart,
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
from benchmarks import accuracy
from benchmarks import charts
from benchmarks import common
from benchmarks import roofline
from benchmarks.finetuning import distillation_eval as evaluate
from benchmarks.finetuning import distillation_report as report
from benchmarks.finetuning import distillation_runs as runs
from benchmarks.finetuning import distillation_timing as timing

MODEL = dict(vocab_size=5000, embedding_size=64, hidden_size=128,
             num_hidden_layers=8, num_attention_heads=4,
             intermediate_size=512)
# The narrower student: half the width, half the applications, the same
# heads (so MiniLM's relations compare head by head) and vocabulary;
# pretrained here on the teacher's records (its FLOPs ratio is computed
# by distillation_runs.flops_per_example, never assumed).
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


# Seed of the runs that choose the intermediate loss (on dev): never one
# of the reported seeds, so no reported figure is a selection's winner.
SELECTION_SEED = 1000


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
  source = runs.source_model(MODEL, args.pretrain_steps, args.seq_length,
                             cache=args.cache)
  narrow = runs.source_model(NARROW, args.pretrain_steps, args.seq_length,
                             data_from=source, cache=args.cache)
  task = runs.task_files(args.max_per_topic, cache=args.cache)
  seeds = list(range(args.seeds))
  folder = os.path.join(args.cache, "runs-" + runs.key(dict(
      source=source["folder"], steps=args.train_steps, lr=args.learning_rate,
      batch=args.batch_size, topics=args.max_per_topic,
      teacher_steps=args.teacher_steps, narrow=narrow["folder"])))
  # Equal budgets: a student trained alone gets the steps behind a
  # distilled one (the teacher's and the student's own).
  alone_steps = args.teacher_steps + args.train_steps

  def flags(seed, steps=args.train_steps):
    return runs.common_flags(task, source["spm"], args.seq_length,
                             steps, args.batch_size,
                             args.learning_rate, seed)

  def from_pretrained(seed, steps=args.teacher_steps):
    """A run from a pretrained checkpoint."""
    return flags(seed, steps)

  def at(name):
    return os.path.join(folder, name)
  names = report.contender_names(layers, args.train_steps, NARROW)
  contenders = {name: dict(accuracy=[], macro_f1=[], depth=[], last=[],
                           dev=[], looks=[]) for name in names.values()}
  splits = {}

  def add(key, looks):
    chosen = accuracy.select(looks, names[key])
    figures = contenders[names[key]]
    figures["accuracy"].append(chosen["test"]["accuracy"])
    figures["macro_f1"].append(chosen["test"]["macro_f1"])
    figures["depth"].append(chosen["test"].get("depth", depths[key]))
    figures["last"].append(chosen["last"]["accuracy"])
    figures["dev"].append(chosen["dev"])
    figures["looks"].append(chosen["looks"])
    return chosen

  def scored(run_dir, depth=None):
    return evaluate.classifier_looks(run_dir, splits, depth)

  depths = dict(teacher=layers, teacher_more=layers, cut=half, pabee=half,
                exit=half, alone=half, gold=half, distilled=half,
                cut_small=small, alone_small=small, gold_small=small,
                distilled_small=small, cut_tiny=tiny, alone_tiny=tiny,
                gold_tiny=tiny, distilled_tiny=tiny,
                narrow_alone=narrow_layers, narrow=narrow_layers,
                on_task=half, off_task=half)
  runs.finetune(at("teacher-s0"), source, from_pretrained(0), export=True)
  for name in ("dev", "test", "train"):
    splits[name] = evaluate.split_inputs(at("teacher-s0"), task[name],
                                         source["spm"], args.seq_length)
  train = splits.pop("train")  # the teachers' own records: confidence only
  confidence = []
  # The intermediate loss, chosen on dev on a seed that is not reported.
  tried = {}
  for loss_name in args.intermediate_losses.split(","):
    trial = at(f"distilled-k{half}-{loss_name}-s{SELECTION_SEED}")
    runs.distill(trial, at("teacher-s0"), flags(SELECTION_SEED), half,
                 loss_name, export=False)
    tried[loss_name] = accuracy.select(scored(trial))["dev"]
  loss = max(tried, key=lambda name: (tried[name], name))
  pabee0 = patience0 = None
  for seed in seeds:
    teacher = at(f"teacher-s{seed}")
    runs.finetune(teacher, source, from_pretrained(seed), export=seed == 0)
    add("teacher", scored(teacher))
    confidence.append(evaluate.teacher_confidence(teacher, *train,
                                                  runs.TEMPERATURE))
    more = at(f"teacher-more-s{seed}")
    runs.distill(more, teacher, flags(seed), layers, "none", export=False,
                 alpha=0.0)
    add("teacher_more", scored(more))
    for key, depth in (("cut", half), ("cut_small", small),
                       ("cut_tiny", tiny)):
      add(key, scored(teacher, depth))
    pabee_dir = at(f"pabee-s{seed}")
    runs.finetune(pabee_dir, source, from_pretrained(seed), early_exit=True,
                  export=False)
    cuts, exits = evaluate.pabee_looks(pabee_dir, splits, half)
    add("pabee", cuts)
    chosen = add("exit", exits)
    if seed == 0:
      pabee0 = evaluate.pabee_model(pabee_dir, os.path.join(
          pabee_dir, f"ckpt-{chosen['at']}"))
      patience0 = chosen["test"]["patience"]
    for key, depth in (("alone", half), ("alone_small", small),
                       ("alone_tiny", tiny)):
      alone = at(f"alone-k{depth}-{alone_steps}-s{seed}")
      runs.finetune(alone, source, from_pretrained(seed, alone_steps),
                    layers=depth, export=False)
      add(key, scored(alone))
    for key, depth in (("gold", half), ("gold_small", small),
                       ("gold_tiny", tiny)):
      gold = at(f"gold-k{depth}-s{seed}")
      runs.distill(gold, teacher, flags(seed), depth, "none", export=False,
                   alpha=0.0)
      add(key, scored(gold))
    for key, depth in (("distilled", half), ("distilled_small", small),
                       ("distilled_tiny", tiny)):
      student = at(f"distilled-k{depth}-{loss}-s{seed}")
      runs.distill(student, teacher, flags(seed), depth, loss,
                   export=seed == 0)
      add(key, scored(student))
    narrow_alone = at(f"narrow-alone-{2 * args.teacher_steps}-s{seed}")
    runs.finetune(narrow_alone, narrow,
                  from_pretrained(seed, 2 * args.teacher_steps),
                  export=False)
    add("narrow_alone", scored(narrow_alone))
    student = at(f"narrow-{loss}-s{seed}")
    runs.distill(student, teacher, from_pretrained(seed), 0, loss,
                 student=(narrow["config"], narrow["checkpoint"]),
                 export=seed == 0)
    add("narrow", scored(student))
    if args.unlabeled:
      for key in ("on_task", "off_task"):
        student = at(f"distilled-k{half}-{loss}-{key}-s{seed}")
        runs.distill(student, teacher, flags(seed), half, loss,
                     unlabeled=task["unlabeled" if key == "on_task" else
                                     "off_task"], export=False)
        add(key, scored(student))
  contenders = {name: figures for name, figures in contenders.items()
                if figures["accuracy"]}
  accuracy.check_equal_looks({name: max(figures["looks"]) for name, figures
                              in contenders.items()})
  test_labels = splits["test"][1]
  at_chance = report.at_chance(contenders, test_labels)
  for name in (names["teacher"], names["distilled"]):
    if name in at_chance:
      raise accuracy.ChanceError(at_chance[name])
  flops = {}
  classes = int(test_labels.max()) + 1
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
          path, splits["test"][0], work, args.seq_length,
          args.batch1_examples, args.repeats, args.threads,
          labels=test_labels)
      print(name, timings[name], flush=True)
    # The first table's ceiling: the best float32 matmul rate at the
    # model's feed-forward shapes (batch 1 and 32: a batch-1 matmul this
    # small runs far below the machine's peak, so it bounds nothing),
    # measured in the same quiet window.
    peak = roofline.serving_peak(MODEL["hidden_size"],
                                 MODEL["intermediate_size"], args.seq_length)
  others = window.others()
  for key, same in (("teacher_more", "teacher"), ("cut", "distilled"),
                    ("pabee", "distilled"), ("alone", "distilled"),
                    ("gold", "distilled"), ("on_task", "distilled"),
                    ("off_task", "distilled"),
                    ("cut_small", "distilled_small"),
                    ("alone_small", "distilled_small"),
                    ("gold_small", "distilled_small"),
                    ("cut_tiny", "distilled_tiny"),
                    ("alone_tiny", "distilled_tiny"),
                    ("gold_tiny", "distilled_tiny"),
                    ("narrow_alone", "narrow")):
    if names[key] in contenders:
      timings[names[key]] = {k: v for k, v in timings[names[same]].items()
                             if k != "litert_accuracy"}
      timings[names[key]]["as"] = names[same]
  fast = [names["distilled_tiny"], names["narrow"]]
  beats = {names["distilled"]: [names["alone"], names["cut"], names["gold"]],
           names["distilled_small"]: [names["alone_small"],
                                      names["cut_small"],
                                      names["gold_small"]],
           names["distilled_tiny"]: [names["alone_tiny"], names["cut_tiny"],
                                     names["gold_tiny"]],
           names["narrow"]: [names["narrow_alone"]]}
  if args.unlabeled:
    beats[names["on_task"]] = [names["distilled"], names["off_task"]]
  checks = report.goals(
      contenders, names["teacher_more"], names["distilled"], fast, beats,
      flops,
      dict(teacher_savedmodel_ms=timings[names["teacher"]]["savedmodel_ms"],
           litert_ms={name: timings[name]["litert_ms"] for name in fast}))
  return dict(contenders=contenders, flops=flops, timings=timings, peak=peak,
              checks=checks, names=names, loss=loss, tried=tried,
              patience=patience0, layers=layers, source=source,
              others=others, at_chance=at_chance, confidence=confidence,
              rows=dict(test=len(test_labels), dev=len(splits["dev"][1])),
              majority=accuracy.majority_rate(test_labels))


def _report(args, result) -> str:
  tried = ", ".join(f"{k} {v:.4f}" for k, v in result["tried"].items())
  half = result["layers"] // 2
  chance = "".join(f"\n\nNot written (at chance): {line}"
                   for line in result.get("at_chance", {}).values())
  rows = result.get("rows", {})
  return (report.contenders_table(result["contenders"], result["flops"],
                                  result["timings"],
                                  skip=tuple(result.get("at_chance", {})))
          + chance
          + f"\n\nTest split: {rows.get('test', '?')} rows (majority-class "
          f"rate {result.get('majority', 0):.3f}), dev {rows.get('dev', '?')}"
          " rows, train and test split by source file. Every contender had "
          f"{evaluate.LOOKS} looks at dev (its run's checkpoints; a static "
          "cut: the teacher's); the figure is the test accuracy at the look "
          "dev chose, beside the last look's. Intermediate loss kept: "
          f"{result['loss']} (chosen on dev by the k={half} student of seed "
          f"{SELECTION_SEED}, not reported: {tried}). Early exit's patience "
          f"on the first seed: {result['patience']} (its mean depth on dev "
          f"nearest {half}).\n\n"
          + report.confidence_line(result.get("confidence", ())) + "\n\n"
          "Goals (issue: distillation, section 3; \"beats\": the mean of "
          "per-seed paired differences exceeds their spread, 3 seeds at "
          "least):\n\n"
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
  parser.add_argument("--cache", default=runs.CACHE,
                      help="the folder of the source models and runs (a "
                      "run's key holds its folder's path)")
  parser.add_argument("--runs_from", default="", metavar="COMMIT",
                      help="score, time and report the runs an earlier, "
                      "committed revision of the code made (its cached "
                      "runs), training nothing: a missing run is an error, "
                      "and the figures name the commit")
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
  from benchmarks import revision
  from benchmarks.finetuning import topic_splits
  try:
    if args.runs_from:
      runs.read_runs_of(args.runs_from)
    result = run(args)
  except (accuracy.ChanceError, accuracy.LooksError, revision.StaleRunError,
          topic_splits.SplitError) as e:
    parser.exit(1, f"error: {e}\n")
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
  made = (f"; the runs made by the code at {args.runs_from[:7]}, scored, "
          "timed and written by this revision's harness"
          if args.runs_from else "")
  body = (f"`{command}`; {title}; {args.seeds} seeds of fine-tuning{made}; "
          f"{common.machine_line()}; {conditions}.\n\n"
          "![accuracy against latency](benchmarks/charts/distillation.png)"
          "\n\n" + text)
  row = report.figures_row(result["contenders"], result["timings"],
                           result["names"]["teacher"],
                           result["names"]["distilled"], result["flops"],
                           common.machine_label(), command, conditions,
                           title, chart, peak=result["peak"])
  common.update_benchmarks_md("Distillation", body, figures=[row],
                              stage="Fine-tuning")
  figures = (f"`{command}`; {title}{made}; {common.machine_label()}, "
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
