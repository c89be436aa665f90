"""Shared helpers for the benchmarks: timing, peak FLOP/s, memory, reports."""

import os
import resource
import statistics
import time
from typing import Callable, Dict, List, Sequence

import numpy as np
import tensorflow as tf

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCHMARKS_MD = os.path.join(REPO_ROOT, "BENCHMARKS.md")


def load_config(size: str):
  """The AlbertConfig of a released size ("base" -> configs/albert_base.json)
  or of a config file path (ending in .json)."""
  from albert_tf.config import AlbertConfig
  path = size if size.endswith(".json") else os.path.join(
      REPO_ROOT, "configs", f"albert_{size}.json")
  return AlbertConfig.from_json_file(path)


def parse_args(parser):
  """`parser.parse_args()`, then every model size in `--size` / `--sizes`
  checked: a missing or invalid config exits with one line and status 1."""
  from albert_common.errors import UserInputError
  args = parser.parse_args()
  sizes = getattr(args, "sizes", None) or getattr(args, "size", None) or ""
  for size in sizes.split(","):
    try:
      load_config(size)
    except UserInputError as e:
      parser.exit(1, f"error: --size {size!r}: {e}\n")
  return args


def size_label(size: str) -> str:
  """"base" for a released size; the file name without .json for a path."""
  return os.path.basename(size)[:-len(".json")] if size.endswith(
      ".json") else size


def time_alternating(fns: Dict[str, Callable[[], object]], repeats: int,
                     warmup: int = 2) -> Dict[str, List[float]]:
  """Calls each function in turn, `repeats` rounds; seconds per call.

  Alternating (A, B, A, B, ...) rather than A x N then B x N spreads machine
  noise (other processes, thermal) evenly over the contenders.
  """
  for fn in fns.values():
    for _ in range(warmup):
      _block(fn())
  times = {name: [] for name in fns}
  for _ in range(repeats):
    for name, fn in fns.items():
      start = time.perf_counter()
      _block(fn())
      times[name].append(time.perf_counter() - start)
  return times


def _block(value):
  """Waits for a result (eager tensors are computed when read)."""
  for t in tf.nest.flatten(value):
    if hasattr(t, "numpy"):
      t.numpy()


def median(values: Sequence[float]) -> float:
  return float(statistics.median(values))


def matmul_peak_flops(size: int = 2048, repeats: int = 10) -> float:
  """Achieved float32 FLOP/s of a large square matmul: the practical peak."""
  a = tf.random.normal([size, size])
  b = tf.random.normal([size, size])
  matmul = tf.function(lambda x, y: tf.matmul(x, y))
  matmul(a, b).numpy()
  seconds = []
  for _ in range(repeats):
    start = time.perf_counter()
    matmul(a, b).numpy()
    seconds.append(time.perf_counter() - start)
  return 2 * size**3 / min(seconds)  # the best run: a peak, not a typical


def peak_rss_mb() -> float:
  """Peak resident memory of this process so far, in MB.

  Read from /proc (VmHWM): getrusage's ru_maxrss survives exec on Linux, so
  a child started by a big process would report its parent's peak.
  """
  try:
    with open("/proc/self/status") as f:
      for line in f:
        if line.startswith("VmHWM:"):
          return int(line.split()[1]) / 1024
  except OSError:
    pass
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def markdown_table(header: Sequence[str], rows: Sequence[Sequence]) -> str:
  lines = ["| " + " | ".join(header) + " |",
           "|" + "|".join(" --- " for _ in header) + "|"]
  for row in rows:
    lines.append("| " + " | ".join(str(c) for c in row) + " |")
  return "\n".join(lines)


def update_benchmarks_md(section: str, body: str) -> None:
  """Replaces (or appends) `## section` in BENCHMARKS.md."""
  path = BENCHMARKS_MD
  text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
  marker = f"\n## {section}\n"
  start = text.find(marker)
  block = f"{marker}\n{body.strip()}\n"
  if start < 0:
    text = text.rstrip("\n") + "\n" + block
  else:
    end = text.find("\n## ", start + len(marker))
    text = text[:start] + block + (text[end:] if end >= 0 else "")
  with open(path, "w") as f:
    f.write(text)


def machine_line() -> str:
  cpus = os.cpu_count()
  load = os.getloadavg()[0]
  return (f"{cpus} CPU cores ({cpu_model()}), TensorFlow {tf.__version__}, "
          f"load average {load:.1f} at the start, numpy {np.__version__}")


def cpu_model() -> str:
  """The CPU's model name (/proc/cpuinfo): sections measured on different
  machines of the same size differ by up to 2x."""
  try:
    with open("/proc/cpuinfo") as f:
      names = [line.split(":", 1)[1].strip() for line in f
               if line.startswith("model name")]
  except OSError:
    names = []
  return names[0] if names else "CPU model unknown"


def model_step_main(doc: str, run, module: str, section: str, note: str,
                    repeats: int = 8) -> None:
  """Command line of a one-model step benchmark: `run(size, batch_size,
  seq_length, repeats)` returns its markdown table; `--write` puts it in
  BENCHMARKS.md under `section`, after the command and `note`."""
  import argparse
  parser = argparse.ArgumentParser(description=doc.split("\n")[0])
  parser.add_argument("--size", default="base")
  parser.add_argument("--batch_size", type=int, default=8)
  parser.add_argument("--seq_length", type=int, default=128)
  parser.add_argument("--repeats", type=int, default=repeats)
  parser.add_argument("--write", action="store_true",
                      help="update BENCHMARKS.md")
  args = parse_args(parser)
  table = run(args.size, args.batch_size, args.seq_length, args.repeats)
  if args.write:
    update_benchmarks_md(
        section, f"`python -m {module} --size={args.size} "
        f"--batch_size={args.batch_size} --seq_length={args.seq_length} "
        f"--repeats={args.repeats}`; {machine_line()}. {note}\n\n" + table)
