r"""Print the parameter count and training FLOPs per token of an ALBERT config.

  python -m tools.model_summary --albert_config_file=configs/albert_base.json \
      --max_seq_length=512
"""

import dataclasses
import logging

from absl import flags

from . import cli

FLAGS = flags.FLAGS
flags.DEFINE_string("albert_config_file", None,
                    "albert_config.json of the model.", required=True)
flags.DEFINE_integer("max_seq_length", 512,
                     "Sequence length for the attention FLOPs.")
flags.DEFINE_enum("share_parameters", None, ["all", "attention", "ffn", "none"],
                  "Override the config's share_parameters.")


def main(argv):
  del argv
  # Imported here so that --help answers without loading TensorFlow; the
  # flags and the config are checked before TensorFlow is imported.
  from albert_common.errors import UserInputError
  from albert_tf.config import AlbertConfig

  config = AlbertConfig.from_json_file(FLAGS.albert_config_file)
  if FLAGS.share_parameters:
    config = dataclasses.replace(config,
                                 share_parameters=FLAGS.share_parameters)
  if FLAGS.max_seq_length <= 0:
    raise UserInputError(f"--max_seq_length must be positive, got "
                         f"{FLAGS.max_seq_length}")
  from albert_tf import parameters_and_flops
  from albert_tf.networks.albert_encoder import AlbertEncoder
  logging.getLogger("tensorflow").setLevel(logging.ERROR)
  encoder = AlbertEncoder(config)
  print(f"{FLAGS.albert_config_file} "
        f"(share_parameters={config.share_parameters})")
  print(parameters_and_flops.format_summary(config, encoder,
                                            FLAGS.max_seq_length))


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
