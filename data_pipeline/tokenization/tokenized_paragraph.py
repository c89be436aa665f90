"""The pieces of a paragraph and the character ranges they cover."""

import dataclasses
from typing import List, Tuple


@dataclasses.dataclass
class TokenizedParagraph:
  """A paragraph's pieces and their character ranges in the original text.

  Attributes:
    pieces: list of str.
    ids: list of int.
    tok_start_to_orig_index, tok_end_to_orig_index: per piece, the first and
      last original character it covers (end includes characters the
      normalisation dropped right after it, e.g. combining accents).
    orig_to_tok_index: per original character, the piece holding it (or the
      next piece for characters the normalisation dropped).
  """
  pieces: List[str]
  ids: List[int]
  tok_start_to_orig_index: List[int]
  tok_end_to_orig_index: List[int]
  orig_to_tok_index: List[int]

  def char_span_to_tokens(self, char_start: int, char_end: int
                         ) -> Tuple[int, int]:
    """Pieces (first, last) covering original characters [start, end]."""
    return (self.orig_to_tok_index[char_start],
            self.orig_to_tok_index[char_end])
