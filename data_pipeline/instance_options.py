"""How pretraining instances are made: the options and the vocabulary facts.

`InstanceOptions` mirrors the official `create_pretraining_data.py` flags;
`VocabInfo` is what instance creation (`sop_instances`) and masking
(`mlm_masking`) need to know about the vocabulary.
"""

import dataclasses

import numpy as np

from albert_common.errors import UserInputError


@dataclasses.dataclass(frozen=True)
class InstanceOptions:
  """How instances are made; fields mirror the official flags.

  Attributes:
    max_seq_length: tokens per instance, [CLS] and two [SEP] included.
    max_predictions_per_seq: masked positions stored per instance.
    masked_lm_prob: fraction of tokens to mask.
    short_seq_prob: probability of a shorter target length for a document.
    ngram: longest masked n-gram, in words.
    favor_shorter_ngram: P(n) proportional to 1/n if True, else reversed.
    do_whole_word_mask: mask whole words (SentencePiece start pieces).
    random_next_sentence: NSP instead of SOP (official meaning).
    single_segment_random_document: the official single-sentence rule (an
      NSP negative in SOP data); see the module docstring.
  """
  max_seq_length: int = 512
  max_predictions_per_seq: int = 20
  masked_lm_prob: float = 0.15
  short_seq_prob: float = 0.1
  ngram: int = 3
  favor_shorter_ngram: bool = True
  do_whole_word_mask: bool = True
  random_next_sentence: bool = False
  single_segment_random_document: bool = False

  def validate(self) -> None:
    """Raises UserInputError naming the flag that is out of range."""
    checks = [
        (self.max_seq_length >= 5, "max_seq_length",
         "must be at least 5 ([CLS] A [SEP] B [SEP])"),
        (self.max_predictions_per_seq >= 1, "max_predictions_per_seq",
         "must be at least 1"),
        (0.0 <= self.masked_lm_prob <= 1.0, "masked_lm_prob",
         "must be in [0, 1]"),
        (0.0 <= self.short_seq_prob <= 1.0, "short_seq_prob",
         "must be in [0, 1]"),
        (self.ngram >= 1, "ngram", "must be at least 1"),
    ]
    for ok, flag, what in checks:
      if not ok:
        raise UserInputError(
            f"--{flag}={getattr(self, flag)} {what}")


@dataclasses.dataclass(frozen=True)
class VocabInfo:
  """What instance creation and masking need to know about the vocabulary.

  Attributes:
    vocab_size: number of ids.
    cls_id, sep_id, mask_id: control token ids.
    start_piece: bool [vocab_size], True where the piece starts a word.
  """
  vocab_size: int
  cls_id: int
  sep_id: int
  mask_id: int
  start_piece: np.ndarray
