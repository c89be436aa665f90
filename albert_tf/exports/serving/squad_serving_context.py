"""Step 1 of the raw-text SQuAD SavedModel: the context's SentencePiece
pieces and each piece's range of original characters, in-graph.

`SentencePieceContext` is the part of `squad_serving.SquadServing` that
does what `data_pipeline.tokenization.sentencepiece_offsets.tokenize_paragraph`
does in
Python: ALBERT normalisation one original character at a time (keeping each
normalised character's index in the original text, as
`sentencepiece_offsets.normalize_with_offsets`), SentencePiece and the
digit-comma re-split (`vocabulary_tables`), and every piece's first and
last original character. An unknown piece stands for one maximal run of
unknown characters. `WHITESPACE` (the code points Python's `str.isspace`
accepts) is shared with the WordPiece variant (squad_serving_wordpiece).
"""

import numpy as np
import sentencepiece as spm
import tensorflow as tf
import tensorflow_text as tf_text

from data_pipeline.tokenization import sentencepiece_tokenizer as tokenization

WHITESPACE = [cp for cp in range(0x110000)
              if not 0xD800 <= cp <= 0xDFFF and chr(cp).isspace()]


def vocabulary_tables(model_proto: bytes):
  """Per id, the (ids, char lengths) it expands to, and the known chars.

  The digit-comma re-split is applied per piece (as the in-graph tokenizer
  does); lengths count a piece's characters with "▁" as one (a space), -1
  for the unknown piece, whose surface is the run of unknown characters it
  stands for. Known characters: every character of a non-control piece.
  """
  sp = spm.SentencePieceProcessor(model_proto=model_proto)
  splits, ids, lengths, known = [0], [], [], set()
  for i in range(sp.GetPieceSize()):
    piece = sp.IdToPiece(i)
    if sp.IsUnknown(i):
      ids.append(i)
      lengths.append(-1)
    elif tokenization.needs_comma_split(piece):
      for sub in tokenization.resplit_pieces(sp, [piece]):
        ids.append(sp.PieceToId(sub))
        lengths.append(len(sub))
    else:
      ids.append(i)
      lengths.append(len(piece))
    splits.append(len(ids))
    if not (sp.IsControl(i) or sp.IsUnknown(i)):
      known.update(ord(c) for c in piece.replace(tokenization.SPIECE_UNDERLINE,
                                                 " "))
  return (np.array(splits, np.int64), np.array(ids, np.int32),
          np.array(lengths, np.int32), np.array(sorted(known), np.int32))


class SentencePieceContext:
  """The context half of SquadServing (a mixin; it holds no state).

  Reads, set by SquadServing's constructor: `sp` (the
  FastSentencepieceTokenizer), `expand_ids`, `expand_lengths` (ragged, per
  id, from `vocabulary_tables`), `known_chars`, `whitespace` (int32 code
  points), `combining` (an RE2 class of combining marks), `keep_accents`,
  `do_lower_case`.
  """

  def _normalize_chars(self, codepoints, chars):
    """Per original char, its normalised string.

    As sentencepiece_offsets.normalize_with_offsets.

    codepoints: int32 [n]; chars: tf.string [n]. Returns tf.string [n].
    """
    n = tf.shape(codepoints)[0]
    index = tf.range(n)
    is_space = tf.reduce_any(codepoints[:, None] == self.whitespace[None, :],
                             axis=1)
    non_space = tf.where(~is_space, index, -1)
    first = tf.reduce_min(tf.where(~is_space, index, n))
    last = tf.reduce_max(non_space)
    inside = (index >= first) & (index <= last)
    prev_space = tf.concat([[False], is_space[:-1]], 0)
    # `` and '': pairs from the left within each run of the same character.
    new_run = tf.concat([[True], codepoints[1:] != codepoints[:-1]], 0)
    run_id = tf.cumsum(tf.cast(new_run, tf.int32)) - 1
    run_start = tf.gather(tf.boolean_mask(index, new_run), run_id)
    run_length = tf.math.segment_sum(tf.ones_like(run_id), run_id)
    in_run = index - run_start
    tick = (codepoints == ord("`")) | (codepoints == ord("'"))
    pair_first = tick & (in_run % 2 == 0) & (
        in_run + 1 < tf.gather(run_length, run_id))
    pair_second = tick & (in_run % 2 == 1)
    text = chars
    if not self.keep_accents:
      text = tf_text.normalize_utf8(text, "NFKD")
      text = tf.strings.regex_replace(text, self.combining, "")
    if self.do_lower_case:
      text = tf.strings.lower(text, encoding="utf-8")
    text = tf.where(pair_first, tf.constant('"'), text)
    text = tf.where(pair_second | (is_space & prev_space), tf.constant(""),
                    text)
    text = tf.where(is_space & ~prev_space, tf.constant(" "), text)
    return tf.where(inside, text, tf.constant(""))

  def _paragraph(self, context):
    """Pieces of `context` and their original character ranges.

    Returns:
      ids int32 [L]; tok_start, tok_end int32 [L] (first / last original
      character, as sentencepiece_offsets.tokenize_paragraph); codepoints
      int32 [n].
    """
    codepoints = tf.strings.unicode_decode(context, "UTF-8",
                                           errors="replace")
    chars = tf.strings.unicode_encode(codepoints[:, None], "UTF-8")
    n = tf.shape(codepoints)[0]
    normalized = self._normalize_chars(codepoints, chars)
    lengths = tf.strings.length(normalized, unit="UTF8_CHAR")
    norm_to_orig = tf.repeat(tf.range(n), lengths)  # [m]
    text = tf.strings.reduce_join(normalized)
    norm_cp = tf.strings.unicode_decode(text, "UTF-8")  # [m]
    m = tf.shape(norm_cp)[0]

    raw = self.sp.tokenize(text[None])[0]  # [p], before the re-split
    ids = tf.gather(self.expand_ids, raw).flat_values  # [L]
    piece_len = tf.gather(self.expand_lengths, raw).flat_values
    # An unknown piece stands for one maximal run of unknown characters.
    found = tf.searchsorted(self.known_chars, norm_cp[None], side="left")[0]
    last_known = tf.size(self.known_chars) - 1
    known = tf.equal(tf.gather(self.known_chars, tf.minimum(found, last_known)),
                     norm_cp)
    unknown = ~known & (norm_cp != ord(" "))
    starts = unknown & tf.concat([[True], ~unknown[:-1]], 0)
    run_id = tf.cumsum(tf.cast(starts, tf.int32)) - 1
    runs = tf.math.unsorted_segment_sum(
        tf.cast(unknown, tf.int32), tf.where(unknown, run_id, 0),
        tf.maximum(tf.reduce_sum(tf.cast(starts, tf.int32)), 1))
    is_unk = piece_len < 0
    unk_rank = tf.cumsum(tf.cast(is_unk, tf.int32)) - 1
    piece_len = tf.where(
        is_unk, tf.gather(runs, tf.clip_by_value(unk_rank, 0,
                                                 tf.size(runs) - 1)),
        piece_len)
    # Piece t covers [cat, cat + len) of " " + normalized (the dummy "▁").
    cat = tf.cumsum(piece_len, exclusive=True)
    first = tf.maximum(cat - 1, 0)
    last = cat + piece_len - 2
    own = last >= first

    def safe(i):
      return tf.gather(norm_to_orig, tf.clip_by_value(i, 0, m - 1))

    start = safe(first)
    end = safe(last)
    # A piece without a character of its own (the leading "▁"): an empty
    # range at the next piece's start.
    following = tf.concat([start[1:], [n]], 0)
    start = tf.where(own, start, following)
    # Extend ends over original characters the normalisation dropped.
    kept = tf.unique(norm_to_orig).y  # increasing
    nxt = tf.searchsorted(kept, end[None], side="right")[0]
    next_kept = tf.where(nxt < tf.size(kept),
                         tf.gather(kept, tf.minimum(nxt, tf.size(kept) - 1)),
                         n)
    tok_end = tf.where(own, next_kept - 1, start - 1)
    return ids, start, tok_end, codepoints
