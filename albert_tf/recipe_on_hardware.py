"""The paper's recipe (4096 x 512) on common hardware: the memory plan's
accumulation steps and an update time estimated from the FLOPs count.

Generates the table of docs/recipe-on-your-hardware.md
(tests/albert_tf/models/test_memory_plan.py keeps the page equal to it):

  python -c "from albert_tf import recipe_on_hardware as r
  print(r.markdown_table())"

TensorFlow-free.
"""

import dataclasses
from typing import List, Optional

from albert_tf import memory_plan
from albert_tf import parameters_and_flops
from albert_tf.config import AlbertConfig

BATCH, SEQ, PREDICTIONS = 4096, 512, 20
SIZES = ("base", "large", "xlarge", "xxlarge")
# Share of the nominal peak a well-fed training step sustains (an estimate,
# stated on the page).
UTILISATION = 0.4
# Recomputation runs each block's forward twice: 4 instead of 3 forward
# passes' FLOPs on the encoder.
RECOMPUTE_FACTOR = 4 / 3


@dataclasses.dataclass(frozen=True)
class Hardware:
  name: str
  replicas: int
  device_memory: int    # bytes per replica
  peak_flops: float     # nominal FLOP/s per replica in `dtype`
  dtype: str
  strategy: str


HARDWARE = (
    Hardware("8 x 16 GB (V100)", 8, 16 * 2**30, 125e12, "float16",
             "mirrored"),
    Hardware("8 x 80 GB (A100)", 8, 80 * 2**30, 312e12, "bfloat16",
             "mirrored"),
    Hardware("TPU v3-8 (8 cores x 16 GiB)", 8, 16 * 2**30, 61.5e12,
             "bfloat16", "tpu"),
)


def update_seconds(config: AlbertConfig, hardware: Hardware,
                   recompute: bool) -> float:
  """One update of BATCH x SEQ at UTILISATION of the hardware's peak."""
  flops = parameters_and_flops.flops_per_token(config, SEQ)
  encoder = flops["encoder_training"] + (
      flops["encoder_forward"] if recompute else 0)
  total = BATCH * SEQ * encoder + BATCH * PREDICTIONS * flops[
      "mlm_head_training"]
  return total / (hardware.replicas * hardware.peak_flops * UTILISATION)


def _steps(config: AlbertConfig, hardware: Hardware,
           recompute: bool) -> Optional[int]:
  return memory_plan.smallest_fitting_steps(
      hardware.device_memory, recompute, config=config,
      train_batch_size=BATCH, max_seq_length=SEQ,
      max_predictions_per_seq=PREDICTIONS, dtype=hardware.dtype,
      num_replicas=hardware.replicas)


def rows(configs_dir: str = "configs") -> List[List[str]]:
  """One row per (size, hardware): K and update time, without and with
  recomputation."""
  table = []
  for size in SIZES:
    config = AlbertConfig.from_json_file(f"{configs_dir}/albert_{size}.json")
    for hardware in HARDWARE:
      row = [f"ALBERT-{size}", hardware.name]
      for recompute in (False, True):
        steps = _steps(config, hardware, recompute)
        if steps is None:
          row += ["does not fit", "-"]
          continue
        micro = BATCH // hardware.replicas // steps
        plan = memory_plan.plan(
            config, BATCH, SEQ, PREDICTIONS, hardware.dtype,
            recompute_layers=recompute, gradient_accumulation_steps=steps,
            num_replicas=hardware.replicas)
        row += [f"K={steps} (micro-batch {micro}, "
                f"{memory_plan.format_bytes(plan.peak_bytes)})",
                f"{update_seconds(config, hardware, recompute):.1f} s"]
      table.append(row)
  return table


def markdown_table(configs_dir: str = "configs") -> str:
  header = ["model", "hardware", "without recomputation",
            "update time", "with --recompute_layers", "update time"]
  lines = ["| " + " | ".join(header) + " |",
           "|" + "|".join(" --- " for _ in header) + "|"]
  lines += ["| " + " | ".join(row) + " |" for row in rows(configs_dir)]
  return "\n".join(lines)
