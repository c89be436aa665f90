"""Pretraining step before and after a change: two source trees, one run.

  python -m benchmarks.investigations.before_after --before=20b8fa6 \
      --size=base --rounds=8 --repeats=3 --write

Two trees cannot be imported by one Python process (modules move between
them), so each round runs `benchmarks.pretraining.step` (ours vs Model
Garden, float32, no memory children) in a fresh process in each tree: a
temporary `git worktree add --detach` of `--before` (removed at the end) and
this tree (or a worktree of `--after`), alternately: before, after, before,
after, ... Each process's cwd and PYTHONPATH are its tree. Its step times
are read from `common.time_alternating`, wrapped in the child, so they are
the benchmark's own, at full precision.

Per tree: the median over rounds of each process's median step time, ours
and Model Garden's, and of each process's ratio ours / Garden. Model
Garden's step does not change between the trees and runs in the same
process, alternating with ours: it is the control, so the ratio follows the
code and not the load of the machine. After / before > 1: after is slower.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Dict, List, Sequence

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BEFORE = "20b8fa6"  # the last commit before issue 26's reshaping
MODE = "float32"
_MARKER = "BEFORE_AFTER_TIMES "

# Runs the benchmark's command line in the child, recording the raw step
# times that `common.time_alternating` returns (the same helper in both trees).
_CHILD = f"""
import json, runpy, sys
import albert_tf
from benchmarks import common
recorded = []
timer = common.time_alternating
def recording(*args, **kwargs):
  recorded.append(timer(*args, **kwargs))
  return recorded[-1]
common.time_alternating = recording
sys.argv = ["benchmarks.pretraining.step"] + sys.argv[1:]
runpy.run_module("benchmarks.pretraining.step", run_name="__main__")
print({_MARKER!r} + json.dumps(dict(times=recorded[-1],
                                    albert_tf=albert_tf.__file__)))
"""


def _git(*args: str, cwd: str = REPO_ROOT) -> str:
  return subprocess.run(["git", *args], cwd=cwd, check=True,
                        capture_output=True, text=True).stdout.strip()


def bench_args(size: str, batch: int, seq: int, repeats: int) -> List[str]:
  return [f"--sizes={size}", f"--modes={MODE}", "--no_memory",
          f"--batch_size={batch}", f"--seq_length={seq}",
          f"--repeats={repeats}"]


def run_once(tree: str, args: Sequence[str]) -> Dict[str, float]:
  """One process of the pretraining-step benchmark in `tree`: the medians of
  its step times (seconds) and the system load when it started."""
  env = dict(os.environ, PYTHONPATH=tree, TF_CPP_MIN_LOG_LEVEL="3")
  load = os.getloadavg()[0]
  done = subprocess.run([sys.executable, "-c", _CHILD, *args], cwd=tree,
                        env=env, capture_output=True, text=True)
  if done.returncode != 0:
    raise RuntimeError(f"the benchmark failed in {tree}:\n"
                       f"{done.stderr[-3000:]}")
  line = [line for line in done.stdout.splitlines()
          if line.startswith(_MARKER)][-1]
  result = json.loads(line[len(_MARKER):])
  if not os.path.realpath(result["albert_tf"]).startswith(
      os.path.realpath(tree) + os.sep):
    raise RuntimeError(f"{tree}: albert_tf came from {result['albert_tf']}")
  ours = statistics.median(result["times"][f"ours {MODE}"])
  garden = statistics.median(result["times"][f"garden {MODE}"])
  return dict(ours=ours, garden=garden, ratio=ours / garden, load=load)


def summarize(rounds: Dict[str, List[Dict[str, float]]]) -> Dict[str, Dict]:
  """Per tree ("before", "after"): medians over its processes of our step
  time, Model Garden's and their ratio; "after/before": the after medians
  divided by the before medians."""
  out = {}
  for tree in ("before", "after"):
    runs = rounds[tree]
    out[tree] = {key: statistics.median(r[key] for r in runs)
                 for key in ("ours", "garden", "ratio")}
    out[tree].update(processes=len(runs),
                     ratio_min=min(r["ratio"] for r in runs),
                     ratio_max=max(r["ratio"] for r in runs))
  out["after/before"] = {key: out["after"][key] / out["before"][key]
                         for key in ("ours", "garden", "ratio")}
  return out


def report(rounds: Dict[str, List[Dict[str, float]]],
           labels: Dict[str, str], tolerance: float = 0.05):
  """The markdown table and the one-sentence conclusion."""
  from benchmarks.common import markdown_table  # TensorFlow loads with it
  s = summarize(rounds)
  rows = [[f"{tree} ({labels[tree]})", s[tree]["processes"],
           f"{s[tree]['ours'] * 1e3:.0f}", f"{s[tree]['garden'] * 1e3:.0f}",
           f"{s[tree]['ratio']:.3f}",
           f"{s[tree]['ratio_min']:.3f}-{s[tree]['ratio_max']:.3f}"]
          for tree in ("before", "after")]
  change = s["after/before"]
  rows.append(["after / before", "", f"{change['ours']:.3f}x",
               f"{change['garden']:.3f}x", f"{change['ratio']:.3f}x", ""])
  table = markdown_table(
      ["tree", "processes", "ours ms/step", "Garden ms/step",
       "ours / Garden", "ours / Garden, range"], rows)
  delta = change["ratio"] - 1
  if delta > tolerance:
    verdict = (f"The step regressed: after is {delta:.1%} slower than "
               f"before, relative to Model Garden (above the "
               f"{tolerance:.0%} tolerance).")
  else:
    verdict = (f"No regression: relative to Model Garden, after's step takes "
               f"{change['ratio']:.3f}x before's ({delta:+.1%}; the tolerance "
               f"is +{tolerance:.0%}).")
  verdict += (" Single processes ranged over "
              + " and ".join(f"{s[t]['ratio_min']:.2f}-{s[t]['ratio_max']:.2f}"
                             f" {t}" for t in ("before", "after"))
              + ", hence the medians over alternating processes.")
  return table, verdict, s


class Worktree:
  """A detached `git worktree` of `rev`, removed on exit."""

  def __init__(self, rev: str):
    self.rev = rev
    self.path = None

  def __enter__(self) -> str:
    self.path = tempfile.mkdtemp(prefix="bench-before-after-")
    os.rmdir(self.path)  # git worktree add creates it
    _git("worktree", "add", "--detach", self.path, self.rev)
    return self.path

  def __exit__(self, *exc):
    _git("worktree", "remove", "--force", self.path)


def run(before: str, after: str, args: Sequence[str], rounds: int):
  """`rounds` processes per tree, alternating; the per-process results.

  `after` "" is this tree, as it is on disk."""
  with Worktree(before) as before_tree:
    if after:
      with Worktree(after) as after_tree:
        return _alternate(before_tree, after_tree, args, rounds)
    return _alternate(before_tree, REPO_ROOT, args, rounds)


def _alternate(before_tree, after_tree, args, rounds):
  results = {"before": [], "after": []}
  for i in range(rounds):
    for tree, path in (("before", before_tree), ("after", after_tree)):
      results[tree].append(run_once(path, args))
      r = results[tree][-1]
      print(f"round {i + 1}/{rounds} {tree}: ours {r['ours'] * 1e3:.0f} ms, "
            f"Garden {r['garden'] * 1e3:.0f} ms, ours/Garden "
            f"{r['ratio']:.3f} (load {r['load']:.1f})", flush=True)
  return results


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--before", default=BEFORE, help="git revision")
  parser.add_argument("--after", default="",
                      help="git revision; default: this tree as on disk")
  parser.add_argument("--size", default="base")
  parser.add_argument("--batch_size", type=int, default=8)
  parser.add_argument("--seq_length", type=int, default=128)
  parser.add_argument("--repeats", type=int, default=3,
                      help="timed steps per contender in each process")
  parser.add_argument("--rounds", type=int, default=8,
                      help="processes per tree")
  parser.add_argument("--tolerance", type=float, default=0.05)
  parser.add_argument("--write", action="store_true",
                      help="update BENCHMARKS.md")
  args = parser.parse_args()
  labels = {"before": _git("rev-parse", "--short", args.before),
            "after": _git("rev-parse", "--short", args.after or "HEAD")}
  if not args.after and _git("status", "--porcelain", "--untracked-files=no"):
    labels["after"] += " + changes"
  load_start = os.getloadavg()[0]
  results = run(args.before, args.after,
                bench_args(args.size, args.batch_size, args.seq_length,
                           args.repeats), args.rounds)
  load_end = os.getloadavg()[0]
  table, verdict, _ = report(results, labels, args.tolerance)
  print(table)
  print(verdict)
  if args.write:
    from benchmarks import common
    loads = [r["load"] for runs in results.values() for r in runs]
    command = " ".join(
        ["python -m benchmarks.investigations.before_after",
         f"--before={args.before}"]
        + ([f"--after={args.after}"] if args.after else [])
        + [f"--size={args.size}", f"--batch_size={args.batch_size}",
           f"--seq_length={args.seq_length}", f"--repeats={args.repeats}",
           f"--rounds={args.rounds}", "--write"])
    from tensorflow import __version__ as tf_version
    common.update_benchmarks_md(
        "Pretraining step before and after a change", f"`{command}`; "
        f"{os.cpu_count()} CPU cores, TensorFlow {tf_version}, "
        f"load average {load_start:.1f} at the start, {load_end:.1f} at the "
        f"end (median "
        f"{statistics.median(loads):.1f} over the processes). ALBERT-"
        f"{args.size}, float32, batch {args.batch_size} x "
        f"{args.seq_length}: `benchmarks.pretraining.step` in a "
        f"fresh process per tree and round, {args.rounds} rounds "
        f"alternating before and after, {args.repeats} timed steps per "
        f"contender in each process. Each cell is the median over the "
        f"processes of their median step; Model Garden's step, the same "
        f"code in both trees and timed alternately with ours in the same "
        f"process, is the control: ours / Garden follows the code, not the "
        f"load. The range is the lowest and highest process.\n\n"
        + table + "\n\n" + verdict)


if __name__ == "__main__":
  main()
