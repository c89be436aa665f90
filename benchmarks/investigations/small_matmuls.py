"""ALBERT's matmuls at few rows: TensorFlow's kernels against ONNX Runtime's.

  python -m benchmarks.investigations.small_matmuls --rows=1,8,20,32,64,128 \
      --write

What limits a batch-1 serving call of our SavedModel (#34): the graph, or
the matrix-multiply kernels under it? This runs only the matmuls of a
batch-1 ALBERT-base call -- per layer x @ W_qkv [H, 3H], its first H
columns @ W_o [H, H], @ W_in [H, I], @ W_out [I, H]; 12 layers, one shared
set of weights -- for `rows` tokens, as one graph in each runtime:

  TF       a tf.function over tf.Variables (as a SavedModel holds them),
           oneDNN's kernels (TensorFlow's default on x86)
  TF, Eigen  the same with TF_ENABLE_ONEDNN_OPTS=0 (in a subprocess)
  ORT      the same ops as an ONNX graph (MatMul, Slice), the weights as
           initializers, which onnxruntime packs once at load

each with --threads intra-op threads, calls alternating. Nothing else
runs: no attention, LayerNorm or activations, so the figures bound from
below what any graph built of these runtimes' MatMul kernels can do.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Dict, List, Sequence

import numpy as np

from benchmarks import common

SECTION = "Batch-1 matmuls: TensorFlow's kernels against ONNX Runtime's"
HIDDEN, INTERMEDIATE, LAYERS = 768, 3072, 12
SHAPES = ((HIDDEN, 3 * HIDDEN), (HIDDEN, HIDDEN), (HIDDEN, INTERMEDIATE),
          (INTERMEDIATE, HIDDEN))


def weights(seed: int = 0) -> List[np.ndarray]:
  rng = np.random.default_rng(seed)
  return [rng.normal(0.0, 0.02, shape).astype(np.float32)
          for shape in SHAPES]


def flops(rows: int) -> float:
  """Multiply-adds x 2 of one call."""
  return 2.0 * rows * LAYERS * sum(a * b for a, b in SHAPES)


def set_tf_threads(threads: int):
  """Before TensorFlow's first op: its thread pools are fixed after."""
  import tensorflow as tf
  tf.config.threading.set_intra_op_parallelism_threads(threads)


def tf_call(values: Sequence[np.ndarray]):
  """f(x [rows, H]) -> numpy, the layers' matmuls on tf.Variables, in
  TensorFlow's thread pools as this process set them (set_tf_threads)."""
  import tensorflow as tf
  qkv, out, inner, outer = [tf.Variable(v) for v in values]

  @tf.function(input_signature=[tf.TensorSpec([None, HIDDEN], tf.float32)])
  def layers(x):
    for _ in range(LAYERS):
      h = tf.matmul(x, qkv)[:, :HIDDEN]  # (rows, H)
      x = tf.matmul(tf.matmul(tf.matmul(h, out), inner), outer)
    return x
  return lambda x: layers(x).numpy()


def onnx_model(values: Sequence[np.ndarray]) -> bytes:
  """The same layers as an ONNX graph, the weights as initializers."""
  import onnx
  from onnx import TensorProto
  from onnx import helper
  from onnx import numpy_helper
  names = ["w_qkv", "w_o", "w_in", "w_out"]
  initializers = [numpy_helper.from_array(v, name)
                  for v, name in zip(values, names)]
  initializers += [numpy_helper.from_array(np.array(v, np.int64), name)
                   for v, name in (([0], "starts"), ([HIDDEN], "ends"),
                                   ([1], "axes"))]
  nodes, x = [], "x"
  for layer in range(LAYERS):
    t = f"l{layer}_"
    nodes += [helper.make_node("MatMul", [x, "w_qkv"], [t + "qkv"]),
              helper.make_node("Slice", [t + "qkv", "starts", "ends",
                                         "axes"], [t + "q"]),
              helper.make_node("MatMul", [t + "q", "w_o"], [t + "o"]),
              helper.make_node("MatMul", [t + "o", "w_in"], [t + "i"]),
              helper.make_node("MatMul", [t + "i", "w_out"], [t + "x"])]
    x = t + "x"
  graph = helper.make_graph(
      nodes, "albert_matmuls",
      [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                     ["rows", HIDDEN])],
      [helper.make_tensor_value_info(x, TensorProto.FLOAT,
                                     ["rows", HIDDEN])],
      initializers)
  model = helper.make_model(graph, opset_imports=[helper.make_opsetid("",
                                                                      17)])
  onnx.checker.check_model(model)
  return model.SerializeToString()


def ort_call(values: Sequence[np.ndarray], threads: int):
  import onnxruntime as ort
  options = ort.SessionOptions()
  options.intra_op_num_threads = threads
  options.inter_op_num_threads = 1
  session = ort.InferenceSession(onnx_model(values), options,
                                 providers=["CPUExecutionProvider"])
  return lambda x: session.run(None, {"x": x})[0]


def time_calls(calls: Dict, rows: Sequence[int], repeats: int,
               pause: float) -> Dict:
  """{name: {rows: median ms}}, the calls alternating within a repeat."""
  rng = np.random.default_rng(1)
  times = {name: {} for name in calls}
  for n in rows:
    x = rng.normal(0.0, 1.0, (n, HIDDEN)).astype(np.float32)
    for call in calls.values():
      for _ in range(3):
        call(x)
    samples = {name: [] for name in calls}
    for _ in range(repeats):
      for name, call in calls.items():
        time.sleep(pause)  # onnxruntime's spinning threads go idle
        start = time.perf_counter()
        call(x)
        samples[name].append((time.perf_counter() - start) * 1e3)
    for name in calls:
      times[name][n] = float(np.median(samples[name]))
  return times


def eigen_times(rows: Sequence[int], repeats: int, threads: int,
                pause: float) -> Dict[int, float]:
  """TF with oneDNN off: a subprocess (the switch is read at import)."""
  command = [sys.executable, "-m", "benchmarks.investigations.small_matmuls",
             "--only_tf", f"--rows={','.join(map(str, rows))}",
             f"--repeats={repeats}", f"--threads={threads}",
             f"--pause={pause}"]
  output = subprocess.run(
      command, cwd=common.REPO_ROOT, check=True, capture_output=True,
      text=True, env=dict(os.environ, TF_ENABLE_ONEDNN_OPTS="0",
                          TF_CPP_MIN_LOG_LEVEL="3")).stdout
  line = [x for x in output.splitlines() if x.startswith("RESULT ")][-1]
  return {int(k): v for k, v in json.loads(line[len("RESULT "):]).items()}


def measure(rows: Sequence[int], repeats: int, threads: int,
            pause: float) -> Dict:
  """{"TF" | "TF, Eigen" | "ORT": {rows: median ms}}; first checks that
  both runtimes compute the same."""
  values = weights()
  calls = {"TF": tf_call(values), "ORT": ort_call(values, threads)}
  check = np.ones((4, HIDDEN), np.float32)
  np.testing.assert_allclose(calls["TF"](check), calls["ORT"](check),
                             rtol=1e-3, atol=1e-5)
  times = time_calls(calls, rows, repeats, pause)
  return {"TF": times["TF"],
          "TF, Eigen": eigen_times(rows, repeats, threads, pause),
          "ORT": times["ORT"]}


def report(times: Dict, rows: Sequence[int]) -> str:
  header = ["rows (tokens)"] + [f"{name} ms" for name in times] + [
      f"{name} GFLOP/s" for name in times] + ["TF / ORT"]
  table = []
  for n in rows:
    ms = [times[name][n] for name in times]
    table.append([n] + [f"{t:.1f}" for t in ms] +
                 [f"{flops(n) / t / 1e6:.0f}" for t in ms] +
                 [f"{times['TF'][n] / times['ORT'][n]:.2f}x"])
  return common.markdown_table(header, table)


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--rows", default="1,8,20,32,64,128")
  parser.add_argument("--repeats", type=int, default=15)
  parser.add_argument("--threads", type=int, default=2)
  parser.add_argument("--pause", type=float, default=0.05)
  parser.add_argument("--only_tf", action="store_true",
                      help="(internal) time TF alone, print a RESULT line")
  parser.add_argument("--write", action="store_true",
                      help="update BENCHMARKS.md")
  args = parser.parse_args()
  rows = [int(n) for n in args.rows.split(",")]
  set_tf_threads(args.threads)
  if args.only_tf:
    times = time_calls({"TF": tf_call(weights())}, rows,
                       args.repeats, args.pause)
    print("RESULT " + json.dumps(times["TF"]))
    return
  machine = common.machine_line()
  table = report(measure(rows, args.repeats, args.threads, args.pause), rows)
  print(table)
  if args.write:
    command = ("python -m benchmarks.investigations.small_matmuls "
               f"--rows={args.rows} "
               f"--repeats={args.repeats} --threads={args.threads} --write")
    common.update_benchmarks_md(SECTION, (
        f"`{command}`; {machine}. Only the matmuls of a batch-1 ALBERT-base "
        f"call (per layer [rows, {HIDDEN}] @ [{HIDDEN}, {3 * HIDDEN}], its "
        f"first {HIDDEN} columns @ [{HIDDEN}, {HIDDEN}], @ [{HIDDEN}, "
        f"{INTERMEDIATE}], @ [{INTERMEDIATE}, {HIDDEN}]; {LAYERS} layers, "
        "one shared set of weights), one graph per runtime, "
        f"{args.threads} threads each, medians of {args.repeats} "
        "alternating calls (TF with oneDNN off runs in its own process). "
        "TF reads tf.Variables, as a SavedModel does; onnxruntime packs its "
        "initializers once at load.\n\n" + table))


if __name__ == "__main__":
  main()
