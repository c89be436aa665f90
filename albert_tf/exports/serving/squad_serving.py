"""SquadServing: the in-graph SQuAD pipeline of the raw-text SavedModel.

A tf.Module around a fine-tuned SQuAD model that does, in-graph, what
`run_squad` does in Python for predictions.json (the steps, the outputs and
the signatures are described in squad_export, which writes it): the
context's pieces and their original characters (squad_serving_context;
squad_serving_wordpiece for a WordPiece vocabulary), the question and the
windows of the context, the model, and the post-processing.
"""

from typing import Sequence

import numpy as np
import sentencepiece as spm
import tensorflow as tf
import tensorflow_text as tf_text
import tf_keras

from albert_common.encoder_inputs import INPUT_MASK
from albert_common.encoder_inputs import INPUT_TYPE_IDS
from albert_common.encoder_inputs import INPUT_WORD_IDS
from albert_tf.exports.bucketing import cut_to_bucket
from albert_tf.exports.serving import squad_serving_context
from data_pipeline.tokenization import tf_sentencepiece as tf_tokenization


def _first_argmax(values, mask):
  """Index of the first maximum of `values` where `mask`, and whether any.

  values: float64 [n]; mask: bool [n]. (tf.argmax does not promise which
  of equal values it returns; the Python path takes the first.)
  """
  masked = tf.where(mask, values, tf.constant(-np.inf, tf.float64))
  best = tf.reduce_max(masked)
  n = tf.shape(values)[0]
  index = tf.reduce_min(tf.where(mask & tf.equal(masked, best),
                                 tf.range(n), n))
  return tf.minimum(index, tf.maximum(n - 1, 0)), tf.reduce_any(mask)


class SquadServing(squad_serving_context.SentencePieceContext, tf.Module):
  """The in-graph pipeline of the module docstring around a SQuAD model.

  Args:
    model: AlbertSpanLabeler (start_logits, end_logits) or AlbertSquadV2
      (beam outputs and cls_logits; `beam=True`).
    model_proto: the SentencePiece model bytes.
    seq_length, doc_stride, max_query_length, n_best_size,
      max_answer_length: as in fine-tuning (task_settings.SquadOptions).
    beam: the model is AlbertSquadV2.
    version_2: SQuAD v2.0 (null odds, "" above `threshold`).
    threshold: null_score_diff_threshold of predictions.json.
    do_lower_case, keep_accents: the tokenizer's.
    length_buckets: the model runs a question's windows at the smallest
      that holds the longest (albert_tf.exports.bucketing); () or one: at
      seq_length.
  """

  def __init__(self, model: tf_keras.Model, model_proto: bytes,
               seq_length: int, doc_stride: int, max_query_length: int,
               n_best_size: int, max_answer_length: int, beam: bool,
               version_2: bool, threshold: float = 0.0,
               do_lower_case: bool = True, keep_accents: bool = False,
               length_buckets: Sequence[int] = ()):
    super().__init__(name="squad_serving")
    self.length_buckets = tuple(length_buckets)
    self.model = model
    self.tokenizer = tf_tokenization.TFSentencePieceTokenizer(
        model_proto, do_lower_case=do_lower_case, keep_accents=keep_accents)
    self.sp = tf_text.FastSentencepieceTokenizer(model_proto)
    splits, ids, lengths, known = squad_serving_context.vocabulary_tables(
        model_proto)
    self.expand_ids = tf.RaggedTensor.from_row_splits(tf.constant(ids),
                                                      tf.constant(splits))
    self.expand_lengths = tf.RaggedTensor.from_row_splits(
        tf.constant(lengths), tf.constant(splits))
    self.known_chars = tf.constant(known)  # sorted code points
    self.whitespace = tf.constant(squad_serving_context.WHITESPACE,
                                  tf.int32)
    sp = spm.SentencePieceProcessor(model_proto=model_proto)
    self.cls_id, self.sep_id, self.pad_id = (
        sp.PieceToId(p) for p in ("[CLS]", "[SEP]", "<pad>"))
    self.combining = tf_tokenization.character_classes()[1]
    self._keep_settings(seq_length, doc_stride, max_query_length,
                        n_best_size, max_answer_length, beam, version_2,
                        threshold, do_lower_case, keep_accents)

  def _keep_settings(self, seq_length, doc_stride, max_query_length,
                     n_best_size, max_answer_length, beam, version_2,
                     threshold, do_lower_case, keep_accents):
    """The fine-tuning settings the pipeline reads (see the class Args)."""
    self.seq_length = seq_length
    self.doc_stride = doc_stride
    self.max_query_length = max_query_length
    self.n_best_size = n_best_size
    self.max_answer_length = max_answer_length
    self.beam = beam
    self.version_2 = version_2
    self.threshold = float(threshold)
    self.do_lower_case = do_lower_case
    self.keep_accents = keep_accents

  # --- 2./3. windows and the model -----------------------------------------

  def _windows(self, query_ids, doc_ids):
    """Model inputs of every window, and each position's piece index."""
    q = tf.shape(query_ids)[0]
    n_pieces = tf.shape(doc_ids)[0]
    max_doc = self.seq_length - q - 3
    step = tf.minimum(max_doc, self.doc_stride)
    count = 1 + (tf.maximum(n_pieces - max_doc, 0) + step - 1) // step
    window_start = tf.range(count) * step  # [W]
    window_len = tf.minimum(n_pieces - window_start, max_doc)  # [W]
    j = tf.range(self.seq_length)[None, :]  # [1, S]
    doc_pos = j - (q + 2)  # piece index within the window
    in_doc = (doc_pos >= 0) & (doc_pos < window_len[:, None])  # [W, S]
    piece = window_start[:, None] + doc_pos
    doc_tokens = tf.gather(doc_ids, tf.clip_by_value(piece, 0,
                                                     tf.maximum(n_pieces - 1,
                                                                0)))
    query_tokens = tf.gather(query_ids, tf.clip_by_value(j - 1, 0,
                                                         tf.maximum(q - 1, 0)))
    end = q + 2 + window_len[:, None]  # the last [SEP]
    ids = tf.where(in_doc, doc_tokens, self.pad_id)
    ids = tf.where((j >= 1) & (j <= q), query_tokens, ids)
    ids = tf.where((j == q + 1) | (j == end), self.sep_id, ids)
    ids = tf.where(j == 0, self.cls_id, ids)
    inputs = {
        INPUT_WORD_IDS: ids,
        INPUT_MASK: tf.cast(j <= end, tf.int32),
        INPUT_TYPE_IDS: tf.cast((j >= q + 2) & (j <= end), tf.int32),
        "p_mask": tf.cast(~in_doc & (j != 0), tf.int32)}
    # Max context (squad_features' max-context rule): per piece, the first
    # window with the best min(left, right) + 0.01 * length.
    p = tf.range(n_pieces)[None, :]
    last = (window_start + window_len - 1)[:, None]
    covers = (p >= window_start[:, None]) & (p <= last)
    score = (tf.cast(tf.minimum(p - window_start[:, None], last - p),
                     tf.float64) +
             0.01 * tf.cast(window_len[:, None], tf.float64))
    score = tf.where(covers, score, tf.constant(-np.inf, tf.float64))
    best = tf.reduce_max(score, axis=0, keepdims=True)
    best_window = tf.reduce_min(
        tf.where(covers & tf.equal(score, best), tf.range(count)[:, None],
                 count), axis=0)  # [L]
    max_context = tf.equal(
        tf.gather(best_window, tf.clip_by_value(piece, 0,
                                                tf.maximum(n_pieces - 1, 0))),
        tf.range(count)[:, None]) & in_doc  # [W, S]
    return inputs, piece, in_doc, max_context, window_len, q

  # --- 4. post-processing ----------------------------------------------------

  def _answer_one(self, question, context, threshold):
    query = self.tokenizer(question[None])[0][:self.max_query_length]
    doc_ids, tok_start, tok_end, codepoints = self._paragraph(context)
    inputs, piece, in_doc, max_context, window_len, q = self._windows(
        query, doc_ids)
    has_pieces = tf.size(doc_ids) > 0
    if not self.beam:
      inputs = {k: v for k, v in inputs.items() if k != "p_mask"}
    inputs = cut_to_bucket(inputs, self.length_buckets)  # [W, bucket]
    outputs = self.model(inputs, training=False)
    count = tf.shape(piece)[0]
    if self.beam:
      starts, ends, start_scores, end_scores = _beam_candidates(outputs)
    else:
      starts, ends, start_scores, end_scores, start_logits, end_logits = (
          self._logit_candidates(outputs, q + 3 + window_len))

    def at(grid, positions):
      return tf.gather(grid, positions, batch_dims=1)

    valid = (at(in_doc, starts) & at(in_doc, ends) & (ends >= starts) &
             (ends - starts + 1 <= self.max_answer_length) &
             at(max_context, starts) & has_pieces)
    scores = start_scores + end_scores
    best, any_valid = _first_argmax(tf.reshape(scores, [-1]),
                                    tf.reshape(valid, [-1]))
    width = tf.shape(starts)[1]
    window = best // width
    start_piece = piece[window, starts[window, best % width]]
    end_piece = piece[window, ends[window, best % width]]
    span, begin_s, finish_s = self._span_text(
        codepoints, tok_start, tok_end, start_piece, end_piece)
    empty_text = tf.constant("" if self.beam else "empty")
    empty_score = tf.constant(-2e6 if self.beam else 0.0, tf.float64)
    text = tf.where(any_valid, span, empty_text)
    score = tf.where(any_valid, tf.reshape(scores, [-1])[best], empty_score)
    span_start = tf.where(any_valid, begin_s, -1)
    span_end = tf.where(any_valid, finish_s, -1)
    result = dict(answer=text, start=span_start, end=span_end,
                  score=tf.cast(score, tf.float32))
    if self.version_2:
      if self.beam:
        null_odds = tf.cast(tf.reduce_min(outputs["cls_logits"]), tf.float64)
      else:
        null_odds = tf.reduce_min(start_logits[:, 0] + end_logits[:, 0]) - score
      result.update(_no_answer(result, null_odds, count, threshold))
    return result

  def _logit_candidates(self, outputs, tokens):
    """(starts, ends, start_scores, end_scores) [W, k*k] of the n-best start
    and end logits of each window, and the float64 logits [W, bucket].

    Only the window's own positions are ranked (squad_postprocess), not
    padding, whose extent depends on the bucket; tokens: int32 [W], the
    window's length.
    """
    positions = tf.range(tf.shape(outputs["start_logits"])[1])[None, :]

    def ranked(logits):
      return tf.where(positions < tokens[:, None],
                      tf.cast(logits, tf.float64),
                      tf.constant(-np.inf, tf.float64))
    start_logits = ranked(outputs["start_logits"])
    end_logits = ranked(outputs["end_logits"])
    k = tf.minimum(self.n_best_size, tf.shape(start_logits)[1])
    start_top = tf.math.top_k(start_logits, k).indices  # [W, k]
    end_top = tf.math.top_k(end_logits, k).indices
    starts = tf.repeat(start_top, k, axis=1)  # [W, k*k], (i, j)
    ends = tf.tile(end_top, [1, k])
    start_scores = tf.gather(start_logits, starts, batch_dims=1)
    end_scores = tf.gather(end_logits, ends, batch_dims=1)
    return starts, ends, start_scores, end_scores, start_logits, end_logits

  def _span_text(self, codepoints, tok_start, tok_end, start_piece,
                 end_piece):
    """(UTF-8 text, first, last + 1 character) of the pieces' span in the
    context's characters (int32 [n]), without whitespace at either end."""
    # (Clipped: without a valid span these are placeholders, unused.)
    last_piece = tf.maximum(tf.size(tok_start) - 1, 0)
    padded_start = tf.concat([tok_start, [0]], 0)
    padded_end = tf.concat([tok_end, [-1]], 0)
    begin = tf.gather(padded_start, tf.clip_by_value(start_piece, 0,
                                                     last_piece))
    finish = tf.gather(padded_end, tf.clip_by_value(end_piece, 0,
                                                    last_piece)) + 1
    # .strip(): drop whitespace at both ends of the span.
    n = tf.shape(codepoints)[0]
    index = tf.range(n)
    is_space = tf.reduce_any(codepoints[:, None] == self.whitespace[None, :],
                             axis=1)
    body = (index >= begin) & (index < finish) & ~is_space
    begin_s = tf.reduce_min(tf.where(body, index, n))
    finish_s = tf.reduce_max(tf.where(body, index, -1)) + 1
    begin_s = tf.minimum(begin_s, finish_s)
    span = tf.strings.unicode_encode(codepoints[begin_s:finish_s], "UTF-8")
    return span, begin_s, finish_s

  def answer_ids(self, inputs):
    """The model alone: int32 [batch, seq] inputs (and p_mask for the
    beam) -> its float32 / int32 outputs (token_ids.py)."""
    outputs = self.model(inputs, training=False)
    return {k: (tf.cast(v, tf.float32) if v.dtype.is_floating else v)
            for k, v in outputs.items()}

  def answer(self, questions, contexts, threshold=None):
    """tf.string [batch] each -> dict of [batch] outputs (module docstring).

    threshold: v2.0 null-odds threshold, float32 scalar; None: the one
      given at construction (predictions.json's).
    """
    if threshold is None:
      threshold = tf.constant(self.threshold, tf.float32)
    signature = dict(answer=tf.TensorSpec([], tf.string),
                     start=tf.TensorSpec([], tf.int32),
                     end=tf.TensorSpec([], tf.int32),
                     score=tf.TensorSpec([], tf.float32))
    if self.version_2:
      signature.update(best_answer=tf.TensorSpec([], tf.string),
                       null_odds=tf.TensorSpec([], tf.float32),
                       no_answer_probability=tf.TensorSpec([], tf.float32))
    return tf.map_fn(lambda qc: self._answer_one(qc[0], qc[1], threshold),
                     (questions, contexts), fn_output_signature=signature)


def _beam_candidates(outputs):
  """(starts, ends, start_scores, end_scores) [W, K1*K2] of the SQuAD v2.0
  beam head's top starts and, for each, its top ends."""
  start_index = outputs["start_top_index"]  # [W, K1]
  start_score = tf.cast(outputs["start_top_log_probs"], tf.float64)
  end_index = outputs["end_top_index"]  # [W, K1*K2]
  end_score = tf.cast(outputs["end_top_log_probs"], tf.float64)
  k1 = tf.shape(start_index)[1]
  k2 = tf.shape(end_index)[1] // k1
  starts = tf.repeat(start_index, k2, axis=1)  # [W, K1*K2], (i, j)
  start_scores = tf.repeat(start_score, k2, axis=1)
  return starts, end_index, start_scores, end_score


def _no_answer(result, null_odds, count, threshold):
  """SQuAD v2.0's fields: "" (start, end -1) where null_odds (float64
  scalar) is over the threshold; best_answer keeps the span."""
  null_odds = tf.where(count > 0, null_odds, tf.constant(np.inf, tf.float64))
  no_answer = null_odds > tf.cast(threshold, tf.float64)
  return dict(
      answer=tf.where(no_answer, tf.constant(""), result["answer"]),
      start=tf.where(no_answer, -1, result["start"]),
      end=tf.where(no_answer, -1, result["end"]),
      best_answer=result["answer"], null_odds=tf.cast(null_odds, tf.float32),
      no_answer_probability=tf.cast(tf.sigmoid(null_odds), tf.float32))
