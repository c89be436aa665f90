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

  # A fine-tuned model (a run_* --output_dir or --export_dir) -> a Hugging
  # Face task model (AlbertForSequenceClassification, ...: id2label,
  # problem_type, the tokenizer) or the official scripts' head names +
  # labels.txt; the config and labels come from the run:
  python -m tools.convert_checkpoint --input_checkpoint=runs/tickets \
      --output_checkpoint=/tmp/tickets_hf --output_format=huggingface

  # A classifier fine-tuned here (run_classifier's --output_dir or
  # --export_dir) -> a keras-hub AlbertTextClassifier preset with its head
  # and labels.txt (config and tokenizer from the run / export):
  python -m tools.convert_checkpoint --input_checkpoint=/tmp/sst2_export \
      --output_checkpoint=/tmp/sst2_preset --output_format=keras_hub

  # A fine-tuned task model of another layout (a Hugging Face AlbertFor*
  # folder, an official run_classifier.py checkpoint, a keras-hub or Model
  # Garden task model) -> our task layout, head included (checkpoint,
  # albert_config.json, labels.json, the folder's spiece.model): the folder
  # every fine-tuning tool takes as --init_checkpoint:
  python -m tools.convert_checkpoint --input_checkpoint=hf_sst2/ \
      --output_checkpoint=/tmp/sst2_ours/ckpt --output_format=ours

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

from albert_tf.checkpoints.conversion_params import ConversionParams

from .support import cli
from .support import settings_flags

# Every flag is a field of ConversionParams (name, default and help).
settings_flags.define_flags(ConversionParams, __name__)


def main(argv):
  del argv
  # Imported here so that --help answers without loading TensorFlow; the
  # config is checked before TensorFlow is imported (converter).
  from albert_common.errors import UserInputError
  from albert_tf.checkpoints import configs

  params, _ = settings_flags.read_settings(ConversionParams)
  config_file = (params.albert_config_file or
                 _own_config_file(params.input_checkpoint))
  if not config_file:
    raise UserInputError(
        "--albert_config_file is required (only a Hugging Face input folder, "
        "a keras-hub preset, a fine-tuning run's --output_dir or its "
        "export provides its own)")
  config = configs.load_albert_config(config_file)
  from data_pipeline.tokenization.factory import resolve_vocabulary
  spm_model_file, vocab_file = resolve_vocabulary(params.spm_model_file,
                                                  params.vocab_file)
  if vocab_file:
    from albert_tf.checkpoints import wordpiece_files
    wordpiece_files.check_vocab_file(config, vocab_file)
  if params.output_format == "keras_hub":  # what the flags alone show
    from albert_tf.checkpoints.keras_hub_presets import (
      writer as keras_hub_preset_writer,
    )
    keras_hub_preset_writer.check_output(
        config, params.output_checkpoint,
        spm_model_file or _export_sentencepiece(params.input_checkpoint),
        "wordpiece" if vocab_file else params.keras_hub_tokenizer)
  from albert_tf.checkpoints import converter
  print(converter.convert_checkpoint(
      config, params.input_checkpoint, params.output_checkpoint,
      params.output_format, input_format=params.input_format,
      spm_model_file=spm_model_file, do_lower_case=params.do_lower_case,
      keras_hub_tokenizer=params.keras_hub_tokenizer, vocab_file=vocab_file))


def _own_config_file(input_checkpoint: str) -> str:
  """The config an input carries: a Hugging Face folder's or a preset's
  config.json, a run dir's albert_config.json (also for a checkpoint in it
  or in its best/), an export's assets/albert_config.json; else ""."""
  from albert_common import file_io
  folder = file_io.dirname(input_checkpoint)
  candidates = [file_io.join(input_checkpoint, "config.json"),
                file_io.join(input_checkpoint, "albert_config.json"),
                file_io.join(input_checkpoint, "assets", "albert_config.json")]
  if file_io.exists(input_checkpoint + ".index"):  # a checkpoint prefix
    candidates += [file_io.join(f, "albert_config.json")
                   for f in (folder, file_io.dirname(folder)) if f]
  for candidate in candidates:
    if file_io.isfile(candidate):
      return candidate
  return ""


def _export_sentencepiece(input_checkpoint: str) -> str:
  """An export's SentencePiece model (its assets' one .model), else ""
  (the converter reads it with the export: source_paths.vocabulary_of)."""
  from albert_common import file_io
  assets = file_io.join(input_checkpoint, "assets")
  if not file_io.isdir(assets):
    return ""
  models = sorted(n for n in file_io.listdir(assets) if n.endswith(".model"))
  return file_io.join(assets, models[0]) if models else ""


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
