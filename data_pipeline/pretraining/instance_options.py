"""How pretraining instances are made: the options and the vocabulary facts.

`InstanceOptions` mirrors the official `create_pretraining_data.py` flags;
`VocabInfo` is what instance creation (`sop_instances`) and masking
(`mlm_masking`) need to know about the vocabulary.
"""

import dataclasses

import numpy as np

from albert_common.errors import UserInputError
from albert_common.settings_fields import FlatConstructible
from albert_common.settings_fields import setting


@dataclasses.dataclass(frozen=True)
class InstanceOptions(FlatConstructible):
  """How instances are made; each field is the official flag of its name
  (tools.create_pretraining_data generates the flags from them)."""

  max_seq_length: int = setting(
      512, "Maximum sequence length: tokens per instance, [CLS] and two "
      "[SEP] included.")
  max_predictions_per_seq: int = setting(
      20, "Maximum masked LM predictions per sequence.")
  masked_lm_prob: float = setting(0.15, "Masked LM probability.")
  short_seq_prob: float = setting(
      0.1, "Probability of a shorter target length for a document.")
  ngram: int = setting(3, "Longest masked n-gram, in words.")
  favor_shorter_ngram: bool = setting(
      True, "P(n) proportional to 1/n; if False, the reverse.")
  do_whole_word_mask: bool = setting(
      True, "Mask whole words (SentencePiece start pieces; WordPiece: a "
      "piece and its ## continuations), not pieces.")
  random_next_sentence: bool = setting(
      False, "Official meaning: NSP instead of SOP, B from a random "
      "document with probability 0.5.")
  single_segment_random_document: bool = setting(
      False, "Official behaviour for a one-sentence chunk: B from a random "
      "document, labelled 1 (an NSP negative in SOP data, "
      "google-research/albert #234). Default: split the sentence at a "
      "random word start instead.")

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
