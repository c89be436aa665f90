"""How much memory a training step needs per replica, before running it.

The plan counts, per replica, in bytes:
  weights: the float32 trainable variables of the pretrainer (encoder, MLM
    and SOP heads);
  optimizer: LAMB's / AdamW's two float32 slots per weight;
  gradients: one float32 gradient per weight, and with
    --gradient_accumulation_steps K > 1 one float32 accumulator more;
  shared gradients: a weight shared by several block applications gets one
    float32 gradient per application, which TensorFlow's autodiff sums only
    once all are computed (measured: ALBERT-base's 12 applications of one
    shared block keep 11 extra copies of its gradient, with or without
    recomputation);
  activations: what the backward pass keeps of one micro-batch
    (train_batch_size / num_replicas / K sequences), below;
  cast weights: under mixed precision each block application keeps its
    compute-dtype copy of the block's weights for its backward;
  peak: their sum: what the forward and backward passes hold. An
    estimate, not a bound (below).

Activations per block application, counted from the layers' ops (b
sequences of s tokens, H hidden, I intermediate, N heads; c the compute
dtype's bytes; LayerNorm and softmax run in float32):
  [b, s, H]: the input, query, key, value and context for the projections'
    gradients, the feed-forward input (compute dtype); both LayerNorms'
    input and normalised values (float32);
  [b, s, I]: the feed-forward pre-activation, GELU's intermediates and its
    output;
  [b, N, s, s]: the softmax output (float32) and, under mixed precision,
    its compute-dtype copy; with dropout also the kept mask and the dropped
    probabilities;
  dropout masks on the two [b, s, H] sublayer outputs when dropout > 0.
Plus the embeddings ([b, s, E] word/position/type sum, LayerNorm, the
projection's input) and the MLM head at P predictions per sequence
([b, P, H] gathered rows, [b, P, E] transform, the float32 [b * P, V] logits
and their cross-entropy gradient).

Without recomputation all L * inner_group_num applications keep theirs;
with it each keeps only its float32 input [b, s, H] and one application's
activations exist at a time (recomputed in the backward pass).

What it is checked against: the activations per block application are
within 5% of the tensors a traced training step keeps for its backward
pass, and a whole step keeps at most the plan's activations
(tests/albert_tf/models/test_memory_plan_tensors.py).

Why the peak is not a bound: the optimizer update after the backward pass
(clipping, LAMB's per-weight temporaries) holds memory the plan does not
count: measured alone (apply_clipped_gradients on given gradients), LAMB
4.16 float32 copies of the weights at ALBERT-base's width, 4.52 at H=384,
AdamW 1.06. Where activations are small (recomputation, small micro-batches)
the update sets the step's peak. Measured with TensorFlow's CPU allocator
(tf.config.experimental.get_memory_info: the peak minus the memory before
the step), ALBERT-base float32, 1 x 128, 2-core AMD EPYC. Forward and
backward alone peaked at 310 MiB with recomputation (plan 363) and at
350 MiB without (plan 474). The whole step peaked at 513 and 510 MiB:
150 MiB above the plan with recomputation and 36 MiB without. The excess
does not grow with the layers (6 layers: 157 MiB). It shrinks with the
width (H=384: 92 MiB), and BENCHMARKS.md's RSS peaks put it at 314-338
MiB for base and 421-488 MiB for large. USABLE_FRACTION's 10% reserve
covers it on a device of 5 GiB or more (the recipe table's are 16 and 80
GiB). Below that, budget the excess on top of a recomputed plan.
xlarge and xxlarge were not measured; if an accelerator's update held as
many temporaries as this CPU's, ALBERT-xxlarge's (4.2-4.5 x 0.83 GiB with
LAMB) would exceed the reserve of a 16 GiB device.

TensorFlow-free: tools.model_summary and run_pretraining print it before
building anything. benchmarks/memory/peaks.py checks it against measured
peaks.
"""

import dataclasses
import re
from typing import Dict, Optional

from albert_common.errors import UserInputError
from albert_tf.config import AlbertConfig

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
OPTIMIZER_SLOTS = {"lamb": 2, "adamw": 2}
# Tensors of each shape kept per block application (see the docstring).
HIDDEN_COMPUTE = 6      # [b, s, H] in the compute dtype
HIDDEN_FLOAT32 = 4      # [b, s, H] in float32 (two LayerNorms)
INTERMEDIATE = 4        # [b, s, I] in the compute dtype
SCORES_FLOAT32 = 1      # [b, N, s, s] softmax output
# Usable part of a device's memory: frameworks, kernels' workspaces and
# fragmentation take the rest.
USABLE_FRACTION = 0.9

_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


@dataclasses.dataclass(frozen=True)
class MemoryPlan:
  """Bytes per replica of one training step (see the module docstring)."""

  micro_batch_size: int
  gradient_accumulation_steps: int
  recompute_layers: bool
  parameters: int
  weights_bytes: int
  optimizer_bytes: int
  gradient_bytes: int
  accumulator_bytes: int
  activation_bytes: int
  cast_weight_bytes: int
  shared_gradient_bytes: int

  @property
  def peak_bytes(self) -> int:
    return (self.weights_bytes + self.optimizer_bytes + self.gradient_bytes
            + self.accumulator_bytes + self.activation_bytes
            + self.cast_weight_bytes + self.shared_gradient_bytes)

  def to_dict(self) -> Dict[str, object]:
    return dict(dataclasses.asdict(self), peak_bytes=self.peak_bytes)


def parse_bytes(text: str, flag: str = "device_memory") -> int:
  """'16GiB', '80GB', '512MiB', '1e9' -> bytes; UserInputError otherwise."""
  match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][0-9]+)?)\s*([A-Za-z]*)\s*",
                       text or "")
  if not match or match.group(2).upper() not in _UNITS:
    raise UserInputError(
        f"--{flag} must be a size such as 16GiB, 80GB or 512MiB, got "
        f"{text!r}")
  size = int(float(match.group(1)) * _UNITS[match.group(2).upper()])
  if size <= 0:
    raise UserInputError(f"--{flag} must be positive, got {text!r}")
  return size


def block_parameters(config: AlbertConfig) -> int:
  """Parameters of one attention + feed-forward block."""
  return sum(_sublayer_parameters(config).values())


def _sublayer_parameters(config: AlbertConfig) -> Dict[str, int]:
  h, i = config.hidden_size, config.intermediate_size
  return dict(attention=4 * (h * h + h) + 2 * h,
              ffn=h * i + i + i * h + h + 2 * h)


def _distinct_sublayers(config: AlbertConfig) -> Dict[str, int]:
  """How many distinct (differently weighted) sublayers of each kind."""
  return {kind: len({name for names in config.sublayer_names(kind)
                     for name in names}) for kind in ("attention", "ffn")}


def shared_gradient_bytes(config: AlbertConfig) -> int:
  """Float32 gradients of shared sublayers beyond one per weight."""
  applications = config.num_hidden_layers * config.inner_group_num
  distinct = _distinct_sublayers(config)
  return sum(4 * (applications - distinct[kind]) * params
             for kind, params in _sublayer_parameters(config).items())


def pretrainer_parameters(config: AlbertConfig) -> int:
  """Trainable parameters of AlbertPretrainer (encoder + MLM + SOP)."""
  h, e, v = config.hidden_size, config.embedding_size, config.vocab_size
  embeddings = ((v + config.max_position_embeddings + config.type_vocab_size)
                * e + 2 * e + (e * h + h if e != h else 0))
  sublayers = _sublayer_parameters(config)
  distinct = _distinct_sublayers(config)
  pooler = h * h + h
  mlm_head = h * e + e + 2 * e + v
  sop_head = 2 * h + 2
  return (embeddings + distinct["attention"] * sublayers["attention"]
          + distinct["ffn"] * sublayers["ffn"] + pooler + mlm_head + sop_head)


def block_activation_bytes(config: AlbertConfig, batch: int, seq: int,
                           dtype: str) -> int:
  """What one block application keeps for its backward pass."""
  c = DTYPE_BYTES[dtype]
  h, i, n = (config.hidden_size, config.intermediate_size,
             config.num_attention_heads)
  hidden, scores = batch * seq * h, batch * n * seq * seq
  total = (HIDDEN_COMPUTE * c + HIDDEN_FLOAT32 * 4) * hidden
  total += INTERMEDIATE * c * batch * seq * i
  total += SCORES_FLOAT32 * 4 * scores + (c * scores if c != 4 else 0)
  if config.attention_probs_dropout_prob > 0:
    total += 2 * c * scores  # kept mask, dropped probabilities
  if config.hidden_dropout_prob > 0:
    total += 2 * c * hidden  # the two sublayer outputs' masks
  return total


def activation_bytes(config: AlbertConfig, batch: int, seq: int,
                     predictions: int, dtype: str, recompute: bool) -> int:
  """Activations kept by the backward pass of one micro-batch."""
  c = DTYPE_BYTES[dtype]
  h, e, v = config.hidden_size, config.embedding_size, config.vocab_size
  applications = config.num_hidden_layers * config.inner_group_num
  block = block_activation_bytes(config, batch, seq, dtype)
  if recompute:
    layers = applications * 4 * batch * seq * h + block
  else:
    layers = applications * block
  embeddings = 4 * 4 * batch * seq * e + c * batch * seq * h
  rows = batch * predictions
  mlm_head = rows * (c * h + 6 * c * e) + 2 * 4 * rows * v
  return layers + embeddings + mlm_head


def plan(config: AlbertConfig, train_batch_size: int, max_seq_length: int,
         max_predictions_per_seq: int = 20, dtype: str = "float32",
         optimizer: str = "lamb", recompute_layers: bool = False,
         gradient_accumulation_steps: int = 1,
         num_replicas: int = 1) -> MemoryPlan:
  """The MemoryPlan of a pretraining step (UserInputError on bad values)."""
  check_division(train_batch_size, gradient_accumulation_steps, num_replicas)
  micro = train_batch_size // num_replicas // gradient_accumulation_steps
  params = pretrainer_parameters(config)
  c = DTYPE_BYTES[dtype]
  applications = config.num_hidden_layers * config.inner_group_num
  cast_copies = 0 if c == 4 else (1 if recompute_layers else applications)
  return MemoryPlan(
      micro_batch_size=micro,
      gradient_accumulation_steps=gradient_accumulation_steps,
      recompute_layers=recompute_layers,
      parameters=params,
      weights_bytes=4 * params,
      optimizer_bytes=OPTIMIZER_SLOTS[optimizer] * 4 * params,
      gradient_bytes=4 * params,
      accumulator_bytes=4 * params if gradient_accumulation_steps > 1 else 0,
      activation_bytes=activation_bytes(
          config, micro, max_seq_length, max_predictions_per_seq, dtype,
          recompute_layers),
      cast_weight_bytes=cast_copies * c * block_parameters(config),
      shared_gradient_bytes=shared_gradient_bytes(config))


def check_division(train_batch_size: int, gradient_accumulation_steps: int,
                   num_replicas: int = 1) -> None:
  """UserInputError (one line, flags quoted) unless the batch splits
  evenly: over the replicas, then each replica's share into
  --gradient_accumulation_steps equal micro-batches (slices of the update's
  batch). Training and the memory plan (TensorFlow-free) both ask here."""
  for flag, value in (("train_batch_size", train_batch_size),
                      ("gradient_accumulation_steps",
                       gradient_accumulation_steps),
                      ("num_replicas", num_replicas)):
    if value < 1:
      raise UserInputError(f"--{flag} must be at least 1, got {value}")
  steps = gradient_accumulation_steps
  if train_batch_size % num_replicas:
    raise UserInputError(
        f"--train_batch_size={train_batch_size} does not split over "
        f"{num_replicas} replicas")
  per_replica = train_batch_size // num_replicas
  if num_replicas == 1 and per_replica % steps:
    raise UserInputError(
        f"--gradient_accumulation_steps={steps} does not divide "
        f"--train_batch_size={train_batch_size} (micro-batches are equal "
        "slices of the update's batch)")
  if per_replica % steps:
    raise UserInputError(
        f"--gradient_accumulation_steps={steps} does not divide the "
        f"per-replica batch {per_replica} (--train_batch_size="
        f"{train_batch_size} over {num_replicas} replicas)")


def smallest_fitting_steps(device_memory: int, recompute_layers: bool,
                           **plan_args) -> Optional[int]:
  """The smallest K dividing the per-replica batch whose plan fits in
  USABLE_FRACTION of `device_memory`; None if even one sequence does not."""
  per_replica = (plan_args["train_batch_size"]
                 // plan_args.get("num_replicas", 1))
  for steps in range(1, per_replica + 1):
    if per_replica % steps:
      continue
    figures = plan(recompute_layers=recompute_layers,
                   gradient_accumulation_steps=steps, **plan_args)
    if figures.peak_bytes <= USABLE_FRACTION * device_memory:
      return steps
  return None


def format_bytes(size: int) -> str:
  """Bytes in GiB (or MiB below 1 GiB), e.g. '11.3 GiB'."""
  if size >= 2**30:
    return f"{size / 2**30:.1f} GiB"
  return f"{size / 2**20:.1f} MiB"


def format_line(figures: MemoryPlan) -> str:
  """The plan in one line, as run_pretraining logs it."""
  return (f"memory plan per replica: peak {format_bytes(figures.peak_bytes)}"
          f" = weights {format_bytes(figures.weights_bytes)}"
          f" + optimizer {format_bytes(figures.optimizer_bytes)}"
          f" + gradients {format_bytes(figures.gradient_bytes)}"
          f" + accumulators {format_bytes(figures.accumulator_bytes)}"
          f" + activations {format_bytes(figures.activation_bytes)}"
          f" + cast weights {format_bytes(figures.cast_weight_bytes)}"
          f" + shared gradients "
          f"{format_bytes(figures.shared_gradient_bytes)}"
          f" (micro-batch {figures.micro_batch_size}, K="
          f"{figures.gradient_accumulation_steps}, recompute_layers="
          f"{figures.recompute_layers})")


def fitting_steps(device_memory: int, **plan_args) -> Dict[bool, Optional[int]]:
  """{recompute_layers: smallest fitting K or None} for False and True."""
  plan_args = {k: v for k, v in plan_args.items()
               if k not in ("recompute_layers", "gradient_accumulation_steps")}
  return {recompute: smallest_fitting_steps(device_memory, recompute,
                                            **plan_args)
          for recompute in (False, True)}


def format_fit(device_memory: int, steps: Dict[bool, Optional[int]]) -> str:
  """One line: the smallest K with and without recomputation."""
  def k(value):
    return "none (one sequence does not fit)" if value is None else f"K={value}"
  return (f"on {format_bytes(device_memory)} per device "
          f"({USABLE_FRACTION:.0%} usable): smallest "
          f"--gradient_accumulation_steps that fits: {k(steps[False])} "
          f"without --recompute_layers, {k(steps[True])} with")


def format_text(figures: MemoryPlan, header: str) -> str:
  """The plan as a table of bytes per replica under `header`."""
  rows = [("weights", figures.weights_bytes),
          ("optimizer slots", figures.optimizer_bytes),
          ("gradients", figures.gradient_bytes),
          ("accumulators", figures.accumulator_bytes),
          (f"activations (micro-batch {figures.micro_batch_size})",
           figures.activation_bytes),
          ("cast weights", figures.cast_weight_bytes),
          ("shared gradients (per application)",
           figures.shared_gradient_bytes),
          ("peak", figures.peak_bytes)]
  lines = [header]
  lines += [f"  {name:<34}{format_bytes(size):>12}{size:>18,} B"
            for name, size in rows]
  return "\n".join(lines)
