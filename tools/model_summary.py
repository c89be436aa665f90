r"""Print the parameter count, training FLOPs per token and the memory plan
of an ALBERT config.

  python -m tools.model_summary --albert_config_file=configs/albert_base.json \
      --max_seq_length=512

The memory plan per replica of a pretraining step (albert_tf/memory_plan.py),
and the smallest number of micro-batches that fits a device:

  python -m tools.model_summary --albert_config_file=configs/albert_large.json \
      --train_batch_size=4096 --max_seq_length=512 --num_replicas=8 \
      --dtype=bfloat16 --device_memory=16GiB --gradient_accumulation_steps=16 \
      --recompute_layers
"""

import dataclasses
import json
import logging

from albert_tf.parameters_and_flops import ModelSummaryParams

from .support import cli
from .support import settings_flags

# Every flag is a field of ModelSummaryParams (name, default and help).
settings_flags.define_flags(ModelSummaryParams, __name__)


def main(argv):
  del argv
  # Imported here so that --help answers without loading TensorFlow; the
  # flags and the config are checked before TensorFlow is imported.
  from albert_common.errors import UserInputError
  from albert_tf import memory_plan
  from albert_tf.config import AlbertConfig

  params, _ = settings_flags.read_settings(ModelSummaryParams)
  config = AlbertConfig.from_json_file(params.albert_config_file)
  if params.share_parameters:
    config = dataclasses.replace(config,
                                 share_parameters=params.share_parameters)
  for flag in ("max_seq_length", "max_predictions_per_seq"):
    if getattr(params, flag) <= 0:
      raise UserInputError(f"--{flag} must be positive, got "
                           f"{getattr(params, flag)}")
  plan_args = dict(
      config=config, train_batch_size=params.train_batch_size,
      max_seq_length=params.max_seq_length,
      max_predictions_per_seq=params.max_predictions_per_seq,
      dtype=params.dtype, optimizer=params.optimizer,
      recompute_layers=params.recompute_layers,
      gradient_accumulation_steps=params.gradient_accumulation_steps,
      num_replicas=params.num_replicas)
  figures = memory_plan.plan(**plan_args)
  device_memory = (memory_plan.parse_bytes(params.device_memory)
                   if params.device_memory else None)
  steps = (memory_plan.fitting_steps(device_memory, **plan_args)
           if device_memory else None)
  if params.format == "json":
    result = figures.to_dict()
    if steps is not None:
      result.update(device_memory_bytes=device_memory,
                    smallest_steps_without_recompute=steps[False],
                    smallest_steps_with_recompute=steps[True])
    print(json.dumps(result, indent=2))
    return
  from albert_tf import parameters_and_flops
  from albert_tf.networks.albert_encoder import AlbertEncoder
  logging.getLogger("tensorflow").setLevel(logging.ERROR)
  encoder = AlbertEncoder(config)
  print(f"{params.albert_config_file} "
        f"(share_parameters={config.share_parameters})")
  print(parameters_and_flops.format_summary(config, encoder,
                                            params.max_seq_length))
  print()
  print(memory_plan.format_text(figures, _plan_header(params)))
  if steps is not None:
    print(memory_plan.format_fit(device_memory, steps))


def _plan_header(params) -> str:
  return (f"memory plan per replica: batch {params.train_batch_size} over "
          f"{params.num_replicas} replica(s), K="
          f"{params.gradient_accumulation_steps}; sequence "
          f"{params.max_seq_length}, {params.max_predictions_per_seq} "
          f"predictions; {params.dtype}, {params.optimizer}, "
          f"recompute_layers={params.recompute_layers}")


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
