"""Parameter counts and training FLOPs of an ALBERT configuration.

Imports no TensorFlow at load (tools.model_summary defines its flags from
`ModelSummaryParams` before TensorFlow is imported).
"""

import collections
import dataclasses
from typing import Dict, List, Optional, Tuple

from albert_common.run_constants import DTYPES
from albert_common.run_constants import OPTIMIZERS
from albert_common.settings_fields import FlatConstructible
from albert_common.settings_fields import setting
from albert_tf.config import SHARE_PARAMETERS
from albert_tf.config import AlbertConfig


@dataclasses.dataclass(frozen=True, kw_only=True)
class ModelSummaryParams(FlatConstructible):
  """Settings of tools.model_summary (each field is its flag)."""

  albert_config_file: str = setting(help="albert_config.json of the model.")
  max_seq_length: int = setting(512,
                                "Sequence length for the attention FLOPs.")
  share_parameters: Optional[str] = setting(
      None, "Override the config's share_parameters.",
      choices=SHARE_PARAMETERS)
  # The memory plan (albert_tf/memory_plan.py) of a pretraining step.
  train_batch_size: int = setting(
      4096, "Memory plan: sequences of one update, over all replicas.")
  max_predictions_per_seq: int = setting(
      20, "Memory plan: masked positions per sequence.")
  dtype: str = setting("float32", "Memory plan: compute dtype (weights, "
                       "slots and gradients stay float32).", choices=DTYPES)
  optimizer: str = setting("lamb", "Memory plan: optimizer (two float32 "
                           "slots per weight).", choices=OPTIMIZERS)
  recompute_layers: bool = setting(
      False, "Memory plan: with activation recomputation.")
  gradient_accumulation_steps: int = setting(
      1, "Memory plan: micro-batches per update (K).")
  num_replicas: int = setting(1, "Memory plan: replicas (devices) the "
                              "batch splits over.")
  device_memory: str = setting(
      "", "Memory plan: memory per device, e.g. 16GiB, 80GB; prints the "
      "smallest --gradient_accumulation_steps that fits, with and without "
      "--recompute_layers.")
  format: str = setting("text", "Output: a text table or one JSON object.",
                        choices=("text", "json"))


def parameter_breakdown(encoder) -> List[Tuple[str, int]]:
  """(part, parameter count) rows of a built AlbertEncoder.

  Parts: "embeddings" (word, position, type tables, LayerNorm and the E -> H
  projection), one row per distinct transformer sublayer (a shared sublayer
  is counted once however many layers use it), "pooler", and "total".
  """
  counts = collections.OrderedDict()
  for variable in encoder.trainable_variables:
    part = variable.name.split("/")[0]
    counts[part] = counts.get(part, 0) + int(variable.shape.num_elements())
  rows = list(counts.items())
  rows.append(("total", sum(counts.values())))
  return rows


def flops_per_token(config: AlbertConfig, seq_length: int) -> Dict[str, int]:
  """Matmul FLOPs per token (a multiply-add counts 2), as in the literature.

  Weight sharing saves parameters, not compute: every one of the
  L * inner_group_num block applications is counted.

  Returns:
    encoder_forward: FLOPs of one token through the encoder at `seq_length`
      (projection, L * K blocks of attention + FFN, the attention score and
      context products, and the pooler amortised over the sequence).
    encoder_training: 3x the forward (the backward pass costs about twice).
    mlm_head_training: per predicted token, 3x (H -> E transform and the
      E x V tied decoder).
  """
  h, e, i, v = (config.hidden_size, config.embedding_size,
                config.intermediate_size, config.vocab_size)
  blocks = config.num_hidden_layers * config.inner_group_num
  per_block = (2 * 4 * h * h          # query, key, value, output projections
               + 2 * 2 * h * i        # feed-forward in and out
               + 2 * 2 * seq_length * h)  # scores (QK^T) and context (PV)
  projection = 2 * e * h if e != h else 0
  pooler = 2 * h * h // seq_length
  forward = projection + blocks * per_block + pooler
  return dict(encoder_forward=forward,
              encoder_training=3 * forward,
              mlm_head_training=3 * (2 * h * e + 2 * e * v))


def format_summary(config: AlbertConfig, encoder, seq_length: int) -> str:
  """A plain-text table of parameters and FLOPs."""
  lines = [f"{'part':<36}{'parameters':>16}"]
  for part, count in parameter_breakdown(encoder):
    lines.append(f"{part:<36}{count:>16,}")
  lines.append("")
  for name, value in flops_per_token(config, seq_length).items():
    lines.append(f"{name + f' (seq {seq_length})':<36}{value:>16,} FLOPs/token")
  return "\n".join(lines)
