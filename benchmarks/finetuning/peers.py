"""Fine-tuning throughput against Hugging Face PyTorch, alternating processes.

  python -m benchmarks.finetuning.peers --size=base --batch_size=32 \
      --seq_length=128 --steps=8 --rounds=3 --tasks=sst2,mrpc --write

Contenders (benchmarks.finetuning.peers_worker): ours through the
fine-tuning runner -- `none`, `pow2` and `auto` length buckets, `pack`
(--pack_examples) -- and Hugging Face's AlbertForSequenceClassification on
PyTorch with Trainer's CPU defaults, `hf_dynamic` (each batch padded to its
longest) and `hf_128` (padded to --seq_length). Generated tasks as
benchmarks.finetuning.length_buckets': `sst2` (SST-2's lengths: mean
about 25 tokens, tail to 66) and `mrpc` (MRPC's pairs: mean about 47).
All read the same seeded example stream.

Each round runs every contender once, one at a time, each in a fresh
process (build, warm-up: every batch shape once, then `--steps` timed
steps); the order rotates from round to round. A worker measures the CPU
other processes used during its timed steps (/proc/stat minus its own);
a round is quiet when every contender's figure is below --quiet_cores, and
only quiet rounds are results. With none quiet, the table shows all rounds,
marked "loaded": read those as rough (PyTorch's threads slow more than
TensorFlow's when another process takes a core).

Before the rounds, the parent process measures the matmul peak at the
row's own shapes, [batch x seq, H] x [H, I] (benchmarks.roofline, float32
or, with --dtype=bfloat16 where the CPU has it, bfloat16): each row's "% of
peak" and the ceiling, ours' real tokens/s at that peak with no padding.
With --write: the section, its chart (benchmarks/charts/finetuning_peers.png:
real tokens/s per contender, the peak marked) and, in float32, the first
table's fine-tuning rows.

PyTorch and transformers are a benchmark-only extra (`pip install
".[bench]"`); without them the Hugging Face rows are left out.
`--size=tiny` (H=32, 2 layers) runs in seconds, for tests.
"""

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
from typing import Optional

from benchmarks import common
from benchmarks.finetuning import peers_worker as worker

SECTION = "Fine-tuning against Hugging Face (SST-2-like and MRPC-like)"
# A run with both sides in bfloat16 (ours --dtype=bfloat16, theirs under
# torch.autocast) writes its own section, next to the float32 one.
SECTION_BFLOAT16 = ("Fine-tuning against Hugging Face in bfloat16 "
                    "(SST-2-like and MRPC-like)")
TASK_LABELS = {"sst2": "SST-2-like", "mrpc": "MRPC-like pairs"}
REFERENCE = "hf_dynamic"
# `python -m benchmarks.summary --run`'s short mode: the first table's two
# rows from our fastest contender (--pack_examples) and Hugging Face's
# (dynamic padding), 2 rounds of 4 timed steps, each in a fresh process:
# 8 processes of about 40 s, about 6 minutes on 2 cores.
SHORT_ARGS = ["--size=base", "--batch_size=32", "--seq_length=128",
              "--steps=4", "--rounds=2", "--tasks=sst2,mrpc",
              "--contenders=pack,hf_dynamic", "--dtype=float32", "--write"]


def torch_available() -> bool:
  return all(importlib.util.find_spec(name) is not None
             for name in ("torch", "transformers"))


def run_worker(contender: str, task: str, args) -> dict:
  """One worker process; its RESULT line as a dict."""
  command = [sys.executable, "-m", "benchmarks.finetuning.peers_worker",
             f"--contender={contender}", f"--task={task}",
             f"--size={args.size}", f"--batch_size={args.batch_size}",
             f"--seq_length={args.seq_length}", f"--steps={args.steps}",
             f"--dtype={args.dtype}"]
  process = subprocess.run(
      command, cwd=common.REPO_ROOT, capture_output=True, text=True,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3",
               PYTHONPATH=os.pathsep.join(
                   p for p in (common.REPO_ROOT, os.environ.get("PYTHONPATH"))
                   if p)))
  lines = [line for line in process.stdout.splitlines()
           if line.startswith("RESULT ")]
  if process.returncode or not lines:
    raise RuntimeError(f"{' '.join(command)} failed:\n"
                       f"{process.stderr[-3000:]}")
  return json.loads(lines[-1][len("RESULT "):])


def measure(contenders, tasks, args, log=print):
  """{task: [round: {contender: result}]}, contenders alternating."""
  results = {}
  for task in tasks:
    results[task] = []
    for round_index in range(args.rounds):
      shift = round_index % len(contenders)
      order = contenders[shift:] + contenders[:shift]
      outcome = {}
      for contender in order:
        outcome[contender] = result = run_worker(contender, task, args)
        log(f"{task} round {round_index + 1}: {contender} "
            f"{result['examples'] / result['seconds']:.2f} ex/s, others "
            f"{result['other_cores']:.2f} cores")
      results[task].append(outcome)
  return results


def _padding_label(contender: str, result: dict, seq: int) -> str:
  if contender == "none":
    return f"none ({seq})"
  if contender in ("pow2", "auto"):
    return f"`{contender}` ({', '.join(map(str, result['buckets']))})"
  if contender == "pack":
    return f"`--pack_examples` ({result['rows']} x {seq})"
  if contender == "hf_dynamic":
    return "dynamic"
  return str(seq)


def task_stats(results, contenders, args):
  """{task: {"used": rounds compared, "kind": "quiet" | "loaded", "quiet":
  how many were, "rounds": how many ran, "rates": {contender: (examples/s,
  real tokens/s, padded positions/s) medians over the used rounds}}}."""
  stats = {}
  for task, rounds in results.items():
    quiet = [rounds[i] for i in common.quiet_rounds(
        [max(x["other_cores"] for x in r.values()) for r in rounds],
        args.quiet_cores)]
    used = quiet or rounds

    def rate(contender, unit):
      return statistics.median(r[contender][unit] / r[contender]["seconds"]
                               for r in used)

    stats[task] = dict(
        used=used, kind="quiet" if quiet else "loaded", quiet=len(quiet),
        rounds=len(rounds),
        rates={c: (rate(c, "examples"), rate(c, "tokens"),
                   rate(c, "padded_tokens")) for c in contenders})
  return stats


def ceiling(args, rows: Optional[int] = None) -> dict:
  """The matmul peak at a step's shapes (float32, or bfloat16 where the
  CPU has it and --dtype asks), measured here, and what it allows
  (benchmarks.ceilings): FLOPs a position for ours (its last block at
  [CLS] only) and for Hugging Face (every block), and ours' real tokens/s
  at the peak with no padding. rows: the positions of one of ours'
  matmuls (default: --batch_size x --seq_length; a packed step's packed
  rows x --seq_length: smaller matmuls reach less)."""
  from albert_tf.config import AlbertConfig
  from benchmarks import ceilings
  from benchmarks import roofline
  config = AlbertConfig.from_dict(worker.config_dict(args.size))
  dtype = ("bfloat16" if args.dtype == "bfloat16" and
           roofline.bfloat16_supported() else "float32")
  rows = rows or args.batch_size * args.seq_length
  peak = roofline.step_peak(config.hidden_size, config.intermediate_size,
                            rows, dtype)
  full = ceilings.encoder_flops(config, args.seq_length,
                                training=True) / args.seq_length
  ours = ceilings.encoder_flops(config, args.seq_length, 1,
                                training=True) / args.seq_length
  print(f"{dtype} matmul peak at [{rows}, H] x [H, I]: {peak / 1e9:.1f} "
        f"GFLOP/s: at most {peak / ours:,.0f} real tokens/s", flush=True)
  return dict(peak=peak, dtype=dtype, rows=rows, ours_flops=ours,
              theirs_flops=full,
              tokens_per_s=ceilings.rate_at_peak(peak, ours))


def ours_rows(stats: dict, contender: str, args) -> int:
  """The positions one matmul of `contender` holds in the used rounds:
  a packed step's packed rows (the largest the rounds ran) x
  --seq_length; else --batch_size x --seq_length."""
  packed = [r[contender].get("rows") for r in stats["used"]
            if r[contender].get("rows")]
  return (max(packed) if packed else args.batch_size) * args.seq_length


def _share(contender: str, positions_per_s: float, roof: dict) -> str:
  from benchmarks import roofline
  flops = roof["ours_flops" if contender in worker.OURS else "theirs_flops"]
  return roofline.percent(positions_per_s * flops, roof["peak"])


def summarize(results, contenders, args, roof=None):
  """Markdown tables (one row per contender, a table per task), with the
  share of the matmul peak `roof` (see ceiling) when given, and the notes
  on quiet rounds."""
  tables, notes = [], []
  header = ["stack", "padding", "examples/s", "range",
            "padded tokens / example", "tokens / example", "vs HF dynamic",
            "real tokens/s vs HF dynamic", "rounds", "others' CPU (cores, max)"]
  if roof:
    header.append("% of peak")
  stats = task_stats(results, contenders, args)
  for task, rounds in results.items():
    used, kind, rates = (stats[task]["used"], stats[task]["kind"],
                         stats[task]["rates"])
    notes.append(f"{TASK_LABELS.get(task, task)}: {stats[task]['quiet']} of "
                 f"{len(rounds)} rounds quiet (others below "
                 f"{args.quiet_cores} cores)" +
                 ("" if kind == "quiet" else "; no quiet round: the figures "
                  "are from loaded rounds, rough"))
    # Each contender's timed steps hold other examples of the stream
    # (batching orders it), so real tokens a second compare the work done
    # more evenly than examples a second.
    reference, reference_tokens = (rates[REFERENCE][:2]
                                   if REFERENCE in contenders else (None, None))
    rows = []
    for contender in contenders:
      examples_rates = [r[contender]["examples"] / r[contender]["seconds"]
                        for r in used]
      last = used[-1][contender]
      examples = sum(r[contender]["examples"] for r in used)
      padded = sum(r[contender]["padded_tokens"] for r in used)
      tokens = sum(r[contender]["tokens"] for r in used)
      median, token_rate, positions = rates[contender]
      rows.append([
          "ours" if contender in worker.OURS else "Hugging Face",
          _padding_label(contender, last, args.seq_length),
          _figure(median),
          f"{_figure(min(examples_rates))}-{_figure(max(examples_rates))}",
          f"{padded / examples:.1f}", f"{tokens / examples:.1f}",
          f"{median / reference:.2f}x" if reference else "-",
          f"{token_rate / reference_tokens:.2f}x" if reference else "-",
          f"{len(used)} {kind}",
          f"{max(r[contender]['other_cores'] for r in used):.2f}"] + (
              [_share(contender, positions, roof)] if roof else []))
    tables.append(f"**{TASK_LABELS.get(task, task)}**\n\n" +
                  common.markdown_table(header, rows))
  if roof:
    notes.append(f"% of peak: FLOPs a padded position (ours "
                 f"{roof['ours_flops'] / 1e6:.0f} M: the last block at "
                 f"[CLS] only; Hugging Face {roof['theirs_flops'] / 1e6:.0f}"
                 f" M) x positions/s over the {roof['dtype']} matmul peak "
                 f"at [{roof['rows']}, H] x [H, I], {roof['peak'] / 1e9:.1f}"
                 " GFLOP/s, measured in this run; at that peak with no "
                 f"padding ours would train {roof['tokens_per_s']:,.0f} "
                 "real tokens/s")
  return "\n\n".join(tables), notes


def chart(stats, roof, path: str) -> str:
  """Real tokens/s of every contender per task, the peak's marked."""
  from benchmarks import charts
  names = {c: ("ours, " if c in worker.OURS else "HF, ") + c
           for rates in (s["rates"] for s in stats.values()) for c in rates}
  return charts.bars(
      path, f"Fine-tuning, {roof['dtype']}, real tokens/s", "real tokens / s",
      [(TASK_LABELS.get(task, task),
        {names[c]: r[1] for c, r in s["rates"].items()})
       for task, s in stats.items()],
      [roof["tokens_per_s"]] * len(stats))


def figures(stats, roof, args, machine: str, command: str,
            roof_at=None):
  """The first table's rows, one per task: our fastest contender against
  Hugging Face's, in real tokens/s, beside the ceiling at that
  contender's own shapes (roof_at(rows) -> a `ceiling` dict; default:
  `roof`, measured at --batch_size x --seq_length)."""
  rows = []
  for i, (task, s) in enumerate(stats.items()):
    ours = max((r[1], c) for c, r in s["rates"].items() if c in worker.OURS)
    theirs = [(r[1], c) for c, r in s["rates"].items()
              if c in worker.THEIRS]
    if not theirs:
      continue
    peer = max(theirs)
    label = TASK_LABELS.get(task, task)
    positions = ours_rows(s, ours[1], args)
    own = (roof if roof_at is None or positions == roof["rows"] else
           roof_at(positions))
    rows.append(dict(
        job=f"Fine-tuning, {label} (ALBERT-{args.size}, {args.dtype}, "
        f"batch {args.batch_size})", order=30 + i,
        ours=dict(label=f"`{ours[1]}`, {s['rates'][ours[1]][0]:.3g} "
                  "examples/s", value=round(ours[0], 1),
                  unit="real tokens/s"), contender="peer",
        peer=dict(label=f"Hugging Face `{peer[1]}`, "
                  f"{s['rates'][peer[1]][0]:.3g} examples/s",
                  value=round(peer[0], 1), unit="real tokens/s"),
        higher_is_better=True,
        ceiling=dict(label=f"ours' FLOPs at the matmul peak at "
                     f"[{own['rows']}, H] x [H, I]: "
                     f"{own['peak'] / 1e9:.0f} GFLOP/s, same run, no "
                     "padding",
                     value=round(own["tokens_per_s"], 1),
                     unit="real tokens/s"),
        reached=round(ours[0], 1), machine=machine,
        date=common.today(), command=command,
        conditions=f"{s['kind']}: {s['quiet']} of {s['rounds']} rounds "
        "quiet"))
  return rows


def _figure(value: float) -> str:
  """Three significant digits."""
  return f"{value:.3g}" if value < 1000 else f"{value:.0f}"


def parse(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--size", default="base",
                      help="base, large, ... or tiny (tests)")
  parser.add_argument("--batch_size", type=int, default=32)
  parser.add_argument("--seq_length", type=int, default=128)
  parser.add_argument("--steps", type=int, default=8,
                      help="timed steps per contender and round")
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--tasks", default="sst2,mrpc")
  parser.add_argument("--contenders",
                      default=",".join(worker.OURS + worker.THEIRS))
  parser.add_argument("--dtype", default="float32",
                      choices=("float32", "bfloat16"))
  parser.add_argument("--quiet_cores", type=float, default=0.05,
                      help="a round is quiet when other processes used "
                      "fewer cores than this during every timed window")
  parser.add_argument("--results_file", default="",
                      help="also write every round's raw results (JSON) here")
  parser.add_argument("--write", action="store_true",
                      help="update BENCHMARKS.md and its chart")
  args = parser.parse_args(argv)
  return parser, args


def main(argv=None):
  parser, args = parse(argv)
  contenders = [c.strip() for c in args.contenders.split(",") if c.strip()]
  unknown = [c for c in contenders if c not in worker.OURS + worker.THEIRS]
  tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
  if unknown or not contenders or any(t not in TASK_LABELS for t in tasks):
    parser.exit(1, f"error: --contenders={args.contenders} / --tasks="
                f"{args.tasks}: give some of "
                f"{', '.join(worker.OURS + worker.THEIRS)} / "
                f"{', '.join(TASK_LABELS)}\n")
  skipped = ""
  if not torch_available():
    skipped = ("PyTorch or transformers is not installed (`pip install "
               "\".[bench]\"`): the Hugging Face rows are left out.")
    print(skipped)
    contenders = [c for c in contenders if c in worker.OURS]
  machine = common.machine_line()
  roof = ceiling(args)
  results = measure(contenders, tasks, args)
  if args.results_file:
    with open(args.results_file, "w") as f:
      json.dump(results, f, indent=1)
  table, notes = summarize(results, contenders, args, roof)
  print(table)
  print("\n".join(notes))
  if args.write:
    command = common.command_line(
        "benchmarks.finetuning.peers",
        sys.argv[1:] if argv is None else argv)
    _write(args, command, machine, results, contenders, roof, table, notes,
           skipped)
  return results


def _write(args, command, machine, results, contenders, roof, table, notes,
           skipped):
  """The section (float32 or bfloat16), its chart and, for float32, the
  first table's figures."""
  from benchmarks import charts
  bf16 = args.dtype == "bfloat16"
  name = "finetuning_peers" + ("_bfloat16" if bf16 else "")
  stats = task_stats(results, contenders, args)
  chart(stats, roof, os.path.join(charts.CHARTS_DIR, name + ".png"))
  common.update_benchmarks_md(
      SECTION_BFLOAT16 if bf16 else SECTION, (
          f"`{command}`; {machine}, load average "
          f"{os.getloadavg()[0]:.1f} at the end. {args.dtype}; ALBERT "
          f"{args.size}, batch {args.batch_size}, `--max_seq_length="
          f"{args.seq_length}`; {args.steps} timed steps per contender and "
          "round after a warm-up that runs every batch shape once. "
          + "; ".join(notes) + ". " + skipped + "\n\n" + table +
          f"\n\n![fine-tuning against peers](benchmarks/charts/{name}.png)"),
      figures=[] if bf16 else figures(
          stats, roof, args, common.machine_label(), command,
          roof_at=lambda rows: ceiling(args, rows)),
      stage="Fine-tuning")


if __name__ == "__main__":
  main()
