"""In-graph n-gram whole-word masking: new masks every time a batch is read.

`remask` takes a parsed batch (with `token_boundary`), restores the original
tokens from the stored masks and masks again with the rules and the
lock-step algorithm of `pretraining_data.mask_instances`, in TensorFlow.
Given the same uniform draws both give identical output (tested), so the
statistics of the offline data carry over. `pretraining_input` applies it
with `dynamic_masking=...`.
"""

import dataclasses
from typing import Dict, Optional

import tensorflow as tf

from data_pipeline import pretraining_data


@dataclasses.dataclass(frozen=True)
class DynamicMasking:
  """What `remask` needs: the vocabulary's ids and the masking options.

  Attributes:
    vocab_size, cls_id, sep_id, mask_id: from the SentencePiece model.
    masked_lm_prob, ngram, favor_shorter_ngram, do_whole_word_mask: as the
      create_pretraining_data flags.
  """
  vocab_size: int
  cls_id: int
  sep_id: int
  mask_id: int
  masked_lm_prob: float = 0.15
  ngram: int = 3
  favor_shorter_ngram: bool = True
  do_whole_word_mask: bool = True


def _original_ids(batch):
  """input_word_ids with the stored masked tokens put back. int32 [b, s]."""
  ids = batch["input_word_ids"]
  used = tf.where(batch["masked_lm_weights"] > 0)  # [m, 2] (row, slot)
  rows = used[:, 0]
  positions = tf.gather_nd(batch["masked_lm_positions"], used)
  labels = tf.gather_nd(batch["masked_lm_ids"], used)
  index = tf.stack([rows, tf.cast(positions, tf.int64)], axis=1)
  return tf.tensor_scatter_nd_update(ids, index, labels)


def remask(batch: Dict[str, tf.Tensor], config: DynamicMasking,
           seed: Optional[int] = None,
           draws: Optional[tf.Tensor] = None) -> Dict[str, tf.Tensor]:
  """New masks for a batch of model inputs (see `pretraining_input`).

  Args:
    batch: dict with input_word_ids, input_mask, token_boundary,
      masked_lm_positions, masked_lm_ids, masked_lm_weights ([b, s] or
      [b, p]); other entries pass through.
    config: DynamicMasking.
    seed: op seed of the uniform draws.
    draws: float32 [b, 4, s] uniform draws to use instead (for tests).

  Returns:
    The batch with new input_word_ids and masked_lm_* (same shapes/dtypes).
  """
  ids = _original_ids(batch)
  b = tf.shape(ids)[0]
  s = ids.shape[1]
  p = batch["masked_lm_positions"].shape[1]
  ngram = config.ngram
  if draws is None:
    draws = tf.random.uniform([b, 4, s], dtype=tf.float32, seed=seed)
  valid = batch["input_mask"] > 0
  special = tf.equal(ids, config.cls_id) | tf.equal(ids, config.sep_id)
  is_tok = valid & ~special
  start = batch["token_boundary"] > 0
  after_special = tf.concat([tf.ones_like(is_tok[:, :1]),
                             ~is_tok[:, :-1]], axis=1)
  if config.do_whole_word_mask:
    word_start = is_tok & (start | after_special)
  else:
    word_start = is_tok
  word_id = tf.cumsum(tf.cast(word_start, tf.int32), axis=1) - 1  # [b, s]
  num_words = word_id[:, -1] + 1  # [b]
  # Tokens per word; cum_tokens[:, w] = tokens in words [0, w). [b, s+ngram+1]
  flat = tf.range(b)[:, None] * s + tf.maximum(word_id, 0)
  word_tokens = tf.reshape(tf.math.unsorted_segment_sum(
      tf.cast(is_tok, tf.int32), flat, b * s), [b, s])
  cum = tf.cumsum(word_tokens, axis=1)
  cum_tokens = tf.concat(
      [tf.zeros([b, 1], tf.int32), cum, tf.repeat(cum[:, -1:], ngram, 1)], 1)
  lengths = tf.reduce_sum(tf.cast(valid, tf.int32), axis=1)
  if config.masked_lm_prob > 0:
    to_predict = tf.minimum(p, tf.maximum(1, tf.cast(tf.round(
        tf.cast(lengths, tf.float64) * config.masked_lm_prob), tf.int32)))
  else:
    to_predict = tf.zeros([b], tf.int32)

  word_index = tf.range(s)
  keys = tf.where(word_index[None, :] < num_words[:, None], draws[:, 0, :],
                  2.0)
  order = tf.argsort(keys, axis=1, stable=True)  # [b, s]
  drawn_n = tf.ones([b, s], tf.int32)
  for bound in pretraining_data.ngram_cdf(ngram, config.favor_shorter_ngram):
    drawn_n += tf.cast(tf.cast(draws[:, 1, :], tf.float64) >= bound,
                       tf.int32)

  def step(j, covered, masked):
    active = (masked < to_predict) & (j < num_words)
    c = order[:, j]
    budget = to_predict - masked
    first = tf.gather(cum_tokens, c, batch_dims=1)
    chosen = tf.zeros([b], tf.int32)
    chosen_len = tf.zeros([b], tf.int32)
    for k in range(1, ngram + 1):
      span_len = tf.gather(cum_tokens, c + k, batch_dims=1) - first
      fits = (k <= drawn_n[:, j]) & (span_len <= budget)
      chosen = tf.where(fits, k, chosen)
      chosen_len = tf.where(fits, span_len, chosen_len)
    overlap = tf.zeros([b], tf.bool)
    for k in range(ngram):
      overlap |= (k < chosen) & tf.gather(covered, c + k, batch_dims=1)
    take = active & (chosen > 0) & ~overlap
    for k in range(ngram):
      hit = take & (k < chosen)
      covered |= tf.cast(tf.one_hot(c + k, s + ngram), tf.bool) & hit[:, None]
    masked += tf.where(take, chosen_len, 0)
    return j + 1, covered, masked

  def keep_going(j, covered, masked):
    del covered
    return (j < s) & tf.reduce_any((masked < to_predict) & (j < num_words))

  _, covered, _ = tf.while_loop(
      keep_going, step,
      [tf.constant(0), tf.zeros([b, s + ngram], tf.bool), tf.zeros([b],
                                                                   tf.int32)])
  token_masked = is_tok & tf.gather(covered, tf.maximum(word_id, 0),
                                    batch_dims=1)
  replace = draws[:, 2, :]
  random_ids = tf.minimum(
      tf.cast(draws[:, 3, :] * float(config.vocab_size), tf.int32),
      config.vocab_size - 1)
  new_ids = tf.where(replace < 0.8, config.mask_id,
                     tf.where(replace < 0.9, ids, random_ids))
  output_ids = tf.where(token_masked, new_ids, ids)
  # Masked positions ascending: a stable sort puts them (as 0) first.
  first_masked = tf.argsort(tf.cast(~token_masked, tf.int32), axis=1,
                            stable=True)
  if p > s:
    first_masked = tf.pad(first_masked, [[0, 0], [0, p - s]])
  first_masked = first_masked[:, :p]
  counts = tf.reduce_sum(tf.cast(token_masked, tf.int32), axis=1)
  in_use = tf.range(p)[None, :] < counts[:, None]
  out = dict(batch)
  out.update(
      input_word_ids=output_ids,
      masked_lm_positions=tf.where(in_use, first_masked, 0),
      masked_lm_ids=tf.where(in_use, tf.gather(ids, first_masked,
                                               batch_dims=1), 0),
      masked_lm_weights=tf.cast(in_use, tf.float32))
  return out

