"""Runs every harness of BENCHMARKS.md's first table in its short mode, one
after another: `python -m benchmarks.summary --run` (see there).

Each harness module that owns a first-table row says, at module level,

  SHORT_ARGS = ["--rounds=3", ..., "--write"]

the arguments of its short mode (which writes its section and its row).
They are run as `sys.executable -m <module> *SHORT_ARGS` from the
repository root, in HARNESSES' order, their output shown and copied to a
log under build/benchmarks/; the first that fails stops the run. A module
without SHORT_ARGS is reported ("no short mode") and skipped.
"""

import ast
import importlib
import importlib.util
import json
import os
import subprocess
import sys
import time
from typing import Dict, List, Optional, Sequence, TextIO

from benchmarks import common

# The harnesses of the first table, in the order --run runs them.
HARNESSES = [
    "benchmarks.data.creation",
    "benchmarks.pretraining.step",
    "benchmarks.finetuning.peers",
    "benchmarks.serving.runtimes",
    "benchmarks.serving.corpus",
    "benchmarks.memory.peaks",
    "benchmarks.serving.early_exit",
    "benchmarks.finetuning.distillation",
]
BUDGET_SECONDS = 30 * 60  # on 2 cores
LOG_DIR = os.path.join(common.REPO_ROOT, "build", "benchmarks")


class RunError(RuntimeError):
  """A harness failed, or --only named no harness."""


def select(only: Optional[str], harnesses: Sequence[str]) -> List[str]:
  """The harnesses `--only` names ("data.creation" or
  "benchmarks.data.creation", comma-separated), in run order; all if none."""
  if not only:
    return list(harnesses)
  wanted = [w.strip() for w in only.split(",") if w.strip()]
  full = [w if w in harnesses else f"benchmarks.{w}" for w in wanted]
  unknown = [w for w, f in zip(wanted, full) if f not in harnesses]
  if unknown or not full:
    raise RunError(f"--only={only!r}: {', '.join(unknown) or 'empty'} is "
                   f"not a harness of the first table ({', '.join(harnesses)})")
  return [h for h in harnesses if h in full]


def short_args(module: str) -> Optional[List[str]]:
  """The module's SHORT_ARGS (None if it has none): read from its source
  when it is a literal list, else by importing it."""
  spec = importlib.util.find_spec(module)
  if spec is None or not spec.origin:
    raise RunError(f"{module}: no such module")
  with open(spec.origin, encoding="utf-8") as f:
    tree = ast.parse(f.read())
  for node in tree.body:
    targets = (node.targets if isinstance(node, ast.Assign) else
               [node.target] if isinstance(node, ast.AnnAssign) else [])
    if any(getattr(t, "id", None) == "SHORT_ARGS" for t in targets):
      try:
        return list(ast.literal_eval(node.value))
      except ValueError:  # built by code: import the module
        return list(importlib.import_module(module).SHORT_ARGS)
  return None


def commands(modules: Sequence[str]) -> Dict[str, Optional[List[str]]]:
  """module -> its argv (None: no short mode)."""
  result = {}
  for module in modules:
    args = short_args(module)
    result[module] = None if args is None else [
        sys.executable, "-m", module, *args]
  return result


def run(modules: Sequence[str], out: Optional[TextIO] = None,
        log_dir: Optional[str] = None) -> Dict[str, float]:
  """Runs each module's short mode; module -> seconds (the skipped ones
  absent). Output to `out` (stdout) and a log in `log_dir` (LOG_DIR).
  Raises RunError, naming the module and the log, on a failure."""
  out, log_dir = out or sys.stdout, log_dir or LOG_DIR
  os.makedirs(log_dir, exist_ok=True)
  log_path = os.path.join(log_dir, time.strftime("run-%Y%m%d-%H%M%S.log"))
  estimates = _previous_times(log_dir)
  todo = commands(modules)
  runnable = [m for m, argv in todo.items() if argv]
  times, start = {}, time.perf_counter()
  with open(log_path, "w", encoding="utf-8") as log:
    for module, argv in todo.items():
      if argv is None:
        _say(out, log, f"{module}: no short mode (no SHORT_ARGS), skipped")
    for i, module in enumerate(runnable, 1):
      argv = todo[module]
      left = sum(estimates.get(m, BUDGET_SECONDS / len(HARNESSES))
                 for m in runnable[i - 1:])
      _say(out, log, f"[{i}/{len(runnable)}] {module} "
           f"(elapsed {_clock(time.perf_counter() - start)}, about "
           f"{_clock(left)} left)\n  python -m {' '.join(argv[2:])}")
      began = time.perf_counter()
      code = _tee(argv, out, log)
      times[module] = time.perf_counter() - began
      if code:
        raise RunError(f"{module} failed (exit status {code}) after "
                       f"{_clock(times[module])}; its output is in {log_path}")
    total = time.perf_counter() - start
    for module, seconds in times.items():
      _say(out, log, f"  {module}: {_clock(seconds)}")
    over = " -- over the budget" if total > BUDGET_SECONDS else ""
    _say(out, log, f"all harnesses: {_clock(total)} (budget "
         f"{_clock(BUDGET_SECONDS)} on 2 cores){over}; log: {log_path}")
  if times:
    with open(os.path.join(log_dir, "times.json"), "w") as f:
      json.dump(dict(estimates, **times), f, indent=1)
  return times


def _tee(argv, out, log) -> int:
  """Runs argv from the repository root, its output to `out` and `log`."""
  process = subprocess.Popen(
      argv, cwd=common.REPO_ROOT, stdout=subprocess.PIPE,
      stderr=subprocess.STDOUT, text=True, bufsize=1)
  for line in process.stdout:
    out.write(line)
    out.flush()
    log.write(line)
  return process.wait()


def _previous_times(log_dir) -> Dict[str, float]:
  """Each harness's seconds in the last run here (the estimates)."""
  try:
    with open(os.path.join(log_dir, "times.json")) as f:
      return json.load(f)
  except (OSError, ValueError):
    return {}


def _say(out, log, text):
  print(text, file=out, flush=True)
  log.write(text + "\n")
  log.flush()


def _clock(seconds: float) -> str:
  return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"
