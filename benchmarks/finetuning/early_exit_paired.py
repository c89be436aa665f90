"""Does early-exit (PABEE) fine-tuning learn less than it did at 5f0f06f?
Paired seeds, two code trees, one model and data.

  python -m benchmarks.finetuning.early_exit_paired \\
      --old_tree=/work/wt/old-5f0f06f [--seeds=8] [--control_seeds=4] \\
      [--streams=2 --stream_seeds=4] [--write]

The old tree is a git worktree of the old commit (`git worktree add
--detach ../old-5f0f06f 5f0f06f`). Built once here (cached under
build/benchmarks/early_exit_paired/): a 12-application ALBERT (one shared
layer) pretrained with our tools on the standard library's docstrings
(distillation_runs.source_model) and the 8-topic task split by file into
train / dev / test (distillation_runs.task_files). Then, per seed, from
each tree (its own `python -m tools.run_classifier`, PYTHONPATH and cwd the
tree's): `--early_exit`, and plain run_classifier as the control, with the
same flags: a config with ALBERT v1's dropout (0.1 hidden and attention),
the tools' default classifier dropout.

Nothing is selected: every figure is the LAST step's checkpoint (the only
one a run keeps), scored here by this tree's code on dev and on the
held-out test split: full depth, and PABEE at patience 1..3. The
difference new - old is taken per seed (the same seed gives the same data
order and initial heads); the table gives its mean, standard deviation, a
paired t statistic (mean / (sd / sqrt n)) and the signs.

The same seed does not give the two trees the same dropout masks (they
draw them differently), so a paired difference carries the noise of one
mask realization. `--streams=K` measures it: each tree reruns its first
`--stream_seeds` seeds with its masks from K other streams, all else
equal (mask_stream.py; statistics in early_exit_streams.py).

A run folder is keyed by the revision of the tool code of the tree it ran
(benchmarks.revision.TOOL_DIRS: editing this harness keeps the runs; a
change to the tools reruns them), so a rerun resumes.
"""

import argparse
from concurrent import futures
import hashlib
import json
import math
import os
import sys
from typing import Dict, List

import numpy as np

from benchmarks import accuracy
from benchmarks import common
from benchmarks import revision as revision_lib
from benchmarks.finetuning import distillation_runs as runs
from benchmarks.finetuning import early_exit_streams as streams

CACHE = os.path.join(common.REPO_ROOT, "build", "benchmarks",
                     "early_exit_paired")
OLD_COMMIT = "5f0f06f"
MODEL = dict(vocab_size=5000, embedding_size=64, hidden_size=64,
             num_hidden_layers=12, num_attention_heads=4,
             intermediate_size=256, share_parameters="all",
             num_hidden_groups=1)
# ALBERT v1's released configs (the issue's "default dropout").
DROPOUT = dict(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
PATIENCES = (1, 2, 3)
SCORES = "scores.json"
MASK_STREAM = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           "mask_stream.py")
DOCS_PAGE = os.path.join(common.REPO_ROOT, "docs", "early-exit.md")
SECTION = "## Early exit at 5f0f06f and today, paired seeds"


def trees(old_tree: str) -> Dict[str, Dict]:
  """{"old", "new"}: {"root", "revision"} (the tool code's revision)."""
  out = {}
  for name, root in (("old", old_tree), ("new", common.REPO_ROOT)):
    out[name] = dict(root=root, revision=revision_lib.code_revision(
        root, revision_lib.TOOL_DIRS))
  head = out["old"]["revision"]["head"]
  if not head.startswith(OLD_COMMIT) or out["old"]["revision"]["dirty"]:
    raise revision_lib.StaleRunError(
        f"--old_tree={old_tree} is at {head[:7]}"
        f"{' with changes' if out['old']['revision']['dirty'] else ''}, "
        f"not a clean {OLD_COMMIT}")
  return out


def finetune_config(source: Dict) -> str:
  """The source's albert_config.json with DROPOUT: the config every run
  fine-tunes with."""
  from albert_tf.config import AlbertConfig
  path = os.path.join(source["folder"], "albert_config-dropout.json")
  if not os.path.exists(path):
    base = AlbertConfig.from_json_file(source["config"])
    AlbertConfig.from_dict(dict(base.to_dict(), **DROPOUT)).to_json_file(path)
  return path


def run_one(tree: Dict, early: bool, seed: int, flags: List[str],
            source: Dict, config: str, settings_key: str,
            stream: int = 0) -> str:
  """One run_classifier run from `tree` (cached); its folder. stream > 0:
  the same run with its masks from another stream (mask_stream.py)."""
  kind = "exit" if early else "plain"
  # A stream's runs are keyed by the script that drew its masks too.
  name = f"{kind}-s{seed}" + (f"-m{stream}-{_digest(MASK_STREAM)}"
                              if stream else "")
  folder = os.path.join(CACHE, "runs", settings_key,
                        tree["revision"]["key"], name)
  extra = [f"--albert_config_file={config}",
           f"--init_checkpoint={source['checkpoint']}"]
  if early:
    extra.append("--early_exit")
  launcher = (MASK_STREAM, str(stream)) if stream else ("-m",)
  runs.run_tool("tools.run_classifier", flags + extra, folder,
             f"{name} ({tree['revision']['head'][:7]})", root=tree["root"],
             revision=tree["revision"], launcher=launcher)
  return folder


def _digest(path: str) -> str:
  with open(path, "rb") as f:
    return hashlib.sha256(f.read()).hexdigest()[:8]


def score(folder: str, early: bool, task: Dict, spm: str,
          seq_length: int) -> Dict:
  """{split: {"full": accuracy, "p1".. (early): accuracy, "depth_p1"..}}
  at the run's last checkpoint, scored by this tree's code; cached in
  the run folder."""
  path = os.path.join(folder, SCORES)
  if os.path.exists(path):
    with open(path) as f:
      return json.load(f)
  from albert_tf.training import early_exit
  from benchmarks.finetuning import distillation_eval as evaluate
  splits = {name: evaluate.split_inputs(folder, task[name], spm, seq_length)
            for name in ("dev", "test")}
  step, prefix = evaluate.checkpoints(folder)[-1]
  out = {}
  if early:
    model = evaluate.pabee_model(folder, prefix)
    for name, (inputs, labels) in splits.items():
      all_logits = evaluate.logits_of(model, inputs, "all_logits")
      row = dict(full=float(np.mean(all_logits[:, -1].argmax(-1) == labels)))
      for patience in PATIENCES:
        logits, layers = early_exit.exit_at(all_logits, patience)
        row[f"p{patience}"] = float(np.mean(logits.argmax(-1) == labels))
        row[f"depth_p{patience}"] = float(layers.mean())
      out[name] = row
  else:
    look = evaluate.classifier_looks(folder, splits, looks=1)[-1]
    out = dict(dev=dict(full=look["dev"]),
               test=dict(full=look["test"]["accuracy"]))
  out["step"] = step
  out["labels"] = {name: splits[name][1].tolist() for name in splits}
  with open(path, "w") as f:
    json.dump(out, f)
  return out


def paired_stats(new: List[float], old: List[float]) -> Dict:
  """accuracy.paired(new, old) with the differences' standard deviation
  (ddof 1) and the paired t statistic mean / (sd / sqrt n)."""
  pair = accuracy.paired(new, old)
  sd = float(np.std(pair["differences"], ddof=1)) if pair["n"] > 1 else 0.0
  t = pair["mean"] / (sd / math.sqrt(pair["n"])) if sd > 0 else float("nan")
  return dict(pair, sd=sd, t=t)


def run(args) -> Dict:
  """Every run and its scores: {"exit"/"plain": {seed: {"old", "new"}}}."""
  os.environ.setdefault("TF_NUM_INTRAOP_THREADS", str(args.threads))
  os.environ.setdefault("TF_NUM_INTEROP_THREADS", "1")
  both = trees(args.old_tree)
  # Pretrained with dropout too: 5f0f06f refuses a checkpoint without the
  # dropout layers' generator states for a config with dropout.
  source = runs.source_model(dict(MODEL, **DROPOUT), args.pretrain_steps,
                             args.seq_length,
                             cache=CACHE, revision=both["new"]["revision"])
  task = runs.task_files(args.max_per_topic, cache=CACHE)
  config = finetune_config(source)
  settings = dict(source=os.path.basename(source["folder"]),
                  steps=args.train_steps, batch=args.batch_size,
                  lr=args.learning_rate, per_topic=args.max_per_topic,
                  seq=args.seq_length, dropout=DROPOUT)
  settings_key = hashlib.sha256(json.dumps(
      settings, sort_keys=True).encode()).hexdigest()[:12]

  def flags(seed):
    return runs.common_flags(task, source["spm"], args.seq_length,
                             args.train_steps, args.batch_size,
                             args.learning_rate, seed) + [
        f"--save_checkpoints_steps={args.train_steps}",
        "--keep_checkpoint_max=1"]

  # (early, seed, stream): the paired seeds, the mask-stream control
  # (early exit, the first stream_seeds seeds, streams 1..streams), then
  # plain run_classifier.
  plan = [(True, seed, 0) for seed in range(1, args.seeds + 1)]
  plan += [(True, seed, stream)
           for seed in range(1, min(args.stream_seeds, args.seeds) + 1)
           for stream in range(1, args.streams + 1)]
  plan += [(False, seed, 0) for seed in range(1, args.control_seeds + 1)]
  result = {"exit": {}, "plain": {}, "streams": {}}
  window = common.CpuWindow(children=True)
  window.start()
  with futures.ThreadPoolExecutor(args.parallel) as pool:
    jobs = [(early, seed, stream, name, pool.submit(
        run_one, both[name], early, seed, flags(seed), source, config,
        settings_key, stream))
            for early, seed, stream in plan for name in ("old", "new")]
    for early, seed, stream, name, job in jobs:
      folder = job.result()
      scored = score(folder, early, task, source["spm"], args.seq_length)
      kind = "exit" if early else "plain"
      if stream:
        result["streams"].setdefault(seed, {}).setdefault(
            name, {})[stream] = scored
      else:
        result[kind].setdefault(seed, {})[name] = scored
      print(f"{kind} seed {seed}{f' stream {stream}' if stream else ''} "
            f"{name}: test {json.dumps(scored['test'])}", flush=True)
  others = window.others()
  labels = next(iter(result["exit"].values()))["new"]["labels"]["test"]
  return dict(result=result, others=others, seconds=window.seconds,
              trees=both, source=source, settings=settings,
              test_rows=len(labels),
              majority=accuracy.majority_rate(labels))


def at_chance(result: Dict) -> List[str]:
  """One line (accuracy.ChanceError's) per run whose full-depth test
  accuracy is within noise of the majority-class rate."""
  runs = [(f"{kind} seed {seed} {name}", scored)
          for kind in ("exit", "plain")
          for seed, pair in sorted(result[kind].items())
          for name, scored in sorted(pair.items())]
  runs += [(f"exit seed {seed} stream {stream} {name}", scored)
           for seed, trees_ in sorted(result.get("streams", {}).items())
           for name, by_stream in sorted(trees_.items())
           for stream, scored in sorted(by_stream.items())]
  lines = []
  for label, scored in runs:
    try:
      accuracy.check_above_chance(label, scored["test"]["full"],
                                  scored["labels"]["test"])
    except accuracy.ChanceError as e:
      lines.append(str(e))
  return lines


def table(result: Dict, split: str) -> str:
  """Per seed old / new / difference of every measure, then the paired
  statistics."""
  rows = []
  for kind, measures in (("exit", ["full"] + [f"p{p}" for p in PATIENCES]),
                         ("plain", ["full"])):
    seeds = sorted(result[kind])
    for measure in measures:
      old = [result[kind][s]["old"][split][measure] for s in seeds]
      new = [result[kind][s]["new"][split][measure] for s in seeds]
      if not seeds:
        continue
      stats = paired_stats(new, old)
      label = ("plain run_classifier" if kind == "plain" else
               "early exit, full depth" if measure == "full" else
               f"early exit, patience {measure[1:]}")
      per_seed = " ".join(f"{d * 100:+.1f}" for d in stats["differences"])
      noise = abs(stats["mean"]) < 2 * stats["sd"] / math.sqrt(stats["n"])
      rows.append([label, len(seeds), f"{np.mean(old):.4f}",
                   f"{np.mean(new):.4f}", f"{stats['mean'] * 100:+.2f}",
                   f"{stats['sd'] * 100:.2f}", f"{stats['t']:+.2f}",
                   stats["signs"].count("+"), stats["signs"].count("-"),
                   "yes" if noise else "no", per_seed])
  return common.markdown_table(
      ["contender", "seeds", f"old {split}", f"new {split}",
       "mean new - old (points)", "sd (points)", "paired t", "+", "-",
       "|mean| < 2 sd/sqrt(n)", "per seed (points)"], rows)


def verdict(result: Dict) -> str:
  """The full-depth test difference read against its noise: "within
  noise" when |mean| < 2 sd / sqrt(n) and neither sign has more than
  three quarters of the seeds."""
  seeds = sorted(result["exit"])
  stats = paired_stats([result["exit"][s]["new"]["test"]["full"]
                        for s in seeds],
                       [result["exit"][s]["old"]["test"]["full"]
                        for s in seeds])
  bound = 2 * stats["sd"] / math.sqrt(stats["n"])
  signs = stats["signs"]
  lopsided = max(signs.count("+"), signs.count("-")) > 0.75 * len(signs)
  within = abs(stats["mean"]) < bound and not lopsided
  return (f"Full depth on test, new - old: {stats['mean'] * 100:+.2f} points "
          f"(2 sd / sqrt(n) = {bound * 100:.2f}, signs {signs}, "
          f"{stats['n']} seeds): "
          + ("within noise." if within else
             "NOT within noise: the difference is larger than its noise "
             "or one sign dominates."))


def report(out: Dict) -> str:
  result = out["result"]
  depth = {p: np.mean([result["exit"][s][t]["test"][f"depth_p{p}"]
                       for s in result["exit"] for t in ("old", "new")])
           for p in PATIENCES}
  depths = ", ".join(f"patience {p} {d:.1f}" for p, d in depth.items())
  return ("Test split (held out, never selected on): "
          f"{out['test_rows']} rows, majority-class rate "
          f"{out['majority']:.3f}. Last step of every run, no selection. "
          f"Mean exit layer on test: {depths} (of "
          f"{MODEL['num_hidden_layers']}).\n\n"
          + verdict(result) + "\n\n" + table(result, "test")
          + control(result)
          + "\n\nDev (for the record):\n\n"
          + table(result, "dev"))


def control(result: Dict) -> str:
  """The mask-stream control's paragraph and table, or "" without it."""
  seeds = sorted(result["exit"])
  paired = paired_stats([result["exit"][s]["new"]["test"]["full"]
                         for s in seeds],
                        [result["exit"][s]["old"]["test"]["full"]
                         for s in seeds])
  text = streams.summary(result, paired)
  return f"\n\n{text}\n\n{streams.table(result)}" if text else ""


def write_section(args, out: Dict, text: str) -> None:
  """Replaces SECTION of docs/early-exit.md (up to the next `## `)."""
  command = common.command_line("benchmarks.finetuning.early_exit_paired",
                                sys.argv[1:])
  old, new = out["trees"]["old"]["revision"], out["trees"]["new"]["revision"]
  settings = out["settings"]
  body = (f"`{command}`; {common.machine_line()}; "
          + common.load_conditions(out["others"], span=(
              f"over the {out['seconds'] / 60:.0f} minutes of runs"))
          + f" (accuracy does not need a quiet machine).\n\nModel: ALBERT "
          f"H={MODEL['hidden_size']}, {MODEL['num_hidden_layers']} "
          f"applications of one shared layer, pretrained here "
          f"({args.pretrain_steps} steps, seq {args.seq_length}); fine-tuned "
          f"with hidden and attention dropout 0.1 and the tools' default "
          f"classifier dropout, {settings['steps']} steps, batch "
          f"{settings['batch']}, learning rate {settings['lr']:g}, at most "
          f"{settings['per_topic']} training rows a topic. Old: {OLD_COMMIT} "
          f"({revision_lib.describe(old)}); new: "
          f"{revision_lib.describe(new)}.\n\n" + text)
  with open(DOCS_PAGE) as f:
    page = f.read()
  start = page.find(SECTION)
  if start < 0:
    page = page.rstrip("\n") + "\n\n"
    start = end = len(page)
  else:
    end = page.find("\n## ", start + len(SECTION))
    end = len(page) if end < 0 else end + 1
  with open(DOCS_PAGE, "w") as f:
    f.write(page[:start] + SECTION + "\n\n" + body.strip() + "\n"
            + ("\n" + page[end:] if page[end:] else ""))


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--old_tree", required=True)
  parser.add_argument("--seeds", type=int, default=8)
  parser.add_argument("--control_seeds", type=int, default=4)
  parser.add_argument("--streams", type=int, default=0,
                      help="the mask-stream control: other mask streams "
                      "each tree reruns its first --stream_seeds seeds with")
  parser.add_argument("--stream_seeds", type=int, default=4)
  parser.add_argument("--pretrain_steps", type=int, default=1000)
  parser.add_argument("--seq_length", type=int, default=64)
  parser.add_argument("--train_steps", type=int, default=400)
  parser.add_argument("--batch_size", type=int, default=32)
  parser.add_argument("--learning_rate", type=float, default=5e-4)
  parser.add_argument("--max_per_topic", type=int, default=400)
  parser.add_argument("--parallel", type=int, default=2,
                      help="runs at once (old and new of a seed together)")
  parser.add_argument("--threads", type=int, default=1,
                      help="TensorFlow threads of each run")
  parser.add_argument("--write", action="store_true")
  args = parser.parse_args()
  if min(args.seeds, args.train_steps, args.pretrain_steps) < 1:
    parser.exit(1, "error: --seeds, --train_steps and --pretrain_steps "
                "must be at least 1\n")
  try:
    out = run(args)
  except revision_lib.StaleRunError as e:
    parser.exit(1, f"error: {e}\n")
  text = report(out)
  print(text)
  chance = at_chance(out["result"])
  print("\n".join(chance))
  if chance and args.write:
    parser.exit(1, f"error: not written, {len(chance)} runs at chance; the "
                f"first: {chance[0]}\n")
  if args.write:
    write_section(args, out, text)


if __name__ == "__main__":
  main()
