r"""Convert ALBERT checkpoints among ours, official TF1, Hugging Face layouts.

  # A released google-research/albert checkpoint (or TF-Hub module/ names)
  # -> ours:
  python -m tools.convert_checkpoint \
      --albert_config_file=albert_base/albert_config.json \
      --input_checkpoint=albert_base/model.ckpt-best \
      --output_checkpoint=/tmp/albert_base_tf2/ckpt --output_format=ours

  # Hugging Face (model.safetensors + config.json, no torch needed) -> ours:
  python -m tools.convert_checkpoint --input_checkpoint=albert-base-v2/ \
      --output_checkpoint=/tmp/albert_base_v2/ckpt --output_format=ours

  # Ours -> the official TF1 layout / Hugging Face safetensors:
  python -m tools.convert_checkpoint --albert_config_file=albert_config.json \
      --input_checkpoint=/tmp/run/ckpt-10000 \
      --output_checkpoint=/tmp/official/model.ckpt --output_format=official

  # Any of them -> a keras-hub preset (AlbertBackbone + keras-hub's own
  # AlbertTokenizer: it loads with keras-hub alone; add
  # --keras_hub_tokenizer=official for the exact official ids, which then
  # needs `import albert_tf.keras3` to load):
  python -m tools.convert_checkpoint --albert_config_file=albert_config.json \
      --input_checkpoint=/tmp/run/ckpt-10000 --spm_model_file=30k-clean.model \
      --output_checkpoint=/tmp/albert_preset --output_format=keras_hub

  # A released Chinese model (WordPiece) -> Hugging Face, with its
  # tokenizer (vocab.txt + a BertTokenizer config):
  python -m tools.convert_checkpoint \
      --albert_config_file=albert_base_zh/albert_config.json \
      --input_checkpoint=albert_base_zh/model.ckpt-best \
      --vocab_file=albert_base_zh/vocab_chinese.txt \
      --output_checkpoint=/tmp/albert_base_zh_hf --output_format=huggingface
  # (--output_format=keras_hub: a preset with keras-hub's BertTokenizer.)

  # A keras-hub preset -> ours (+ albert_config.json, spiece.model beside it):
  python -m tools.convert_checkpoint --input_checkpoint=/tmp/albert_preset \
      --output_checkpoint=/tmp/from_preset/ckpt --output_format=ours

The input layout (ours, official, huggingface, garden = Model Garden
AlbertEncoder) is detected from the contents. --albert_config_file may be an
official albert_config.json or a Hugging Face config.json; it defaults to the
config.json of a Hugging Face input folder or keras-hub preset. Any variable
that does not map, is missing or has the wrong shape stops the conversion with
a list of all of them.
"""

from absl import flags

from albert_common.run_constants import INPUT_FORMATS
from albert_common.run_constants import OUTPUT_FORMATS

from . import cli

FLAGS = flags.FLAGS
flags.DEFINE_string("albert_config_file", None,
                    "albert_config.json or Hugging Face config.json of the "
                    "model (default: config.json of a Hugging Face input "
                    "folder).")
flags.DEFINE_string("input_checkpoint", None,
                    "Checkpoint prefix, .safetensors file or a directory.",
                    required=True)
flags.DEFINE_string("output_checkpoint", None,
                    "Checkpoint prefix (ours, official) or directory / "
                    ".safetensors file (huggingface).", required=True)
flags.DEFINE_enum("output_format", "ours", list(OUTPUT_FORMATS),
                  "Layout to write (keras_hub: a preset directory).")
flags.DEFINE_enum("input_format", "auto", list(INPUT_FORMATS),
                  "Layout to read; auto detects it from the contents.")
flags.DEFINE_string("spm_model_file", None,
                    "SentencePiece model of the checkpoint; needed for "
                    "--output_format=keras_hub (the preset's tokenizer).")
flags.DEFINE_string("vocab_file", None,
                    "WordPiece vocab.txt of the checkpoint (the Chinese "
                    "ALBERTs' vocab_chinese.txt), used when --spm_model_file "
                    "is not given: written beside an ours / official output "
                    "and as a BertTokenizer (vocab.txt, tokenizer_config."
                    "json) in a Hugging Face folder.")
flags.DEFINE_enum("keras_hub_tokenizer", "stock", ["stock", "official"],
                  "With --output_format=keras_hub: the preset's tokenizer. "
                  "stock: keras-hub's AlbertTokenizer, the preset loads and "
                  "fine-tunes with keras-hub alone (its ids differ from the "
                  "official tokenization where a digit precedes a comma); "
                  "official: albert_tf.keras3.OfficialAlbertTokenizer, the "
                  "official ids on every path, loading needs "
                  "`import albert_tf.keras3`.")
flags.DEFINE_bool("do_lower_case", True,
                  "With --output_format=keras_hub: whether the model's text "
                  "is lowercased (as in training).")


def main(argv):
  del argv
  # Imported here so that --help answers without loading TensorFlow; the
  # config is checked before TensorFlow is imported (converter).
  from albert_common.errors import UserInputError
  from albert_tf.checkpoints import configs

  config_file = FLAGS.albert_config_file
  if config_file is None:
    from albert_common import file_io
    candidate = file_io.join(FLAGS.input_checkpoint, "config.json")
    if not file_io.isfile(candidate):
      raise UserInputError(
          "--albert_config_file is required (only a Hugging Face input folder "
          "or a keras-hub preset, with a config.json, provides its own)")
    config_file = candidate
  config = configs.load_albert_config(config_file)
  from data_pipeline.tokenizer_factory import resolve_vocabulary
  spm_model_file, vocab_file = resolve_vocabulary(FLAGS.spm_model_file,
                                                  FLAGS.vocab_file)
  if vocab_file:
    from albert_tf.checkpoints import wordpiece_files
    wordpiece_files.check_vocab_file(config, vocab_file)
  if FLAGS.output_format == "keras_hub":  # what the flags alone show
    from albert_tf.checkpoints import keras_hub_preset_writer
    keras_hub_preset_writer.check_output(
        config, FLAGS.output_checkpoint, spm_model_file,
        "wordpiece" if vocab_file else FLAGS.keras_hub_tokenizer)
  from albert_tf.checkpoints import converter
  print(converter.convert_checkpoint(
      config, FLAGS.input_checkpoint, FLAGS.output_checkpoint,
      FLAGS.output_format, input_format=FLAGS.input_format,
      spm_model_file=spm_model_file, do_lower_case=FLAGS.do_lower_case,
      keras_hub_tokenizer=FLAGS.keras_hub_tokenizer, vocab_file=vocab_file))


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
