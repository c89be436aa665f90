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
import tf_keras

from albert_tf.layers import activations
from albert_tf.layers.attention_sublayer import AttentionSublayer
from albert_tf.networks.albert_encoder import AlbertEncoder
from benchmarks import common
from benchmarks.pretraining import step as pretraining_step


class _RankedEinsumDense(tf_keras.layers.EinsumDense):
  """What `Dense(units)` was before: an EinsumDense with an explicit equation
  for its input's rank ("bsh,hi->bsi" for [B, S, H])."""

  def __init__(self, units, activation=None, kernel_initializer=None,
               **kwargs):
    super().__init__("xh,hb->xb", output_shape=units, bias_axes="b",
                     activation=activation,
                     kernel_initializer=kernel_initializer or
                     "glorot_uniform", **kwargs)
    self.units = units

  def build(self, input_shape):
    free = "xyz"[:len(input_shape) - 1]
    self.equation = f"{free}h,hb->{free}b"
    self.partial_output_shape = [None] * (len(free) - 1) + [self.units]
    super().build(input_shape)


def _gelu_tanh_form(x):
  """The textbook form: 0.5 x (1 + tanh(c (x + 0.044715 x^3)))."""
  return 0.5 * x * (1.0 + tf.math.tanh(
      0.7978845608028654 * (x + 0.044715 * tf.math.pow(x, 3))))


def _full_mask_call(self, x, input_mask, query=None, training=None):
  """The attention sublayer with a [batch, seq, seq] mask materialised."""
  query = x if query is None else tf.cast(query, x.dtype)
  mask = tf.cast(input_mask, tf.bool)[:, tf.newaxis, :]
  mask = tf.logical_and(mask, tf.ones_like(query[:, :, :1], tf.bool))
  y = self.attention(query, x, attention_mask=mask, training=training)
  return self.layer_norm(query + self.dropout(y, training=training))


_ENCODER_CALL = AlbertEncoder.call


def _full_last_block_call(self, inputs, training=None, mask=None,
                          output_positions=None):
  """The encoder over the whole sequence, then gathered at the positions."""
  outputs = _ENCODER_CALL(self, inputs, training=training, mask=mask)
  if output_positions is None:
    return outputs
  return dict(pooled_output=outputs["pooled_output"],
              sequence_output_at_positions=tf.gather(
                  outputs["sequence_output"], output_positions,
                  batch_dims=1))


def _stack(*patches):
  stack = contextlib.ExitStack()
  for patch in patches:
    stack.enter_context(patch)
  return stack


VARIANTS = {  # name: patches undoing one optimisation
    "all optimisations": lambda: _stack(),
    "last block over the whole sequence": lambda: _stack(
        mock.patch.object(AlbertEncoder, "call", _full_last_block_call)),
    "einsum projections (EinsumDense)": lambda: _stack(
        mock.patch.object(tf_keras.layers, "Dense", _RankedEinsumDense)),
    "GELU in its tanh form": lambda: _stack(
        mock.patch.dict(activations.BY_NAME,
                        {"gelu": _gelu_tanh_form})),
    "[batch, seq, seq] attention mask": lambda: _stack(
        mock.patch.object(AttentionSublayer, "call", _full_mask_call)),
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
