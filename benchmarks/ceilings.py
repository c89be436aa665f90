"""One definition of FLOPs and of a speed ceiling for the first table's
rows (pretraining step, fine-tuning; the other rows' ceilings are not
FLOP rates: memory's is the memory plan, distillation's and early exit's
the baseline's time scaled by the work left).

FLOPs (encoder_flops): the matmul FLOPs of the work a contender's step
does, a multiply-add counting 2, per block application the terms of
albert_tf.parameters_and_flops (Q, K, V, O; the feed-forward pair; the
attention scores and context). A model whose last block runs only where
its head reads (ours: [CLS] in fine-tuning, [CLS] and the masked positions
in pretraining) does that block's keys and values at every position and
the rest at those positions only, and is credited with exactly that, in
every row: no row credits work a contender skips. Training is 3x the
forward.

Ceiling (rate_at_peak): the rate ours would reach if those FLOPs ran at
the matmul peak measured in the same run at ours' own shapes ([rows, H] x
[H, I], rows: the positions one of ours' matmuls holds, e.g. a packed
step's packed rows x sequence length, not the batch it was fed;
benchmarks.roofline.step_peak; where the peer is another runtime, as in
serving, the faster runtime's matmuls: roofline.runtimes_step_peak).
benchmarks.summary refuses a row whose ours, or whose peer (which does at
least ours' work), passes its ceiling.
"""

from typing import Optional


def encoder_flops(config, seq_length: int,
                  last_positions: Optional[int] = None,
                  training: bool = False) -> float:
  """FLOPs of one sequence through the encoder (config: AlbertConfig or
  an object with its fields): the embedding projection, every block
  application, the last one at `last_positions` positions (None: all),
  and the pooler; 3x for training."""
  h, e, i = (config.hidden_size, config.embedding_size,
             config.intermediate_size)
  blocks = config.num_hidden_layers * getattr(config, "inner_group_num", 1)
  s = seq_length
  per_position = 8 * h * h + 4 * h * i + 4 * s * h
  keys_values = 4 * h * h
  full = s * per_position
  if last_positions is None or last_positions >= s:
    last = full
  else:
    last = s * keys_values + last_positions * (per_position - keys_values)
  projection = 2 * s * e * h if e != h else 0
  forward = projection + (blocks - 1) * full + last + 2 * h * h
  return 3.0 * forward if training else float(forward)


def rate_at_peak(peak_flops_per_s: float, flops_per_unit: float) -> float:
  """Units (sequences, tokens) per second at the peak."""
  return peak_flops_per_s / flops_per_unit
