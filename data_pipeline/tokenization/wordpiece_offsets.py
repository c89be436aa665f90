"""WordPiece pieces of a paragraph with their character ranges (SQuAD).

The WordPiece counterpart of `sentencepiece_offsets.tokenize_paragraph`:
BERT's basic tokenization is replayed one original character at a time
(cleaning, CJK characters as words, lowercasing per word, accent stripping
and punctuation split per character), so every normalised character keeps the
index of the original one it came from; then each word's greedy pieces take
the ranges of their characters ("##" not counted), and an unknown word's
[UNK] the whole word's. The ids equal `WordPieceTokenizer.encode` of the
paragraph.
"""

from typing import List, Tuple

from data_pipeline.tokenization import wordpiece_tokenizer as wp
from data_pipeline.tokenization.tokenized_paragraph import TokenizedParagraph

# A word: its normalised characters and, per character, the original index.
_Word = Tuple[str, List[int]]


def _raw_words(text: str) -> List[_Word]:
  """Words after cleaning and CJK spacing, before lowercasing."""
  words, chars, where = [], [], []

  def flush():
    if chars:
      words.append(("".join(chars), list(where)))
      chars.clear()
      where.clear()

  for i, c in enumerate(text):
    if wp.is_dropped(c):
      continue
    if c.isspace() or wp.is_whitespace(c):
      flush()
    elif wp.is_cjk(c):
      flush()
      words.append((c, [i]))
    else:
      chars.append(c)
      where.append(i)
  flush()
  return words


def _normalised_words(word: _Word, do_lower_case: bool) -> List[_Word]:
  """Lowercase and accent stripping, then the punctuation split."""
  text, where = word
  if do_lower_case:
    lowered = text.lower()
    # str.lower maps one character to one but for expansions ("İ"); then
    # it is done per character (the final sigma is the only context rule).
    per_char = ([lowered[k] for k in range(len(text))]
                if len(lowered) == len(text) else [c.lower() for c in text])
    per_char = [wp.strip_accents(c) for c in per_char]
  else:
    per_char = list(text)
  out, chars, indices = [], [], []
  for piece, i in zip(per_char, where):
    for c in piece:
      if wp.is_punctuation(c):
        if chars:
          out.append(("".join(chars), indices))
          chars, indices = [], []
        out.append((c, [i]))
      else:
        chars.append(c)
        indices.append(i)
  if chars:
    out.append(("".join(chars), indices))
  return out


def pieces_with_offsets(tokenizer: wp.WordPieceTokenizer, text: str
                        ) -> Tuple[List[int], List[int], List[int]]:
  """(ids, first original char, last original char) of each piece."""
  ids, starts, ends = [], [], []
  for raw in _raw_words(text):
    for word, where in _normalised_words(raw, tokenizer.do_lower_case):
      word_ids = tokenizer.encode_word(word)
      lengths = [len(t) - (len(wp.CONTINUATION) if k else 0)
                 for k, t in enumerate(tokenizer.convert_ids_to_tokens(
                     word_ids))]
      if sum(lengths) != len(word):  # [UNK]: the whole word.
        lengths = [len(word)]
      at = 0
      for piece_id, length in zip(word_ids, lengths):
        ids.append(piece_id)
        starts.append(where[at])
        ends.append(where[at + length - 1])
        at += length
  return ids, starts, ends


def tokenize_paragraph(tokenizer: wp.WordPieceTokenizer,
                       text: str) -> TokenizedParagraph:
  """The TokenizedParagraph of `text` with WordPiece.

  A piece's end extends over original characters that map to no piece and
  are not whitespace (a dropped control character, a stripped combining
  accent); whitespace belongs to the piece after it.
  """
  ids, starts, ends = pieces_with_offsets(tokenizer, text)
  kept = set()
  for start, end in zip(starts, ends):
    kept.update(range(start, end + 1))
  n = len(text)
  tok_end = []
  for end in ends:
    nxt = end + 1
    while nxt < n and nxt not in kept and not text[nxt].isspace():
      nxt += 1
    tok_end.append(nxt - 1)
  orig_to_tok = [None] * n
  for t, (start, end) in enumerate(zip(starts, tok_end)):
    for i in range(start, end + 1):
      if orig_to_tok[i] is None:
        orig_to_tok[i] = t
  last, nxt_tok = max(len(ids) - 1, 0), None
  for i in range(n - 1, -1, -1):
    if orig_to_tok[i] is None:
      orig_to_tok[i] = nxt_tok if nxt_tok is not None else last
    nxt_tok = orig_to_tok[i]
  return TokenizedParagraph(
      pieces=tokenizer.convert_ids_to_tokens(ids), ids=ids,
      tok_start_to_orig_index=starts, tok_end_to_orig_index=tok_end,
      orig_to_tok_index=orig_to_tok)
