"""The shared harness: alternating contenders, quiet rounds, memory, tables,
BENCHMARKS.md sections and the figures the first table is made from.

TensorFlow is imported by the functions that need it, so a contender's
process that never runs TensorFlow (Hugging Face's) can use the CPU meter.
The matmul peak lives in benchmarks.roofline.
"""

import json
import os
import resource
import statistics
import time
from typing import Callable, Dict, List, Optional, Sequence

from albert_common import cpu_features
from benchmarks import figures

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCHMARKS_MD = os.path.join(REPO_ROOT, "BENCHMARKS.md")


def load_config(size: str):
  """The AlbertConfig of a released size ("base" -> configs/albert_base.json)
  or of a config file path (ending in .json)."""
  from albert_tf.config import AlbertConfig
  path = size if size.endswith(".json") else os.path.join(
      REPO_ROOT, "configs", f"albert_{size}.json")
  if not os.path.exists(path) and os.path.exists(os.path.join(REPO_ROOT,
                                                              path)):
    path = os.path.join(REPO_ROOT, path)  # configs/... from anywhere
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
      wait_for(fn())
  times = {name: [] for name in fns}
  for _ in range(repeats):
    for name, fn in fns.items():
      start = time.perf_counter()
      wait_for(fn())
      times[name].append(time.perf_counter() - start)
  return times


def wait_for(value):
  """Waits for a result (eager tensors are computed when read)."""
  import tensorflow as tf
  for t in tf.nest.flatten(value):
    if hasattr(t, "numpy"):
      t.numpy()


def median(values: Sequence[float]) -> float:
  return float(statistics.median(values))


class CpuWindow:
  """CPU that other processes used over a window of wall time, in cores
  (/proc/stat's busy time minus this process's own): the load that makes a
  round "loaded". As a context manager, or start() then others().

  Rounds are compared only when quiet (`quiet_rounds`): a spinning thread
  pool (onnxruntime's) slows 3-5x when another process takes a core, and
  its peers do not, so a ratio measured under load is not the machine's.

  children: also count, as this process's own, the CPU of the child
  processes it ran and waited for (a harness that measures in children).
  """

  def __init__(self, children: bool = False):
    self.children = children

  def __enter__(self):
    self.start()
    return self

  def __exit__(self, *exc):
    self.other_cores = self.others()

  def start(self):
    self.begin = (_busy_seconds(), _own_seconds(self.children),
                  time.perf_counter())

  def others(self) -> float:
    busy, own, wall = (_busy_seconds(), _own_seconds(self.children),
                       time.perf_counter())
    self.seconds = wall - self.begin[2]
    used = (busy - self.begin[0]) - (own - self.begin[1])
    return max(used, 0.0) / max(self.seconds, 1e-9)


def _busy_seconds() -> float:
  """Seconds of CPU the machine spent busy since boot (/proc/stat)."""
  with open("/proc/stat") as f:
    fields = [float(x) for x in f.readline().split()[1:]]
  idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)
  return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _own_seconds(children: bool = False) -> float:
  times = os.times()
  own = times.user + times.system
  if children:
    own += times.children_user + times.children_system
  return own


QUIET_CORES = 0.1  # a run is quiet below this many other processes' cores


def load_conditions(others: float, quiet_cores: float = QUIET_CORES,
                    span: str = "over the run") -> str:
  """A row's conditions from CpuWindow.others(): "quiet: other processes
  0.02 cores over the run", or "loaded: ..." (benchmarks.summary refuses a
  loaded row)."""
  state = "quiet" if others < quiet_cores else "loaded"
  return f"{state}: other processes {others:.2f} cores {span}"


def quiet_rounds(others: Sequence[float], threshold: float) -> List[int]:
  """Indices of the rounds in which other processes used less than
  `threshold` cores (every contender's window below it)."""
  return [i for i, o in enumerate(others) if o < threshold]


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


FIGURES_START = figures.START


def figures_block(row: Dict) -> str:
  """A first-table row as its section carries it (benchmarks.figures has
  the fields): an HTML comment holding one JSON object, with its digest."""
  return figures.block(row)


def update_benchmarks_md(section: str, body: str,
                         figures: Optional[Sequence[Dict]] = None,
                         stage: Optional[str] = None,
                         path: Optional[str] = None) -> None:
  """Replaces `### section` in BENCHMARKS.md (up to the next heading of
  level 2 or 3); a new section goes at the end of `## stage` ("Memory",
  "Serving", ...), else before "## History". `figures` (dicts, see
  figures_block) are written at its end for benchmarks.summary; a block of
  the same `order` that an older run left in another section goes
  (drop_figures)."""
  path = path or BENCHMARKS_MD
  text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
  marker = f"\n### {section}\n"
  blocks = "".join(f"\n{figures_block(row)}\n" for row in figures or ())
  block = f"{marker}\n{body.strip()}\n{blocks}"
  start = text.find(marker)
  if start < 0:
    start = end = _new_section_at(text, stage)
  else:
    ends = [i for i in (text.find("\n### ", start + len(marker)),
                        text.find("\n## ", start + len(marker))) if i >= 0]
    end = min(ends) if ends else len(text)
  text = text[:start] + block + text[end:]
  orders = {row.get("order") for row in figures or ()}
  text = drop_figures(text, orders, keep_from=start, keep_to=start +
                      len(block))
  with open(path, "w") as f:
    f.write(text)


def drop_figures(text: str, orders, keep_from: int = 0,
                 keep_to: int = 0) -> str:
  """`text` without the figures blocks of these first-table `orders`
  outside [keep_from, keep_to) (the section just written): a row is
  written by one run, so a new run's row supersedes the one an older run
  left in another section (e.g. "Data creation (corpus x16)" after a
  corpus x4 run)."""
  if not orders:
    return text
  out, at = [], 0
  while True:
    start = text.find(FIGURES_START + "\n", at)
    if start < 0:
      break
    end = text.find("\n-->", start)
    if end < 0:
      break
    end += len("\n-->")
    body = text[start + len(FIGURES_START):end - len("-->")]
    try:
      order = json.loads(body).get("order")
    except ValueError:
      order = None
    inside = keep_from <= start < keep_to
    if order in orders and not inside:
      out.append(text[at:start].rstrip("\n") + "\n")
      at = end
      while text.startswith("\n\n", at):
        at += 1
    else:
      out.append(text[at:end])
      at = end
  out.append(text[at:])
  return "".join(out)


def _new_section_at(text: str, stage: Optional[str]) -> int:
  """Where a new section goes: the end of `## stage`, else before
  "## History", else the end."""
  heading = text.find(f"\n## {stage}\n") if stage else -1
  if heading >= 0:
    after = text.find("\n## ", heading + 1)
    return after if after >= 0 else len(text.rstrip("\n"))
  history = text.find("\n## History\n")
  return history if history >= 0 else len(text.rstrip("\n"))


def machine_line() -> str:
  import numpy as np
  import tensorflow as tf
  cpus = os.cpu_count()
  load = os.getloadavg()[0]
  return (f"{cpus} CPU cores ({cpu_model()}), TensorFlow {tf.__version__}, "
          f"load average {load:.1f} at the start, numpy {np.__version__}")


def today() -> str:
  """The date of a run, as the first table gives it (YYYY-MM-DD)."""
  return time.strftime("%Y-%m-%d")


def command_line(module: str, argv: Sequence[str]) -> str:
  """The exact command of a run, as run: `python -m module` and its
  arguments (quoted where the shell needs it)."""
  import shlex
  return " ".join(["python -m", module] + [shlex.quote(a) for a in argv])


def machine_label(cpuinfo: Optional[str] = None,
                  cores: Optional[int] = None) -> str:
  """A short name for the first table, e.g. "2-core Intel Xeon (AMX)":
  the core count, the CPU family, and AMX when the CPU has it (float32
  matmuls then reach a higher peak). cpuinfo: /proc/cpuinfo's text."""
  if cpuinfo is None:
    cpuinfo = cpu_features.read_cpuinfo()
  name = cpu_features.cpu_model(cpuinfo)
  family = next((family for key, family in (
      ("Xeon", "Intel Xeon"), ("EPYC", "AMD EPYC"), ("Intel", "Intel"),
      ("AMD", "AMD")) if key in name), name or "CPU")
  amx = " (AMX)" if "amx_tile" in cpu_features.cpu_flags(cpuinfo) else ""
  return f"{cores or os.cpu_count()}-core {family}{amx}"


def cpu_model() -> str:
  """The CPU's model name (/proc/cpuinfo): sections measured on different
  machines of the same size differ by up to 2x."""
  return cpu_features.cpu_model() or "CPU model unknown"


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
