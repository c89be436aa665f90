r"""Export an ALBERT checkpoint as TF Hub encoder + preprocessor SavedModels.

  python -m tools.export_savedmodel \
      --albert_config_file=albert_base/albert_config.json \
      --init_checkpoint=albert_base/model.ckpt-best \
      --spm_model_file=albert_base/30k-clean.model \
      --export_dir=/tmp/albert_base_export --do_lower_case --with_mlm \
      --seq_length=128 --length_buckets=auto

A released Chinese model (WordPiece vocab.txt, no SentencePiece model):

  python -m tools.export_savedmodel \
      --albert_config_file=albert_base_zh/albert_config.json \
      --init_checkpoint=albert_base_zh/model.ckpt-best \
      --vocab_file=albert_base_zh/vocab_chinese.txt \
      --export_dir=/tmp/albert_base_zh_export

writes /tmp/albert_base_export/encoder and /tmp/albert_base_export/preprocessor
(see albert_tf/exports/encoder.py for their interfaces). --init_checkpoint
may be ours, a released TF1 checkpoint, a Hugging Face model.safetensors (or
its folder) or a Model Garden encoder checkpoint; the layout is detected from
its contents. Use them from Keras:

  encoder = hub.KerasLayer("/tmp/albert_base_export/encoder", trainable=True)
  preprocessor = hub.KerasLayer("/tmp/albert_base_export/preprocessor")
"""

from absl import flags
from absl import logging

from . import cli

FLAGS = flags.FLAGS
flags.DEFINE_string("albert_config_file", None,
                    "albert_config.json (or Hugging Face config.json) of the "
                    "model.", required=True)
flags.DEFINE_string("init_checkpoint", None,
                    "Checkpoint prefix, .safetensors file or directory.",
                    required=True)
flags.DEFINE_string("spm_model_file", None,
                    "SentencePiece model of the checkpoint (or give "
                    "--vocab_file).")
flags.DEFINE_string("vocab_file", None,
                    "WordPiece vocab.txt of the checkpoint (the Chinese "
                    "ALBERTs' vocab_chinese.txt), used when --spm_model_file "
                    "is not given (official precedence); the preprocessor "
                    "runs WordPiece in-graph.")
flags.DEFINE_string("export_dir", None,
                    "Output directory; must not exist yet.", required=True)
flags.DEFINE_bool("do_lower_case", True,
                  "Lowercase in the preprocessor (released ALBERT: true).")
flags.DEFINE_bool("with_mlm", False,
                  "Also export the masked-LM head as the encoder's `mlm` "
                  "sub-object and signature.")
flags.DEFINE_integer("seq_length", 128,
                     "Default sequence length of the preprocessor (if unset: "
                     "at most the config's max_position_embeddings).")
flags.DEFINE_string("length_buckets", "auto",
                    "The preprocessor's raw-text signatures and endpoints "
                    "(serving_default, two_segments, serve) give a request "
                    "at the smallest of these lengths that holds it. auto: "
                    "powers of two from 32, then --seq_length; none: always "
                    "--seq_length; or increasing lengths <= --seq_length, "
                    "e.g. 32,64. Calling the preprocessor (hub.KerasLayer) "
                    "and bert_pack_inputs keep TF Hub's fixed length.")
flags.DEFINE_enum("input_format", "auto",
                  ["auto", "ours", "official", "huggingface", "garden"],
                  "Layout of --init_checkpoint; auto detects it.")


def check_before_tensorflow(config) -> None:
  """What the flags, the config and the SentencePiece model alone show,
  before TensorFlow is imported (about 5 s): the library's own checks
  (albert_tf.exports.options), which export_savedmodel runs again for
  library callers. An unset --seq_length longer than the config allows
  becomes max_position_embeddings (logged)."""
  from albert_tf.exports import options
  if (not FLAGS["seq_length"].present and
      FLAGS.seq_length > config.max_position_embeddings):
    FLAGS.seq_length = config.max_position_embeddings
    logging.info("using --seq_length=%d (max_position_embeddings of %s)",
                 FLAGS.seq_length, FLAGS.albert_config_file)
  options.check_encoder_export(config, FLAGS.spm_model_file, FLAGS.export_dir,
                               FLAGS.do_lower_case, FLAGS.seq_length,
                               FLAGS.vocab_file)
  options.export_length_buckets(FLAGS.length_buckets, FLAGS.seq_length)


def main(argv):
  del argv
  # Imported here so that --help answers without loading TensorFlow.
  from albert_tf.checkpoints import configs
  from data_pipeline.tokenizer_factory import resolve_vocabulary
  FLAGS.spm_model_file, FLAGS.vocab_file = resolve_vocabulary(
      FLAGS.spm_model_file, FLAGS.vocab_file)
  config = configs.load_albert_config(FLAGS.albert_config_file)
  check_before_tensorflow(config)
  from albert_tf.exports.encoder import export_savedmodel
  print(export_savedmodel(
      config, FLAGS.init_checkpoint, FLAGS.spm_model_file, FLAGS.export_dir,
      do_lower_case=FLAGS.do_lower_case, with_mlm=FLAGS.with_mlm,
      seq_length=FLAGS.seq_length, input_format=FLAGS.input_format,
      vocab_file=FLAGS.vocab_file, length_buckets=FLAGS.length_buckets))


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
