"""Settings of a checkpoint conversion (tools.convert_checkpoint), read once.

Imports no TensorFlow and nothing of the package: the tool defines its
flags from `ConversionParams` before TensorFlow is imported.
"""

import dataclasses

from albert_common.run_constants import INPUT_FORMATS
from albert_common.run_constants import OUTPUT_FORMATS
from albert_common.settings_fields import FlatConstructible
from albert_common.settings_fields import setting

# --keras_hub_tokenizer values: the tokenizer of a keras-hub preset written
# from a SentencePiece model.
KERAS_HUB_TOKENIZERS = ("stock", "official")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ConversionParams(FlatConstructible):
  """Settings of tools.convert_checkpoint (each field is its flag)."""

  # "" (not None) for unset, as in the fine-tuning tools that share the flag.
  albert_config_file: str = setting(
      "", "albert_config.json or Hugging Face config.json of the model "
      "(default: the input's own: a Hugging Face folder's or a preset's "
      "config.json, a fine-tuning run's or its export's "
      "albert_config.json).")
  input_checkpoint: str = setting(
      help="Checkpoint prefix, .safetensors file or a directory. A "
      "fine-tuning run's --output_dir (or a checkpoint in it) or its "
      "--export_dir is written to huggingface / official as a task model, "
      "head and labels included.")
  output_checkpoint: str = setting(
      help="Checkpoint prefix (ours, official) or directory / .safetensors "
      "file (huggingface).")
  output_format: str = setting(
      "ours", "Layout to write (keras_hub: a preset directory).",
      choices=OUTPUT_FORMATS)
  input_format: str = setting(
      "auto", "Layout to read; auto detects it from the contents.",
      choices=INPUT_FORMATS)
  # "" (not None) for unset, as every tool that reads a vocabulary has it.
  spm_model_file: str = setting(
      "", "SentencePiece model of the checkpoint, written with the output: "
      "beside an ours / official checkpoint, as spiece.model "
      "(AlbertTokenizer) in a Hugging Face folder; needed for "
      "--output_format=keras_hub (the preset's tokenizer).")
  vocab_file: str = setting(
      "", "WordPiece vocab.txt of the checkpoint (the Chinese ALBERTs' "
      "vocab_chinese.txt), used when --spm_model_file is not given: written "
      "beside an ours / official output and as vocab.txt + tokenizer.json "
      "(AutoTokenizer gives the official ids) in a Hugging Face folder.")
  keras_hub_tokenizer: str = setting(
      "stock", "With --output_format=keras_hub: the preset's tokenizer. "
      "stock: keras-hub's AlbertTokenizer, the preset loads and fine-tunes "
      "with keras-hub alone (its ids differ from the official tokenization "
      "where a digit precedes a comma); official: "
      "albert_tf.keras3.OfficialAlbertTokenizer, the official ids on every "
      "path, loading needs `import albert_tf.keras3`.",
      choices=KERAS_HUB_TOKENIZERS)
  do_lower_case: bool = setting(
      True, "With --output_format=keras_hub: whether the model's text is "
      "lowercased (as in training).")
