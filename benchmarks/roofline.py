"""The matmul peak at the shapes of a step: the ceiling of every ratio.

  python -m benchmarks.roofline --sizes=base,large --rows=1024,4096

A training or serving step of ALBERT spends most of its time (79% of op
time in a profiled fine-tuning step) in the feed-forward and projection
matmuls, so the fastest a step can go is the FLOP/s that TensorFlow's
kernels reach on those shapes here. This measures float32 (and bfloat16
where the CPU has AVX512_BF16 or AMX_BF16) matmuls of [rows, H] x [H, I]
and [rows, I] x [I, H] for each size at each row count (rows = batch x
sequence: 1024 is 8 x 128, 4096 is 8 x 512) and a large square, best of
--repeats each, and prints one table. The harnesses call `step_peak` in
their own process, right before timing, so every ratio they print stands
beside "% of peak" measured under the same conditions.
"""

import argparse
import time
from typing import Dict, List, Optional, Sequence

from albert_common import cpu_features

SQUARE = 2048


def bfloat16_supported(cpuinfo: Optional[str] = None) -> bool:
  """True when the CPU multiplies bfloat16 natively (AVX512_BF16 or
  AMX_BF16 in its flags; cpuinfo: /proc/cpuinfo's text, this machine's by
  default); elsewhere TensorFlow emulates it, slower than float32, and there
  is no bfloat16 peak to report."""
  return bool({"avx512_bf16", "amx_bf16"} & cpu_features.cpu_flags(cpuinfo))


def _best_seconds(call, repeats: int) -> float:
  """The fastest of `repeats` timed calls of `call`, after one warm-up."""
  call()
  best = float("inf")
  for _ in range(repeats):
    start = time.perf_counter()
    call()
    best = min(best, time.perf_counter() - start)
  return best


def matmul_flops(m: int, k: int, n: int, dtype: str = "float32",
                 repeats: int = 5) -> float:
  """Achieved FLOP/s of [m, k] x [k, n] in `dtype`: the best of `repeats`
  timed calls after one warm-up (a peak, not a typical)."""
  import tensorflow as tf
  a = tf.cast(tf.random.stateless_normal([m, k], seed=[1, 2]), dtype)
  b = tf.cast(tf.random.stateless_normal([k, n], seed=[3, 4]), dtype)
  matmul = tf.function(lambda x, y: tf.matmul(x, y))
  return 2.0 * m * k * n / _best_seconds(lambda: matmul(a, b).numpy(),
                                         repeats)


def step_shapes(hidden: int, intermediate: int, rows: int) -> List[tuple]:
  """(m, k, n) of a step's feed-forward matmuls at `rows` rows."""
  return [(rows, hidden, intermediate), (rows, intermediate, hidden)]


def step_peak(hidden: int, intermediate: int, rows: int,
              dtype: str = "float32", repeats: int = 3) -> float:
  """FLOP/s: the better of the step's two feed-forward shapes at `rows`."""
  return max(matmul_flops(*shape, dtype, repeats)
             for shape in step_shapes(hidden, intermediate, rows))


def onnx_matmul_flops(m: int, k: int, n: int, threads: int = 2,
                      repeats: int = 5) -> float:
  """Achieved FLOP/s of ONNX Runtime's float32 MatMul of [m, k] x [k, n]
  with `threads` intra-op threads, the [k, n] operand a constant (as a
  model's weights, which ONNX Runtime prepacks): the best of `repeats`
  timed calls after one warm-up."""
  import numpy as np
  import onnx
  from onnx import helper
  import onnxruntime
  rng = np.random.default_rng(0)
  weights = rng.standard_normal((k, n)).astype(np.float32)
  graph = helper.make_graph(
      [helper.make_node("MatMul", ["a", "b"], ["c"])], "matmul",
      [helper.make_tensor_value_info("a", onnx.TensorProto.FLOAT, [m, k])],
      [helper.make_tensor_value_info("c", onnx.TensorProto.FLOAT, [m, n])],
      [onnx.numpy_helper.from_array(weights, "b")])
  model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
  options = onnxruntime.SessionOptions()
  options.intra_op_num_threads = threads
  session = onnxruntime.InferenceSession(
      model.SerializeToString(), options, providers=["CPUExecutionProvider"])
  feed = {"a": rng.standard_normal((m, k)).astype(np.float32)}
  return 2.0 * m * k * n / _best_seconds(lambda: session.run(None, feed),
                                         repeats)


def runtimes_step_peak(hidden: int, intermediate: int, rows: int,
                       threads: int = 2, repeats: int = 3) -> Dict[str, float]:
  """{runtime: FLOP/s}: the better of the step's two feed-forward shapes
  at `rows`, in TensorFlow and in ONNX Runtime (float32). A ceiling for a
  comparison of runtimes takes the larger: a ceiling one contender passes
  is not a limit."""
  shapes = step_shapes(hidden, intermediate, rows)
  return {"TensorFlow": step_peak(hidden, intermediate, rows,
                                  repeats=repeats),
          "ONNX Runtime": max(onnx_matmul_flops(*shape, threads, repeats)
                              for shape in shapes)}


def serving_peak(hidden: int, intermediate: int, seq: int,
                 batches=(1, 32)) -> float:
  """FLOP/s: the best of a step's shapes at every batch's rows (batch x
  seq): the ceiling of serving calls of those batches."""
  return max(step_peak(hidden, intermediate, b * seq) for b in batches)


def percent(achieved: float, peak: float) -> str:
  """"80%" ("-" without a peak): achieved FLOP/s as a share of the peak."""
  return f"{achieved / peak:.0%}" if peak and achieved == achieved else "-"


def torch_matmul_flops(m: int, k: int, n: int, threads: int = 2,
                       repeats: int = 5) -> float:
  """Achieved FLOP/s of PyTorch's float32 matmul of [m, k] x [k, n] on
  the CPU with `threads` intra-op threads: the best of `repeats` timed
  calls after one warm-up (a ceiling for a comparison with a PyTorch
  contender takes the faster framework's)."""
  import torch
  torch.set_num_threads(threads)
  generator = torch.Generator().manual_seed(0)
  a = torch.randn(m, k, generator=generator)
  b = torch.randn(k, n, generator=generator)
  with torch.inference_mode():
    return 2.0 * m * k * n / _best_seconds(lambda: torch.matmul(a, b),
                                           repeats)


def torch_step_peak(hidden: int, intermediate: int, rows: int,
                    threads: int = 2, repeats: int = 3) -> float:
  """FLOP/s: step_peak's shapes in PyTorch."""
  return max(torch_matmul_flops(*shape, threads, repeats)
             for shape in step_shapes(hidden, intermediate, rows))


def measure(sizes: Sequence[str], rows: Sequence[int],
            dtypes: Sequence[str], repeats: int) -> List[Dict]:
  """One dict per shape and dtype: label, m, k, n, dtype, flops."""
  from benchmarks import common
  shapes = []
  for size in sizes:
    config = common.load_config(size)
    for r in rows:
      for m, k, n in step_shapes(config.hidden_size,
                                 config.intermediate_size, r):
        shapes.append((f"{common.size_label(size)}, {r} rows", m, k, n))
  shapes.append(("square", SQUARE, SQUARE, SQUARE))
  return [dict(label=label, m=m, k=k, n=n, dtype=dtype,
               flops=matmul_flops(m, k, n, dtype, repeats))
          for label, m, k, n in shapes for dtype in dtypes]


def table(results: Sequence[Dict]) -> str:
  from benchmarks import common
  peaks = {d: max(r["flops"] for r in results if r["dtype"] == d)
           for d in {r["dtype"] for r in results}}
  rows = [[r["label"], f"[{r['m']}, {r['k']}] x [{r['k']}, {r['n']}]",
           r["dtype"], f"{r['flops'] / 1e9:.1f}",
           percent(r["flops"], peaks[r["dtype"]])] for r in results]
  return common.markdown_table(
      ["shape", "matmul", "dtype", "GFLOP/s", "% of the dtype's best"], rows)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--sizes", default="base,large")
  parser.add_argument("--rows", default="1024,4096",
                      help="rows of a step's matmuls: batch x sequence")
  parser.add_argument("--dtypes", default="",
                      help="default: float32, and bfloat16 where supported")
  parser.add_argument("--repeats", type=int, default=5)
  from benchmarks import common
  args = (common.parse_args(parser) if argv is None else
          parser.parse_args(argv))
  dtypes = (args.dtypes.split(",") if args.dtypes else
            ["float32"] + (["bfloat16"] if bfloat16_supported() else []))
  results = measure(args.sizes.split(","),
                    [int(r) for r in args.rows.split(",")], dtypes,
                    args.repeats)
  print(f"{common.machine_line()}; bfloat16 native: "
        f"{'yes' if bfloat16_supported() else 'no'}\n")
  print(table(results))
  return results


if __name__ == "__main__":
  main()
