"""Checks of an export's arguments, made before anything is built.

Imports no TensorFlow (nor does anything it imports), so
tools/export_savedmodel.py runs these checks in its first second, before
TensorFlow's ~5 s import; the exports run the same ones for library callers.
"""

from albert_tf.config import AlbertConfig
from data_pipeline import file_io
from data_pipeline import tokenization
from data_pipeline.shared import UserInputError


def check_export_dir_free(export_dir: str) -> None:
  """Raises UserInputError if `export_dir` exists (exports never overwrite)."""
  if file_io.exists(export_dir):
    raise UserInputError(f"--export_dir {export_dir} already exists; remove "
                         "it or choose another")


def check_encoder_export(config: AlbertConfig, spm_model_file: str,
                         export_dir: str, do_lower_case: bool,
                         seq_length: int) -> int:
  """Checks what the arguments of `encoder.export_savedmodel` alone show.

  In this order: export_dir is free, seq_length fits the position table,
  the SentencePiece model loads and has no more pieces than the config's
  vocab_size.

  Returns:
    The SentencePiece model's vocabulary size.

  Raises:
    UserInputError: naming the flag or file at fault.
  """
  check_export_dir_free(export_dir)
  if not 2 < seq_length <= config.max_position_embeddings:
    raise UserInputError(
        f"--seq_length={seq_length} must be in [3, max_position_embeddings="
        f"{config.max_position_embeddings}]")
  vocab_size = tokenization.SentencePieceTokenizer(
      spm_model_file, do_lower_case=do_lower_case).vocab_size
  if vocab_size > config.vocab_size:
    raise UserInputError(
        f"SentencePiece model {spm_model_file} has {vocab_size} pieces, more "
        f"than the config's vocab_size ({config.vocab_size})")
  return vocab_size
