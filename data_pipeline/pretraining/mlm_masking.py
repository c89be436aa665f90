"""ALBERT pretraining instances -> masked features: n-gram whole-word masking.

The masking half of google-research/albert `create_pretraining_data.py`
(`create_masked_lm_predictions`), vectorised across a batch of instances
(`sop_instances.InstanceSpans`): whole-word n-gram masking and the 80/10/10
replacement rule; see `mask_instances`.

The randoms come with the instances (`InstanceSpans.draws`, drawn from each
document's Generator when the instance was made), so masking draws nothing
itself.
"""

from typing import Dict, NamedTuple, Optional

import numpy as np

from data_pipeline.pretraining.instance_options import InstanceOptions
from data_pipeline.pretraining.instance_options import VocabInfo
from data_pipeline.pretraining.sop_instances import InstanceSpans


class MaskedBatch(NamedTuple):
  """Padded features of a batch of instances (official names).

  Attributes:
    input_ids, input_mask, segment_ids, token_boundary: int32 [n, seq].
    masked_lm_positions, masked_lm_ids: int32 [n, max_predictions_per_seq].
    masked_lm_weights: float32 [n, max_predictions_per_seq].
    next_sentence_labels: int32 [n, 1].
    ngram_draws: int64 [ngram + 1], n drawn at each visited candidate.
    span_words: int64 [ngram + 1], masked spans by length in words (after
      shortening to fit the budget; spans are never merged).
    replacements: int64 [3], masked tokens set to [MASK] / kept / random.
  """
  input_ids: np.ndarray
  input_mask: np.ndarray
  segment_ids: np.ndarray
  token_boundary: np.ndarray
  masked_lm_positions: np.ndarray
  masked_lm_ids: np.ndarray
  masked_lm_weights: np.ndarray
  next_sentence_labels: np.ndarray
  ngram_draws: np.ndarray
  span_words: np.ndarray
  replacements: np.ndarray

  def features(self) -> Dict[str, np.ndarray]:
    return {k: getattr(self, k) for k in self._fields[:8]}


def assemble(spans: InstanceSpans, pool: np.ndarray, vocab: VocabInfo,
             max_seq_length: int):
  """[CLS] A [SEP] B [SEP], padded: (input_ids, segment_ids, lengths).

  Returns:
    input_ids int32 [n, seq] (0-padded), segment_ids int32 [n, seq],
    lengths int64 [n].
  """
  n = len(spans.a_len)
  pos = np.arange(max_seq_length)[None, :]
  la = spans.a_len[:, None]
  lengths = spans.a_len + spans.b_len + 3
  src = _pool_index(spans, max_seq_length, len(pool))
  valid = pos < lengths[:, None]
  input_ids = (pool[src] if len(pool) else np.zeros(src.shape, np.int32))
  input_ids = input_ids.astype(np.int32) * valid
  rows = np.arange(n)
  input_ids[:, 0] = vocab.cls_id
  input_ids[rows, spans.a_len + 1] = vocab.sep_id
  input_ids[rows, lengths - 1] = vocab.sep_id
  segment_ids = ((pos > la + 1) & valid).astype(np.int32)
  return input_ids, segment_ids, lengths


def _pool_index(spans: InstanceSpans, max_seq_length: int,
                pool_size: int) -> np.ndarray:
  """int64 [n, seq]: the pool index of every position.

  A tokens at 1..a_len, B after the first [SEP]; [CLS], [SEP] and padding
  get a clipped index, to be written over.
  """
  pos = np.arange(max_seq_length)[None, :]
  la = spans.a_len[:, None]
  src = pos + np.where(pos <= la, spans.a_start[:, None] - 1,
                       spans.b_start[:, None] - la - 2)
  np.clip(src, 0, max(pool_size - 1, 0), out=src)
  return src


def ngram_cdf(ngram: int, favor_shorter: bool) -> np.ndarray:
  """Upper bounds of P(n <= k), k = 1..ngram-1: P(n) ~ 1/n (or reversed)."""
  pvals = 1.0 / np.arange(1, ngram + 1)
  pvals /= pvals.sum()
  if not favor_shorter:
    pvals = pvals[::-1]
  return np.cumsum(pvals)[:-1]


class _Tokens(NamedTuple):
  """Where the maskable tokens of a batch are (all [n, seq]).

  Attributes:
    valid: bool, inside [CLS] A [SEP] B [SEP] (not padding).
    is_token: bool, valid and neither [CLS] nor [SEP]: may be masked.
    word_start: bool, a masking candidate (a word) starts here.
    token_boundary: int32, 1 at word starts (start pieces, or a word
      segmenter's) and [CLS]/[SEP] (the feature).
  """
  valid: np.ndarray
  is_token: np.ndarray
  word_start: np.ndarray
  token_boundary: np.ndarray


class _Words(NamedTuple):
  """The masking candidates (words) of a batch of instances.

  Attributes:
    word_id: int32 [n, seq], the word each token belongs to (-1 before the
      first word).
    count: int64 [n], words per instance.
    max_words: int, the most words of any instance (at least 1).
    cum_tokens: int64 [n, max_words + ngram + 1], tokens in words [0, w) at
      column w. A span of k words from c has cum_tokens[c + k] -
      cum_tokens[c] tokens (words past the last have 0 tokens, so spans are
      cut there).
  """
  word_id: np.ndarray
  count: np.ndarray
  max_words: int
  cum_tokens: np.ndarray


class _Spans(NamedTuple):
  """The spans masking chose (see `_choose_spans`).

  Attributes:
    covered: bool [n, max_words + ngram], True for every masked word.
    ngram_draws: int64 [ngram + 1], n drawn at each visited candidate.
    span_words: int64 [ngram + 1], masked spans by length in words.
  """
  covered: np.ndarray
  ngram_draws: np.ndarray
  span_words: np.ndarray


def mask_instances(spans: InstanceSpans, pool: np.ndarray,
                   options: InstanceOptions, vocab: VocabInfo,
                   word_starts: Optional[np.ndarray] = None) -> MaskedBatch:
  """Assembles and masks a batch of instances (official rules, vectorised).

  Per instance, as the official `create_masked_lm_predictions`:
  candidates are words (a start piece and the pieces after it; every token
  if `do_whole_word_mask` is False) -- unlike the official code, a word never
  continues across [SEP]; [CLS]/[SEP] are never candidates.
  num_to_predict = min(max_predictions_per_seq,
  max(1, round(len(tokens) * masked_lm_prob))). Candidates are visited in a
  random order; at each, n is drawn from 1..ngram with P(n) ~ 1/n (reversed
  if not favor_shorter_ngram) and the n words from it are masked, or the
  longest shorter n-gram that fits the budget; a span that does not fit or
  overlaps a masked one is skipped. Each masked token becomes [MASK] with
  p 0.8, stays with p 0.1, becomes a uniformly random id with p 0.1.

  The visits run in lock step over the batch: step j handles the j-th
  candidate of every instance still below its budget.

  Args:
    spans: the instances, with their draws.
    pool: int32 [num_tokens], the token pool the spans index.
    options: InstanceOptions.
    vocab: VocabInfo.
    word_starts: optional bool [num_tokens], per pool token, True where a
      word starts (as `create_instance_spans`'); default: start pieces.

  Returns:
    MaskedBatch; masked_lm_positions sorted ascending, then 0-padded.
  """
  ids, segment_ids, lengths = assemble(spans, pool, vocab,
                                       options.max_seq_length)
  start = None
  if word_starts is not None and len(word_starts):
    start = word_starts[_pool_index(spans, options.max_seq_length,
                                    len(word_starts))]
  tokens = _find_tokens(ids, lengths, vocab, options.do_whole_word_mask,
                        start)
  words = _find_words(tokens, options.ngram)
  to_predict = _num_to_predict(lengths, options)
  order, drawn_n = _visit_order(spans.draws, words, options)
  chosen = _choose_spans(words, order, drawn_n, to_predict, options.ngram)
  token_masked = tokens.is_token & np.take_along_axis(
      chosen.covered, np.maximum(words.word_id, 0), axis=1)
  # Masked positions ascending: np.nonzero walks each row left to right.
  rows, cols = np.nonzero(token_masked)
  original = ids[rows, cols]
  output_ids, replacements = _replace(ids, rows, cols, original,
                                      spans.draws, vocab)
  positions, labels, weights = _prediction_slots(
      rows, cols, original, token_masked.sum(axis=1),
      options.max_predictions_per_seq)
  return MaskedBatch(
      input_ids=output_ids,
      input_mask=tokens.valid.astype(np.int32),
      segment_ids=segment_ids,
      token_boundary=tokens.token_boundary,
      masked_lm_positions=positions,
      masked_lm_ids=labels,
      masked_lm_weights=weights,
      next_sentence_labels=spans.label.astype(np.int32)[:, None],
      ngram_draws=chosen.ngram_draws,
      span_words=chosen.span_words,
      replacements=replacements)


def _find_tokens(ids: np.ndarray, lengths: np.ndarray, vocab: VocabInfo,
                 whole_words: bool, start: Optional[np.ndarray] = None
                 ) -> _Tokens:
  """Tokens, [CLS]/[SEP] and word starts of assembled ids [n, seq].

  `start`: bool [n, seq], where words start (default: start pieces).
  """
  pos = np.arange(ids.shape[1])[None, :]
  valid = pos < lengths[:, None]
  special = (ids == vocab.cls_id) | (ids == vocab.sep_id)
  is_token = valid & ~special
  if start is None:
    start = vocab.start_piece[ids]
  token_boundary = (valid & (special | start)).astype(np.int32)
  # A word starts at a start piece or after [CLS]/[SEP].
  after_special = np.ones_like(is_token)
  after_special[:, 1:] = ~is_token[:, :-1]
  if whole_words:
    word_start = is_token & (start | after_special)
  else:
    word_start = is_token
  return _Tokens(valid, is_token, word_start, token_boundary)


def _find_words(tokens: _Tokens, ngram: int) -> _Words:
  """Numbers the words of every instance and counts their tokens."""
  n = tokens.is_token.shape[0]
  word_id = np.cumsum(tokens.word_start, axis=1, dtype=np.int32) - 1
  count = word_id[:, -1].astype(np.int64) + 1
  max_words = max(int(count.max()) if n else 0, 1)
  flat_word = (np.arange(n)[:, None] * max_words + word_id)[tokens.is_token]
  word_tokens = np.bincount(flat_word, minlength=n * max_words).reshape(
      n, max_words)
  cum_tokens = np.zeros((n, max_words + ngram + 1), np.int64)
  np.cumsum(word_tokens, axis=1, out=cum_tokens[:, 1:max_words + 1])
  cum_tokens[:, max_words + 1:] = cum_tokens[:, max_words:max_words + 1]
  return _Words(word_id, count, max_words, cum_tokens)


def _num_to_predict(lengths: np.ndarray,
                    options: InstanceOptions) -> np.ndarray:
  """int64 [n]: min(max_predictions, max(1, round(length * prob))), or 0."""
  if options.masked_lm_prob > 0:
    return np.minimum(options.max_predictions_per_seq, np.maximum(
        1, np.rint(lengths * options.masked_lm_prob))).astype(np.int64)
  return np.zeros(len(lengths), np.int64)


def _visit_order(draws: np.ndarray, words: _Words, options: InstanceOptions):
  """The random order candidates are visited in, and n drawn at each.

  Returns:
    order: int64 [n, max_words], word indexes, padding words last.
    drawn_n: int64 [n, max_words], n in 1..ngram for the j-th visit.
  """
  max_words = words.max_words
  # Sort unique int64 keys (the draw's float32 bits, which order like the
  # floats, then the word index), so any sort algorithm gives the same order.
  bits = max(1, (max_words - 1).bit_length())
  word_index = np.arange(max_words)
  keys = draws[:, 0, :max_words].view(np.int32).astype(np.int64)
  keys[word_index[None, :] >= words.count[:, None]] = 1 << 31  # Padding last.
  order = np.sort((keys << bits) | word_index, axis=1) & ((1 << bits) - 1)
  ngram_draw = draws[:, 1, :max_words]
  drawn_n = np.ones((len(draws), max_words), np.int64)
  for bound in ngram_cdf(options.ngram, options.favor_shorter_ngram):
    drawn_n += ngram_draw >= bound
  return order, drawn_n


def _choose_spans(words: _Words, order: np.ndarray, drawn_n: np.ndarray,
                  to_predict: np.ndarray, ngram: int) -> _Spans:
  """Visits the candidates in lock step over the batch, masking n-grams.

  Step j takes the j-th candidate c of every instance still below its
  budget: the longest span of at most drawn_n words from c that fits the
  budget is masked, unless it overlaps a masked word.
  """
  n = len(to_predict)
  num_words, cum_tokens = words.count, words.cum_tokens
  covered = np.zeros((n, words.max_words + ngram), bool)
  masked = np.zeros(n, np.int64)
  span_words = np.zeros(ngram + 1, np.int64)
  ngram_draws = np.zeros(ngram + 1, np.int64)
  active = np.flatnonzero((to_predict > 0) & (num_words > 0))
  for j in range(words.max_words):
    active = active[(masked[active] < to_predict[active]) &
                    (j < num_words[active])]
    if not active.size:
      break
    c = order[active, j]
    ngram_draws += np.bincount(drawn_n[active, j], minlength=ngram + 1)
    chosen, chosen_len = _longest_fitting_span(
        cum_tokens, active, c, drawn_n[active, j],
        to_predict[active] - masked[active], ngram)
    overlap = np.zeros(active.size, bool)
    for k in range(ngram):
      overlap |= (k < chosen) & covered[active, c + k]
    take = (chosen > 0) & ~overlap
    for k in range(ngram):
      hit = take & (k < chosen)
      covered[active[hit], c[hit] + k] = True
    masked[active[take]] += chosen_len[take]
    span = np.minimum(chosen[take], num_words[active[take]] - c[take])
    span_words += np.bincount(span, minlength=ngram + 1)
  return _Spans(covered, ngram_draws, span_words)


def _longest_fitting_span(cum_tokens: np.ndarray, rows: np.ndarray,
                          c: np.ndarray, max_n: np.ndarray,
                          budget: np.ndarray, ngram: int):
  """Per visit, the most words k <= max_n from c whose tokens fit `budget`.

  Returns:
    (k, its tokens), int64 [visits] each; k = 0 where not even one word fits.
  """
  first = cum_tokens[rows, c]
  chosen = np.zeros(rows.size, np.int64)
  chosen_len = np.zeros(rows.size, np.int64)
  for k in range(1, ngram + 1):
    span_len = cum_tokens[rows, c + k] - first
    fits = (k <= max_n) & (span_len <= budget)
    chosen = np.where(fits, k, chosen)
    chosen_len = np.where(fits, span_len, chosen_len)
  return chosen, chosen_len


def _replace(ids: np.ndarray, rows: np.ndarray, cols: np.ndarray,
             original: np.ndarray, draws: np.ndarray, vocab: VocabInfo):
  """80/10/10: masked tokens become [MASK], stay, or become a random id.

  Args:
    ids: int32 [n, seq], the assembled ids.
    rows, cols: int [masked], the masked positions.
    original: int32 [masked], ids[rows, cols].
    draws: float32 [n, 4, seq], the instances' masking randoms.
    vocab: VocabInfo.

  Returns:
    (int32 [n, seq] ids after replacement, int64 [3] how many went each
    way).
  """
  replace = draws[rows, 2, cols]
  random_ids = np.minimum(
      (draws[rows, 3, cols] * vocab.vocab_size).astype(np.int64),
      vocab.vocab_size - 1)
  output_ids = ids.copy()
  output_ids[rows, cols] = np.where(
      replace < 0.8, vocab.mask_id, np.where(replace < 0.9, original,
                                             random_ids))
  replacements = np.array([np.count_nonzero(replace < 0.8),
                           np.count_nonzero((replace >= 0.8) &
                                            (replace < 0.9)),
                           np.count_nonzero(replace >= 0.9)], np.int64)
  return output_ids, replacements


def _prediction_slots(rows: np.ndarray, cols: np.ndarray,
                      original: np.ndarray, counts: np.ndarray,
                      num_pred: int):
  """The first `num_pred` masked positions of every row, 0-padded.

  Args:
    rows, cols: int [masked], the masked positions, ascending per row.
    original: int32 [masked], the ids there before replacement.
    counts: int [n], masked positions per row.
    num_pred: max_predictions_per_seq.

  Returns:
    masked_lm_positions int32, masked_lm_ids int32, masked_lm_weights
    float32, each [n, num_pred].
  """
  n = len(counts)
  rank = np.arange(rows.size) - np.repeat(np.cumsum(counts) - counts, counts)
  keep = rank < num_pred
  positions = np.zeros((n, num_pred), np.int32)
  positions[rows[keep], rank[keep]] = cols[keep]
  labels = np.zeros((n, num_pred), np.int32)
  labels[rows[keep], rank[keep]] = original[keep]
  in_use = np.arange(num_pred)[None, :] < counts[:, None]
  return positions, labels, in_use.astype(np.float32)
