"""SentencePiece pieces of a paragraph with their character ranges (SQuAD).

As google-research/albert `squad_utils.py`, the paragraph is normalised with
`preprocess_text` and split into SentencePiece pieces, and every piece is
mapped back to a character range of the ORIGINAL paragraph, so an answer is
always cut out of the original text (`paragraph[start:end + 1].strip()`).

The official code aligns characters with an approximate longest-common-
subsequence; here the normalisation is replayed character by character, so
the map is exact (with a `difflib` fallback if a future normalisation rule
were not character-local). The WordPiece counterpart is `wordpiece_offsets`.
"""

import difflib
from typing import List, Optional, Sequence, Tuple
import unicodedata

from data_pipeline.tokenization.sentencepiece_tokenizer import SPIECE_UNDERLINE
from data_pipeline.tokenization.sentencepiece_tokenizer import (
  SentencePieceTokenizer,
)
from data_pipeline.tokenization.sentencepiece_tokenizer import encode_pieces
from data_pipeline.tokenization.sentencepiece_tokenizer import preprocess_text
from data_pipeline.tokenization.tokenized_paragraph import TokenizedParagraph


def normalize_with_offsets(text: str, do_lower_case: bool = True,
                           keep_accents: bool = False
                          ) -> Tuple[str, List[int]]:
  """`preprocess_text(text)` and, per output char, its index in `text`.

  Replays the normalisation (strip and collapse whitespace, `` and '' to ",
  NFKD and accent removal, lowercasing) one original character at a time.
  If the result ever differs from `preprocess_text` (a rule that is not
  character-local), the offsets are re-derived with difflib.
  """
  chars, offsets = [], []
  stripped_start = len(text) - len(text.lstrip())
  end = len(text.rstrip())
  i = stripped_start
  while i < end:
    c = text[i]
    if c.isspace():
      chars.append(" ")
      offsets.append(i)
      while i < end and text[i].isspace():
        i += 1
      continue
    if text[i:i + 2] in ("``", "''"):
      pieces, width = '"', 2
    else:
      pieces, width = c, 1
    if not keep_accents:
      pieces = "".join(ch for ch in unicodedata.normalize("NFKD", pieces)
                       if not unicodedata.combining(ch))
    if do_lower_case:
      pieces = pieces.lower()
    for ch in pieces:
      chars.append(ch)
      offsets.append(i)
    i += width
  replayed = "".join(chars)
  expected = preprocess_text(text, keep_accents=keep_accents,
                             lower=do_lower_case)
  if replayed == expected:
    return expected, offsets
  return expected, _fill(_align(expected, replayed, offsets), len(text))


def _align(target: str, source: str, source_values: Sequence[int]
          ) -> List[Optional[int]]:
  """For each char of `target`, the value of the matching char of `source`."""
  out = [None] * len(target)
  matcher = difflib.SequenceMatcher(None, target, source, autojunk=False)
  for block in matcher.get_matching_blocks():
    for k in range(block.size):
      out[block.a + k] = source_values[block.b + k]
  return out


def _fill(values: List[Optional[int]], default: int) -> List[int]:
  """Replaces None by the previous value (or the next one at the start)."""
  out, last = [], None
  for v in values:
    last = v if v is not None else last
    out.append(last)
  nxt = None
  for k in range(len(out) - 1, -1, -1):
    if out[k] is None:
      out[k] = nxt if nxt is not None else default
    nxt = out[k]
  return out


def tokenize_paragraph(tokenizer: SentencePieceTokenizer,
                       paragraph_text: str) -> TokenizedParagraph:
  """Pieces of a paragraph, each mapped to a range of the original text."""
  normalized, norm_to_orig = normalize_with_offsets(
      paragraph_text, tokenizer.do_lower_case, tokenizer.keep_accents)
  pieces = encode_pieces(tokenizer.sp_model, normalized)
  # Piece characters, "▁" read as a space, against the normalised text.
  cat_chars, cat_tok = [], []
  for t, piece in enumerate(pieces):
    for ch in piece.replace(SPIECE_UNDERLINE, " "):
      cat_chars.append(ch)
      cat_tok.append(t)
  cat = "".join(cat_chars)
  cat_to_norm = _align_cat(cat, normalized)

  n = len(paragraph_text)
  starts = [None] * len(pieces)
  ends = [None] * len(pieces)
  for k, norm_index in enumerate(cat_to_norm):
    if norm_index is None:
      continue
    t, orig = cat_tok[k], norm_to_orig[norm_index]
    starts[t] = orig if starts[t] is None else min(starts[t], orig)
    ends[t] = orig if ends[t] is None else max(ends[t], orig)
  # Pieces with no character of their own (the leading "▁"): empty range at
  # the next piece's start.
  for t in range(len(pieces) - 1, -1, -1):
    if starts[t] is None:
      nxt = starts[t + 1] if t + 1 < len(pieces) else n
      starts[t], ends[t] = nxt, nxt - 1
  # Extend each end over original characters nothing maps to (dropped
  # accents, the second char of '' ...) up to the next kept character.
  kept = sorted(set(norm_to_orig))
  next_kept = {}
  for a, b in zip(kept, kept[1:] + [n]):
    next_kept[a] = b
  tok_end = [next_kept.get(e, e + 1) - 1 if e >= 0 else e for e in ends]

  orig_to_tok = [None] * n
  for t in range(len(pieces)):
    for i in range(starts[t], max(starts[t], tok_end[t] + 1)):
      if orig_to_tok[i] is None:
        orig_to_tok[i] = t
  # Characters before the first kept character (leading spaces) belong to
  # the first piece that follows.
  orig_to_tok = _fill_forward(orig_to_tok, len(pieces) - 1)
  return TokenizedParagraph(
      pieces=pieces, ids=tokenizer.convert_tokens_to_ids(pieces),
      tok_start_to_orig_index=starts, tok_end_to_orig_index=tok_end,
      orig_to_tok_index=orig_to_tok)


def _align_cat(cat: str, normalized: str) -> List[Optional[int]]:
  """For each char of the joined pieces, its index in `normalized` or None."""
  out, j = [], 0
  for ch in cat:
    if j < len(normalized) and normalized[j] == ch:
      out.append(j)
      j += 1
    elif ch == " ":
      out.append(None)  # SentencePiece's dummy prefix
    else:
      return _align(cat, normalized, range(len(normalized)))
  return out


def _fill_forward(values: List[Optional[int]], last: int) -> List[int]:
  out, nxt = list(values), None
  for k in range(len(out) - 1, -1, -1):
    if out[k] is None:
      out[k] = nxt if nxt is not None else last
    nxt = out[k]
  return out
