"""What each optimisation of our pretraining step is worth: undo one at a time.

  python -m benchmarks.investigations.ablations --size=base --batch_size=8 \
      --seq_length=128 --repeats=5

Every variant is our real training step
(`benchmarks.pretraining.step.ours_step`) with one optimisation undone
while the model is built and its step traced;
all variants then run alternating in one process, and each reports its
median step time and the slowdown against the full version. The undoing is
done here by patching, so the library keeps one code path.
"""

import contextlib
from unittest import mock

import tensorflow as tf

from albert_tf.layers import activations
from albert_tf.layers import shared_block
from albert_tf.networks import layer_loop
from albert_tf.networks.albert_encoder import AlbertEncoder
from benchmarks import common
from benchmarks.pretraining import step as pretraining_step


def _gelu_tanh_form(x):
  """The textbook form: 0.5 x (1 + tanh(c (x + 0.044715 x^3)))."""
  return 0.5 * x * (1.0 + tf.math.tanh(
      0.7978845608028654 * (x + 0.044715 * tf.math.pow(x, 3))))


_MASK_BIAS = shared_block.mask_bias


def _full_mask_bias(input_mask):
  """The attention bias materialised per query, [batch, 1, seq, seq], in
  place of [batch, 1, 1, seq] broadcast over the queries."""
  bias = _MASK_BIAS(input_mask)
  if bias.shape.rank == 4 and bias.shape[2] == 1:
    seq = tf.shape(bias)[3]
    bias = tf.broadcast_to(bias, tf.stack([tf.shape(bias)[0], 1, seq, seq]))
  return bias


_ENCODER_CALL = AlbertEncoder.call


def _full_last_block_call(self, inputs, training=None, mask=None,
                          output_positions=None):
  """The loop over the whole sequence, then gathered at the positions."""
  if output_positions is None:
    return _ENCODER_CALL(self, inputs, training=training, mask=mask)
  outputs = layer_loop.run(self, inputs, training)
  return dict(pooled_output=outputs["pooled_output"],
              sequence_output_at_positions=tf.gather(
                  outputs["sequence_output"], output_positions,
                  batch_dims=1))


def _stack(*patches):
  stack = contextlib.ExitStack()
  for patch in patches:
    stack.enter_context(patch)
  return stack


# name: patches undoing one optimisation. Each replaces a function the
# training step runs (tests/benchmarks/test_ablations.py checks that it is
# called while the step is traced). The projections' einsum (undone by an
# EinsumDense patch before layers/shared_block.py) has no variant: every
# projection is a 2-D MatMul of that one block now.
VARIANTS = {
    "all optimisations": lambda: _stack(),
    "last block over the whole sequence": lambda: _stack(
        mock.patch.object(AlbertEncoder, "call", _full_last_block_call)),
    "GELU in its tanh form": lambda: _stack(
        mock.patch.dict(activations.BY_NAME,
                        {"gelu": _gelu_tanh_form})),
    "[batch, seq, seq] attention mask": lambda: _stack(
        mock.patch.object(shared_block, "mask_bias", _full_mask_bias)),
}


def run(size: str, batch: int, seq: int, repeats: int) -> str:
  config = common.load_config(size)
  batch_tensors = pretraining_step.synthetic_batch(config, batch, seq)
  steps = {}
  for name, undo in VARIANTS.items():
    with undo():
      step = pretraining_step.ours_step(config, batch_tensors, False)
      common.wait_for(step())
    steps[name] = step
    print(f"built: {name}", flush=True)
  times = common.time_alternating(steps, repeats)
  full = common.median(times["all optimisations"])
  rows = []
  for name in VARIANTS:
    seconds = common.median(times[name])
    rows.append([name, f"{seconds:.2f}", f"{seconds / full:.2f}x"])
  table = common.markdown_table(
      ["variant (one optimisation undone)", "s/step",
       "time vs all optimisations"], rows)
  print(table)
  return table


def main():
  common.model_step_main(__doc__, run, "benchmarks.investigations.ablations",
                         "Pretraining step: each optimisation undone",
                         "Float32, no XLA; all variants alternate in one "
                         "process.",
                         repeats=5)


if __name__ == "__main__":
  main()
