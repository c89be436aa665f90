r"""Print the parameter count and training FLOPs per token of an ALBERT config.

  python -m tools.model_summary --albert_config_file=configs/albert_base.json \
      --max_seq_length=512
"""

import dataclasses
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
  from albert_tf.config import AlbertConfig

  params, _ = settings_flags.read_settings(ModelSummaryParams)
  config = AlbertConfig.from_json_file(params.albert_config_file)
  if params.share_parameters:
    config = dataclasses.replace(config,
                                 share_parameters=params.share_parameters)
  if params.max_seq_length <= 0:
    raise UserInputError(f"--max_seq_length must be positive, got "
                         f"{params.max_seq_length}")
  from albert_tf import parameters_and_flops
  from albert_tf.networks.albert_encoder import AlbertEncoder
  logging.getLogger("tensorflow").setLevel(logging.ERROR)
  encoder = AlbertEncoder(config)
  print(f"{params.albert_config_file} "
        f"(share_parameters={config.share_parameters})")
  print(parameters_and_flops.format_summary(config, encoder,
                                            params.max_seq_length))


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
