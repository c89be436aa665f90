"""Which part of the fused inference graph costs a short request (#40)?

  python -m benchmarks.investigations.short_requests --size=base --rounds=30

The fused graph (then networks/inference_graph.py; now the serving form of
networks/layer_loop.py, which runs layers/shared_block.py on 2-D rows) was
1.07x (Intel) and 1.12x (AMD) slower than the layers' ops on a 20-token
request, and as fast or faster from 128 rows. One process, one ALBERT
encoder (random weights), 2 threads; contenders called in turn
(alternating), medians of quiet rounds, ms per call, outputs read back:

  fused, in memory          AlbertEncoder's call (the serving form) in a
                            tf.function: query, key and value projected
                            by three MatMuls on the variables
  fused, [H, 3H] per call   the fused graph as it was before #40: one
  (before)                  MatMul on the three kernels concatenated (and
                            the query's scaled) on every call
  layers, in memory         fused_inference=False: the Keras layers' graph
                            (since #49 its sublayers run the same shared
                            block, reshaping [batch, seq, H] to rows; the
                            embeddings through the embedding layer)
  fused, SavedModel         the encoder's call saved as a signature and
                            reloaded
  layers, SavedModel        the same, fused_inference=False

at [1, 20], [1, 32], [1, 64], [1, 128] and [8, 128].
"""

import argparse
import os
import tempfile
import time

import numpy as np

from benchmarks import common

SHAPES = ((1, 20), (1, 32), (1, 64), (1, 128), (8, 128))


def _inputs(batch, seq, vocab, rng):
  return {"input_word_ids": rng.integers(5, vocab, (batch, seq)).astype(
              np.int32),
          "input_mask": np.ones((batch, seq), np.int32),
          "input_type_ids": np.zeros((batch, seq), np.int32)}


def _concatenated_attention():
  """The serving form's attention before #40, as a subclass of the shared
  block's (layers/shared_block.py): one MatMul on the query, key and value
  kernels concatenated (the scale folded into the query columns) on every
  call; the rest (scores, softmax, output projection, LayerNorm) is the
  shared block's."""
  import tensorflow as tf

  from albert_tf.layers import shared_block

  class ConcatenatedAttention(shared_block.Attention):

    def __call__(self, rows, batch, seq, bias, query_rows=None,
                 training=None, with_probs=False):
      del query_rows, training, with_probs  # serving only, as before #40
      projections = [self._projection(i) for i in range(3)]
      scales = (self.scale, 1.0, 1.0)
      qkv_kernel = tf.concat([k * s for (k, _), s in
                              zip(projections, scales)], axis=1)  # (H, 3H)
      qkv_bias = tf.concat([b * s for (_, b), s in
                            zip(projections, scales)], axis=0)  # (3H,)
      qkv = shared_block.dense(rows, qkv_kernel, qkv_bias)  # (B*S, 3H)
      query, key, value = (self._heads(t, batch, seq)
                           for t in tf.split(qkv, 3, axis=1))
      context, _ = shared_block.attention_context(query, key, value, bias)
      context = tf.reshape(tf.transpose(context, [0, 2, 1, 3]),
                           [-1, self.hidden])  # (B*S, H)
      y = shared_block.dense(context, *self._projection(3))
      return shared_block.layer_norm(self.sublayer.layer_norm, rows + y)

  return ConcatenatedAttention


def _concatenated(encoder):
  """A tf.function of the serving form (networks/layer_loop.py) with the
  shared block's Attention replaced by the concatenated one while it
  traces."""
  import tensorflow as tf

  from albert_tf.layers import shared_block
  from albert_tf.networks import layer_loop
  concatenated = _concatenated_attention()

  def call(inputs):
    current = shared_block.Attention
    shared_block.Attention = concatenated
    try:
      return layer_loop.run(encoder, inputs, training=False)
    finally:
      shared_block.Attention = current
  return tf.function(call)


def _repeated(fn, calls):
  def repeated():
    for _ in range(calls):
      common.wait_for(fn())
  return repeated


def _serving(encoder):
  def serve(input_word_ids, input_mask, input_type_ids):
    outputs = encoder(dict(input_word_ids=input_word_ids,
                           input_mask=input_mask,
                           input_type_ids=input_type_ids), training=False)
    return {k: outputs[k] for k in ("pooled_output", "sequence_output")}
  return serve


def run(size: str, rounds: int, threads: int, quiet: float):
  import tensorflow as tf
  import tf_keras

  from albert_tf.networks.albert_encoder import AlbertEncoder
  tf.config.threading.set_intra_op_parallelism_threads(threads)
  tf.config.threading.set_inter_op_parallelism_threads(1)
  config = common.load_config(size)
  tf_keras.utils.set_random_seed(0)
  fused = AlbertEncoder(config)
  layers = AlbertEncoder(config, fused_inference=False)
  layers.set_weights(fused.get_weights())
  work = tempfile.mkdtemp()
  spec = [tf.TensorSpec([None, None], tf.int32, name=k)
          for k in ("input_word_ids", "input_mask", "input_type_ids")]
  saved = {}
  for name, encoder in (("fused", fused), ("layers", layers)):
    module = tf.Module()
    module.encoder = encoder
    module.serve = tf.function(_serving(encoder), input_signature=spec)
    path = os.path.join(work, name)
    tf.saved_model.save(module, path, signatures={
        "serving_default": module.serve.get_concrete_function()})
    saved[name] = tf.saved_model.load(path).signatures["serving_default"]
  in_memory = {name: tf.function(lambda x, e=e: e(x, training=False))
               for name, e in (("fused", fused), ("layers", layers))}
  concatenated = _concatenated(fused)
  rng = np.random.default_rng(0)
  results = {}
  for batch, seq in SHAPES:
    x = {k: tf.constant(v) for k, v in
         _inputs(batch, seq, config.vocab_size, rng).items()}
    contenders = {
        "fused, in memory": lambda: in_memory["fused"](x),
        "fused, [H, 3H] per call (before)": lambda: concatenated(x),
        "layers, in memory": lambda: in_memory["layers"](x),
        "fused, SavedModel": lambda: saved["fused"](**x),
        "layers, SavedModel": lambda: saved["layers"](**x),
    }
    want = in_memory["layers"](x)["pooled_output"].numpy()
    for name, fn in contenders.items():
      got = fn()["pooled_output"].numpy()
      np.testing.assert_allclose(got, want, atol=1e-4, err_msg=name)
    # A round calls each contender `calls` times (about 0.3 s each), long
    # enough for /proc/stat's ticks to see another process.
    start = time.perf_counter()
    common.wait_for(contenders["layers, in memory"]())
    calls = max(1, int(0.3 / (time.perf_counter() - start)))
    times = {name: [] for name in contenders}
    others = []
    for _ in range(rounds):
      with common.CpuWindow() as window:
        one = common.time_alternating(
            {name: _repeated(fn, calls) for name, fn in contenders.items()},
            1, warmup=0)
      others.append(window.other_cores)
      for name in contenders:
        times[name].append(one[name][0] * 1e3 / calls)
    quiet_ones = common.quiet_rounds(others, quiet)
    kept = quiet_ones or list(range(rounds))  # none quiet: all, marked 0
    results[(batch, seq)] = (
        {name: common.median([t[i] for i in kept])
         for name, t in times.items()}, len(quiet_ones))
    print(f"[{batch}, {seq}]", {k: round(v, 2) for k, v in
                                results[(batch, seq)][0].items()},
          f"quiet rounds {len(quiet_ones)} of {rounds}", flush=True)
  return results


def report(results) -> str:
  names = list(next(iter(results.values()))[0])
  rows = [[f"[{b}, {s}]"] + [f"{t[n]:.2f}" for n in names] +
          [f"{t['fused, in memory'] / t['layers, in memory']:.3f}",
           f"{quiet}"]
          for (b, s), (t, quiet) in results.items()]
  return common.markdown_table(
      ["shape"] + names + ["fused / layers (in memory)",
                           "quiet rounds (0: all rounds, loaded)"],
      rows)


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--size", default="base")
  parser.add_argument("--rounds", type=int, default=30)
  parser.add_argument("--threads", type=int, default=2)
  parser.add_argument("--quiet", type=float, default=0.1)
  parser.add_argument("--write", action="store_true")
  args = common.parse_args(parser)
  machine = common.machine_line()
  table = report(run(args.size, args.rounds, args.threads, args.quiet))
  print(table)
  print(machine)
  if args.write:
    common.update_benchmarks_md(
        "Short requests: the fused graph against the layers' ops",
        "`python -m benchmarks.investigations.short_requests "
        f"--size={args.size} --rounds={args.rounds} --write`; "
        f"ALBERT-{common.size_label(args.size)}, {machine}. Milliseconds "
        "per call, medians of the quiet rounds (other processes below "
        f"{args.quiet} cores), contenders alternating.\n\n" + table,
        stage="Investigations")


if __name__ == "__main__":
  main()
