"""The one tokenizer factory: SentencePiece or WordPiece, from the settings.

Every consumer of a run (data creation, GLUE / SQuAD / RACE features, the
exports' checks) gets its tokenizer from `make_tokenizer`, with the official
precedence: `--spm_model_file` when given, else the WordPiece
`--vocab_file`. A run builds it once (finetuning_params.prepare, the data
creation plan) and hands the instance on.
"""

from typing import Optional

from absl import logging

from albert_common.errors import UserInputError
from data_pipeline.tokenization import sentencepiece_tokenizer as tokenization
from data_pipeline.tokenization import (
  wordpiece_tokenizer as wordpiece_tokenization,
)


def resolve_vocabulary(spm_model_file: Optional[str],
                       vocab_file: Optional[str]):
  """(spm_model_file, vocab_file) with the official precedence applied.

  Given both, the vocab file is dropped (None) with one log line, so that
  callers reading the vocabulary more than once log it once.
  """
  if spm_model_file and vocab_file:
    logging.info("--spm_model_file=%s is used; --vocab_file=%s is ignored "
                 "(the official precedence)", spm_model_file, vocab_file)
    return spm_model_file, None
  return spm_model_file or None, vocab_file or None


def make_tokenizer(spm_model_file: Optional[str] = None,
                   vocab_file: Optional[str] = None,
                   do_lower_case: bool = True, fs=None):
  """The tokenizer the official scripts would use for these flags.

  SentencePiece when `spm_model_file` is given (a `vocab_file` given too is
  ignored, with one log line, as in the official `FullTokenizer`), else
  WordPiece from `vocab_file`.

  Returns:
    tokenization.SentencePieceTokenizer or WordPieceTokenizer.

  Raises:
    UserInputError: neither file given, or the one used is bad.
  """
  spm_model_file, vocab_file = resolve_vocabulary(spm_model_file, vocab_file)
  if spm_model_file:
    return tokenization.SentencePieceTokenizer(
        spm_model_file, do_lower_case=do_lower_case, fs=fs)
  if vocab_file:
    return wordpiece_tokenization.WordPieceTokenizer(
        vocab_file, do_lower_case=do_lower_case, fs=fs)
  raise UserInputError("give --spm_model_file (SentencePiece) or "
                       "--vocab_file (WordPiece vocab.txt)")
