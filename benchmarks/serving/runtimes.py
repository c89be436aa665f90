"""Batch-1 serving: our SavedModel and LiteRT files against ONNX Runtime (#34).

  python -m benchmarks.serving.runtimes --size=base --rounds=20 --write

With --write: its BENCHMARKS.md section (the tables below, and each path's
share of the float32 matmul peak at each workload's own rows, [batch x
length, H] x [H, I], the faster of TensorFlow's and ONNX Runtime's,
measured in the same process by benchmarks.roofline),
the first table's rows (batch 1 and 32: the SavedModel against the faster
float32 ONNX Runtime, the ceiling the batch's forward FLOPs at its peak),
benchmarks/charts/serving_latency.png.

One ALBERT encoder (`--size`'s config, random weights with LayerNorm and
biases away from 1 and 0, as trained ones are) exported once with
tools.export_savedmodel's library, then converted from that export
(runtimes_contenders.py builds them):
LiteRT float32 and dynamic int8 (export_tflite, a signature per length
bucket, auto: 32, 64, 128; batch 32 in a file of its own) and ONNX float32
and dynamic int8 (export_onnx, the same weights). In one process, every
contender with --threads threads (TensorFlow's intra-op pool, the LiteRT
interpreter's, onnxruntime's intra-op pool, which spins by default; a
second onnxruntime session of each file sets
`session.intra_op.allow_spinning=0`):

  TF SavedModel encoder       the export's serving_default (the encoder's
                              serving form, networks/layer_loop.py)
  TF encoder, layers' ops     the same weights through the Keras layers'
                              ops (the graph before #34), in memory
  LiteRT float32 / int8       the bucketed files (LiteRTModel picks the
                              smallest bucket)
  ORT float32 / int8          onnxruntime, default graph optimizations

Workloads (token ids, outputs read back): batch 1 at seq 128; a 20-token
request, sent unpadded ([1, 20]) and padded to its bucket ([1, 32], as the
raw-text exports and the LiteRT files run it); batch 32 at seq 128. A round
calls each contender once on one workload, in turn, with a --pause before
each call (onnxruntime's idle threads spin for a while after a run: without
the pause they slowed whichever contender came next, by up to 1.7x at batch
1); it records the CPU time other processes used over it (system-wide CPU
time minus this process's) and is quiet when that stays under --quiet
cores. Only quiet rounds are compared: onnxruntime's spinning pool slows
3-5x when another process takes a core, TensorFlow and LiteRT 1.4-2x. A
cell is the median over a workload's quiet rounds ("-": none, or not
applicable: LiteRT files have fixed shapes); all rounds' median too.
"""

import argparse
import os
import sys
import tempfile
import time
from typing import Callable, Dict, List, Sequence

import numpy as np

from benchmarks import common
from benchmarks.serving import runtimes_contenders

# (column, batch, real tokens, sequence length fed)
WORKLOADS = (("batch 1, seq 128", 1, 128, 128),
             ("20 tokens, unpadded", 1, 20, 20),
             ("20 tokens, bucket 32", 1, 20, 32),
             ("batch 32, seq 128", 32, 128, 128))
# `python -m benchmarks.summary --run`'s short mode: both first-table rows
# (batch 1 and 32 at 128): exports about 3 min on 2 cores, rounds about 3
# (10 min 33 s in all at load average 7-9 on a 2-core AMD EPYC).
SHORT_ARGS = ["--size=base", "--rounds=10", "--batch32_rounds=3",
              "--threads=2", "--write"]


def token_inputs(batch: int, tokens: int, seq: int, vocab_size: int,
                 seed: int = 0) -> Dict[str, np.ndarray]:
  """[CLS] + random ids + [SEP] (`tokens` real), padded to `seq`."""
  rng = np.random.default_rng(seed)
  ids = rng.integers(5, vocab_size, size=(batch, seq)).astype(np.int32)
  ids[:, 0], ids[:, tokens - 1] = 2, 3
  mask = (np.arange(seq)[None, :] < tokens).astype(np.int32)
  mask = np.repeat(mask, batch, axis=0)
  types = np.zeros((batch, seq), np.int32)
  return dict(input_word_ids=ids * mask, input_mask=mask,
              input_type_ids=types)


def run_rounds(calls: Dict[str, Callable], vocab_size: int, rounds: int,
               batch32_rounds: int, pause: float = 0.05,
               warmup: int = 2) -> Dict:
  """{column: {"times": {name: [ms per round]}, "others": [cores]}}; the
  pauses are not timed, and count in the others' CPU as idle time."""
  meter = common.CpuWindow()
  results = {}
  for column, batch, tokens, seq in WORKLOADS:
    inputs = token_inputs(batch, tokens, seq, vocab_size)
    active = {n: c for n, c in calls.items() if c(inputs) is not None}
    for call in active.values():
      for _ in range(warmup - 1):
        call(inputs)
    times = {name: [] for name in active}
    others = []
    for _ in range(batch32_rounds if batch == 32 else rounds):
      meter.start()
      for name, call in active.items():
        time.sleep(pause)
        start = time.perf_counter()
        call(inputs)
        times[name].append((time.perf_counter() - start) * 1e3)
      others.append(meter.others())
    results[column] = dict(times=times, others=others)
    print(f"{column}: other processes {np.median(others):.2f} cores "
          f"(median), {sum(o < 0.05 for o in others)}/{len(others)} rounds "
          "under 0.05", flush=True)
  return results


def _median(values: Sequence[float]):
  return float(np.median(values)) if len(values) else None


def _ms(value) -> str:
  if value is None:
    return "-"
  return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def medians(results: Dict, names: List[str], quiet: float):
  """({(name, column): ms over quiet rounds}, {...: ms over all rounds});
  None where a path cannot take a workload or no round was quiet."""
  quiet_ms, all_ms = {}, {}
  for column, *_ in WORKLOADS:
    result = results[column]
    keep = common.quiet_rounds(result["others"], quiet)
    for name in names:
      values = result["times"].get(name)
      quiet_ms[name, column] = (_median([values[i] for i in keep])
                                if values and keep else None)
      all_ms[name, column] = _median(values) if values else None
  return quiet_ms, all_ms


def forward_flops(config) -> Dict[str, float]:
  """{column: forward FLOPs of the workload's batch at its fed length}."""
  from albert_tf import parameters_and_flops
  return {column: batch * seq * parameters_and_flops.flops_per_token(
      config, seq)["encoder_forward"] for column, batch, _, seq in WORKLOADS}


def workload_peaks(hidden: int, intermediate: int,
                   threads: int = 2) -> Dict[str, Dict[str, float]]:
  """{column: {runtime: the float32 matmul peak at that workload's own rows
  (batch x fed length): [rows, H] x [H, I]}}, TensorFlow's and ONNX
  Runtime's, measured here (roofline.runtimes_step_peak). A ceiling takes
  the larger (`best_peaks`): both runtimes are contenders."""
  from benchmarks import roofline
  by_rows = {}
  for _, batch, _, seq in WORKLOADS:
    if batch * seq not in by_rows:
      by_rows[batch * seq] = roofline.runtimes_step_peak(
          hidden, intermediate, batch * seq, threads)
  return {column: by_rows[batch * seq]
          for column, batch, _, seq in WORKLOADS}


def best_peaks(peaks: Dict[str, Dict[str, float]]) -> Dict[str, float]:
  """{column: the larger runtime's peak}."""
  return {column: max(by_runtime.values())
          for column, by_runtime in peaks.items()}


def peak_table(quiet_ms: Dict, names: List[str], flops: Dict,
               peaks: Dict[str, float]) -> str:
  """Each path's achieved FLOP/s as a share of the float32 matmul peak at
  each workload's own rows."""
  from benchmarks import roofline
  rows = [[name] + [roofline.percent(flops[c] / (quiet_ms[name, c] / 1e3),
                                     peaks[c]) if quiet_ms.get((name, c))
                    else "-" for c, *_ in WORKLOADS] for name in names]
  return common.markdown_table(["path"] + [w[0] for w in WORKLOADS], rows)


def tables(results: Dict, names: List[str], quiet: float,
           flops: Dict = None, peaks: Dict[str, float] = None) -> str:
  """The quiet-round medians, the ratios, % of the matmul peak (with
  `flops` and `peaks`, see workload_peaks) and the all-round medians."""
  columns = [w[0] for w in WORKLOADS]
  quiet_ms, all_ms = medians(results, names, quiet)
  counts = [f"{len(common.quiet_rounds(results[c]['others'], quiet))}/"
            f"{len(results[c]['others'])}" for c in columns]
  quiet_rows = [[name] + [_ms(quiet_ms[name, c]) for c in columns]
                for name in names] + [["quiet rounds"] + counts]
  all_rows = [[name] + [_ms(all_ms[name, c]) for c in columns]
              for name in names]
  header = ["path"] + [f"{c} (ms)" for c in columns]
  ratio_rows = []
  for a, b in (("TF SavedModel encoder", "ORT float32"),
               ("TF SavedModel encoder", "TF encoder, layers' ops "
                "(before #34)"),
               ("LiteRT float32", "ORT float32"),
               ("LiteRT dynamic int8", "ORT int8"),
               ("ORT float32", "ORT float32, no spinning"),
               ("ORT int8", "ORT int8, no spinning")):
    cells = []
    for c in columns:
      x, y = quiet_ms.get((a, c)), quiet_ms.get((b, c))
      cells.append(f"{x / y:.2f}x" if x and y else "-")
    ratio_rows.append([f"{a} / {b}"] + cells)
  peak_part = [] if not peaks else [
      "Share of the float32 matmul peak at each workload's own rows "
      "([batch x fed length, H] x [H, I], the faster of TensorFlow's and "
      "ONNX Runtime's, measured in this run: " +
      ", ".join(f"{c} {peaks[c] / 1e9:.1f} GFLOP/s" for c in columns) +
      "; forward FLOPs at the fed length, quiet rounds; int8 paths can "
      "pass it):", peak_table(quiet_ms, names, flops, peaks)]
  return "\n\n".join([
      f"Medians of quiet rounds (other processes < {quiet:g} cores):",
      common.markdown_table(header, quiet_rows),
      "Time ratios (quiet rounds; below 1: the first is faster):",
      common.markdown_table(["ratio"] + columns, ratio_rows)] + peak_part + [
      "Medians of all rounds, quiet or not:",
      common.markdown_table(header, all_rows)])


def measure(size: str, rounds: int, threads: int,
            batch32_rounds: int = None, pause: float = 0.05) -> Dict:
  """Every path's times and the float32 matmul peak at each workload's
  own rows, in this process: {results, names, sizes, flops, peaks}."""
  with tempfile.TemporaryDirectory() as work:
    built = runtimes_contenders.build_exports(size, work)
    calls = runtimes_contenders.contenders(built, threads)
    config = built["config"]
    peaks = workload_peaks(config.hidden_size, config.intermediate_size,
                           threads)
    print("float32 matmul peak at each workload's rows: " + "; ".join(
        f"{c}: " + ", ".join(f"{r} {p / 1e9:.1f}" for r, p in by.items()) +
        " GFLOP/s" for c, by in peaks.items()), flush=True)
    results = run_rounds(calls, config.vocab_size, rounds,
                         batch32_rounds or rounds, pause)
  return dict(results=results, names=list(calls), sizes=built["sizes"],
              flops=forward_flops(config), peaks=peaks)


def report(measured: Dict, quiet: float) -> str:
  sizes = ", ".join(f"{k} {v / 1e6:.2f} MB"
                    for k, v in measured["sizes"].items())
  return tables(measured["results"], measured["names"], quiet,
                measured["flops"], best_peaks(measured["peaks"])) + (
                    f"\n\nSizes: {sizes}.")


def run(size: str, rounds: int, threads: int, quiet: float,
        batch32_rounds: int = None, pause: float = 0.05) -> str:
  """The report (see the module docstring)."""
  return report(measure(size, rounds, threads, batch32_rounds, pause), quiet)


OURS = "TF SavedModel encoder"
PEERS = ("ORT float32", "ORT float32, no spinning")


def chart(measured: Dict, quiet: float, path: str) -> str:
  """Batch-1 latency against the fed length, one line per path."""
  from benchmarks import charts
  quiet_ms, _ = medians(measured["results"], measured["names"], quiet)
  series = {name: [(seq, quiet_ms[name, column])
                   for column, batch, _, seq in WORKLOADS
                   if batch == 1 and quiet_ms.get((name, column))]
            for name in measured["names"]}
  return charts.lines(path, "Latency at batch 1 (quiet rounds)",
                      "tokens a request (fed length)", "ms (lower is better)",
                      {k: v for k, v in series.items() if v})


def figures(measured: Dict, quiet: float, size: str, machine: str,
            command: str) -> List[Dict]:
  """The first table's rows: batch 1 and batch 32 at SEQ, ours (the
  SavedModel) against the faster float32 ONNX Runtime, the ceiling the
  batch's forward FLOPs at the matmul peak at its own rows ([batch x SEQ,
  H] x [H, I]) of the faster of the two runtimes (a peer passing a
  ceiling of TensorFlow's matmuls alone showed it was no limit), all
  measured in this run."""
  quiet_ms, _ = medians(measured["results"], measured["names"], quiet)
  rows = []
  for order, column in ((40, "batch 1, seq 128"), (41, "batch 32, seq 128")):
    others = measured["results"][column]["others"]
    kept = len(common.quiet_rounds(others, quiet))
    ours = quiet_ms.get((OURS, column))
    peers = [(quiet_ms[p, column], p) for p in PEERS
             if quiet_ms.get((p, column))]
    if not ours or not peers:
      continue
    peer_ms, peer = min(peers)
    by_runtime = measured["peaks"][column]
    peak = max(by_runtime.values())
    rows_ = next(b * n for c, b, _, n in WORKLOADS if c == column)
    ceiling = measured["flops"][column] / peak * 1e3
    rows.append(dict(
        job=f"Serving, {column.replace('seq', 'sequence')} (ALBERT-{size}, "
        "float32)", order=order,
        ours=dict(label="TF SavedModel", value=round(ours, 1), unit="ms"),
        peer=dict(label=peer, value=round(peer_ms, 1), unit="ms"),
        contender="peer", higher_is_better=False,
        ceiling=dict(label=f"matmul peak at [{rows_}, H] x [H, I], the "
                     "faster runtime's (" + ", ".join(
                         f"{r} {p / 1e9:.0f}" for r, p in by_runtime.items())
                     + f" GFLOP/s): {peak / 1e9:.0f} GFLOP/s, same run",
                     value=round(ceiling, 1), unit="ms"),
        reached=round(ours, 1), machine=machine,
        date=common.today(), command=command,
        conditions=f"quiet: {kept} of {len(others)} rounds"))
  return rows


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--size", default="base",
                      help="base, large, ... (configs/), a config .json, "
                      "or tiny (H=32, 2 layers: a quick check)")
  parser.add_argument("--rounds", type=int, default=20)
  parser.add_argument("--batch32_rounds", type=int, default=None,
                      help="rounds of the batch-32 workload (default "
                      "--rounds)")
  parser.add_argument("--threads", type=int, default=2)
  parser.add_argument("--quiet", type=float, default=0.05,
                      help="a round is quiet when other processes used "
                      "less than this many cores over it")
  parser.add_argument("--pause", type=float, default=0.05,
                      help="seconds before each call (not timed): "
                      "onnxruntime's spinning threads go idle")
  parser.add_argument("--write", action="store_true",
                      help="update BENCHMARKS.md")
  args = parser.parse_args(argv)
  if args.size != "tiny" and argv is None:
    args = common.parse_args(parser)
  import tensorflow as tf
  tf.config.threading.set_intra_op_parallelism_threads(args.threads)
  measured = measure(args.size, args.rounds, args.threads,
                     args.batch32_rounds, args.pause)
  text = report(measured, args.quiet)
  print(text)
  if args.write:
    write(args, measured, text, common.command_line(
        "benchmarks.serving.runtimes", sys.argv[1:] if argv is None else argv))


def write(args, measured: Dict, text: str, command: str) -> None:
  """The section, its chart and the first table's two rows."""
  from benchmarks import charts
  chart(measured, args.quiet,
        os.path.join(charts.CHARTS_DIR, "serving_latency.png"))
  common.update_benchmarks_md(
      "Serving latency against ONNX Runtime",
      f"`{command}`; {common.machine_line()}. " + _NOTE + "\n\n" + text +
      "\n\n![serving latency](benchmarks/charts/serving_latency.png)",
      figures=figures(measured, args.quiet, args.size,
                      common.machine_label(), command), stage="Serving")


_NOTE = (
    "One encoder, random weights, exported once and converted from that "
    "export (LiteRT: export_tflite with length buckets; ONNX: export_onnx, "
    "tf2onnx, dynamic int8 per-channel), all in one process with the same "
    "number of threads, calls alternating; a round is quiet when other "
    "processes used less than the threshold over it, and only quiet rounds "
    "are compared (benchmarks/serving/runtimes.py says why).")


if __name__ == "__main__":
  main()
