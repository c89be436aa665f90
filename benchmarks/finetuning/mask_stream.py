"""Runs a tool with its dropout masks drawn from another stream:

  python benchmarks/finetuning/mask_stream.py STREAM MODULE [FLAGS...]

is `python -m MODULE FLAGS...` in which every dropout mask is drawn from
another stream: every stateless seed the code tree draws
(layers.checkpointed_dropout's next seed: `next_seed` today, `_next_seed`
at 5f0f06f) is folded with STREAM first. Today every training mask is
drawn under a seeded scope (one per update); at 5f0f06f only the encoder
blocks' are, and the embedding and head dropouts draw from their layers'
generators, so a training call outside any scope is put under a scope of
a seed drawn from its layer's generator (`make_seeds`: the generator
advances once a call, as a draw would), and so folded too. Data order,
initial weights, the optimizer and everything else stay those of the
plain run. So runs that differ only by STREAM measure how far one mask
realization moves a result.

Run as a script (not `-m`), with PYTHONPATH at the code tree whose tool
it runs: the tree may predate this file.
"""

import contextlib
import runpy
import sys
import threading

# Far from the fold indices the code itself uses (call counts).
STREAM_BASE = 1_000_003


def shift_seeds(stream: int) -> None:
  """Folds `stream` into every seed the tree's next-seed function returns,
  in its module and in every module that imported it by name."""
  import tensorflow as tf

  from albert_tf.layers import checkpointed_dropout as dropout
  name = "next_seed" if hasattr(dropout, "next_seed") else "_next_seed"
  original = getattr(dropout, name)

  def shifted():
    seed = original()
    if seed is None:
      return None
    return tf.random.experimental.stateless_fold_in(seed,
                                                    STREAM_BASE + stream)

  shifted.__name__ = name
  _replace(original, shifted)
  _scope_unscoped_calls(dropout)


def _scope_unscoped_calls(dropout) -> None:
  """A training call (rate > 0) outside any seeded scope runs under a scope
  of a seed from the layer's own generator, so its mask is a stateless
  one of the shifted seeds. Which calls are outside a scope: `seeded` is
  wrapped to keep a stack of whether each open scope has a seed (a scope
  of seed None draws as no scope)."""
  from tf_keras.src.saving.legacy.saved_model import save_impl
  original_seeded = dropout.seeded
  scopes = threading.local()

  @contextlib.contextmanager
  def seeded(seed, *args, **kwargs):
    stack = scopes.__dict__.setdefault("stack", [])
    stack.append(seed is not None)
    try:
      with original_seeded(seed, *args, **kwargs):
        yield
    finally:
      stack.pop()

  _replace(original_seeded, seeded)
  layer = dropout.CheckpointedDropout
  original_call = layer.call

  def call(self, inputs, training=None):
    stack = scopes.__dict__.get("stack")
    if (self.rate > 0 and training is not False and not (stack and stack[-1])
        and not save_impl.tracing_enabled()):
      with seeded(self.rng.make_seeds(1)[:, 0]):
        return original_call(self, inputs, training=training)
    return original_call(self, inputs, training=training)

  layer.call = call


def _replace(original, replacement) -> None:
  """`replacement` for `original` in every loaded module holding it by
  name (its own module and those that imported it)."""
  name = original.__name__
  for module in list(sys.modules.values()):
    if getattr(module, name, None) is original:
      setattr(module, name, replacement)


def main(argv):
  if len(argv) < 3 or not argv[1].isdecimal():
    sys.exit("usage: mask_stream.py STREAM MODULE [FLAGS...]")
  # The script's folder is not the tree's: keep its modules off the path.
  del sys.path[0]
  stream, module = int(argv[1]), argv[2]
  shift_seeds(stream)
  sys.argv = [module] + argv[3:]
  runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
  main(sys.argv)
