"""Runs a tool with its dropout masks drawn from another stream:

  python benchmarks/finetuning/mask_stream.py STREAM MODULE [FLAGS...]

is `python -m MODULE FLAGS...` in which every stateless dropout seed the
code tree draws (layers.checkpointed_dropout's next seed: `next_seed`
today, `_next_seed` at 5f0f06f) is folded with STREAM first. Data order,
initial weights, the optimizer and everything else stay those of the
plain run; only the masks drawn under a seeded scope change: every mask
of today's code (one scope per update), the encoder blocks' masks at
5f0f06f (its embedding and head dropouts draw from their own generators
and keep their masks). So runs that differ only by STREAM measure how far
one mask realization moves a result.

Run as a script (not `-m`), with PYTHONPATH at the code tree whose tool
it runs: the tree may predate this file.
"""

import runpy
import sys

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

  for module in list(sys.modules.values()):
    if getattr(module, name, None) is original:
      setattr(module, name, shifted)


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
