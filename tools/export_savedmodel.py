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

from albert_tf.exports.options import EncoderExportParams

from .support import cli
from .support import settings_flags

# Every flag is a field of EncoderExportParams (name, default and help).
settings_flags.define_flags(EncoderExportParams, __name__)


def main(argv):
  del argv
  # Checked, completed and the config read before TensorFlow is imported
  # (about 5 s); --help answers without loading TensorFlow.
  from albert_tf.exports import options
  params, user_set = settings_flags.read_settings(EncoderExportParams)
  params, config = options.prepare_encoder_export(params, user_set)
  from albert_tf.exports.encoder import export_savedmodel
  print(export_savedmodel(
      config, params.init_checkpoint, params.spm_model_file or None,
      params.export_dir, do_lower_case=params.do_lower_case,
      with_mlm=params.with_mlm, seq_length=params.seq_length,
      input_format=params.input_format,
      vocab_file=params.vocab_file or None,
      length_buckets=params.length_buckets))


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
