"""NerServing: the in-graph pipeline of the raw-text NER SavedModel.

A tf.Module around a fine-tuned AlbertTokenClassifier that does, in-graph,
what fine-tuning does in Python for a raw text
(albert_tf.training.finetuning.tasks.ner.predict_entities):

  1. words and their character offsets (data_pipeline.tasks.ner.
     word_splitting's rule, as RE2 classes built from its predicates);
  2. each word's pieces, tokenized alone (the run's SentencePiece or
     WordPiece tokenizer, in-graph); a word without pieces gets [UNK];
  3. the windows of data_pipeline.tasks.ner.features: `[CLS] pieces
     [SEP]` of seq_length, starts min(doc_stride, seq_length - 2) apart;
     the model on all windows of the batch (at the smallest length bucket
     that holds them);
  4. each word's tag probabilities from its first piece in its max-context
     window; the most probable tag;
  5. the entities (ner_decoding), their character offsets and scores
     (mean probability of their words' tags), padded per batch.
"""

import functools
import math
from typing import Sequence

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text
import tf_keras

from albert_common.encoder_inputs import INPUT_MASK
from albert_common.encoder_inputs import INPUT_TYPE_IDS
from albert_common.encoder_inputs import INPUT_WORD_IDS
from albert_tf.exports.bucketing import cut_to_bucket
from albert_tf.exports.serving.ner_decoding import EntityDecoder
from data_pipeline.tasks.ner import entity_spans
from data_pipeline.tasks.ner import word_splitting
from data_pipeline.tokenization.tf_sentencepiece import char_class


@functools.lru_cache(maxsize=None)
def word_patterns():
  """RE2 (delimiters, kept delimiters) of word_splitting's rule: runs of
  whitespace are dropped, punctuation, symbols and CJK ideographs kept as
  words of their own."""
  own = char_class(word_splitting.is_own_word)
  return f"{char_class(word_splitting.is_space)}+|{own}", own


def split_words(texts):
  """word_splitting.split_words in-graph: tf.string [batch] -> (words
  tf.string, start, end int32 Unicode character offsets), ragged [batch,
  (words)] each."""
  delimiters, kept = word_patterns()
  words, begin, end = tf_text.regex_split_with_offsets(
      texts, delimiters, kept)  # byte offsets
  _, char_bytes = tf.strings.unicode_decode_with_offsets(
      texts, "UTF-8", errors="replace")  # [b, (chars)]
  text_bytes = tf.strings.length(texts)
  row_byte = tf.cumsum(tf.cast(text_bytes, tf.int64), exclusive=True)
  flat_chars = char_bytes.flat_values + tf.gather(row_byte,
                                                  char_bytes.value_rowids())
  row_char = char_bytes.row_starts()  # first character of each text
  rows = words.value_rowids()

  def to_chars(byte_offsets):
    position = byte_offsets.flat_values + tf.gather(row_byte, rows)
    index = tf.searchsorted(flat_chars, position, side="left",
                            out_type=tf.int64)
    return words.with_flat_values(tf.cast(
        index - tf.gather(row_char, rows), tf.int32))
  return words, to_chars(begin), to_chars(end)


class NerServing(tf.Module):
  """The pipeline of the module docstring around a token classifier.

  Args:
    model: AlbertTokenClassifier (dict inputs -> `logits` [b, s, L]).
    tokenizer: the in-graph tokenizer (TFSentencePieceTokenizer or
      TFWordPieceTokenizer): words tf.string [n] -> ragged int32 ids.
    control_ids: (cls, sep, pad, unk) ids of the vocabulary.
    labels: tag names, index = logit.
    scheme: the tag scheme (data_pipeline.tasks.ner.tag_schemes).
    seq_length, doc_stride: as in fine-tuning.
    length_buckets: windows run at the smallest that holds the longest
      (albert_tf.exports.bucketing); () or one: at seq_length.
  """

  def __init__(self, model: tf_keras.Model, tokenizer, control_ids,
               labels: Sequence[str], scheme: str, seq_length: int,
               doc_stride: int, length_buckets: Sequence[int] = ()):
    super().__init__(name="ner_serving")
    self.model = model
    self.tokenizer = tokenizer
    self.cls_id, self.sep_id, self.pad_id, self.unk_id = control_ids
    self.seq_length = seq_length
    self.max_pieces = seq_length - 2
    self.step = min(doc_stride, self.max_pieces)
    # Windows a piece can be in: at most ceil(max_pieces / step).
    self.candidates = math.ceil(self.max_pieces / self.step) + 1
    self.length_buckets = tuple(length_buckets)
    self.num_labels = len(labels)
    self.decoder = EntityDecoder(entity_spans.decoding_tables(labels,
                                                              scheme))
    self.type_names = tf.constant(entity_spans.entity_types(labels),
                                  tf.string)

  # --- 2. pieces (1. words: split_words) ----------------------------------

  def word_pieces(self, words):
    """Ragged int32 [n, (pieces)] of words tf.string [n]; [UNK] for a word
    without pieces."""
    ids = tf.cast(self.tokenizer(words), tf.int32)  # [n, (p)]
    count = tf.shape(words)[0]
    padded = tf.concat([ids.to_tensor(default_value=self.unk_id),
                        tf.fill([count, 1], self.unk_id)], axis=1)
    return tf.RaggedTensor.from_tensor(
        padded, lengths=tf.maximum(ids.row_lengths(), 1))

  # --- 3. windows and the model --------------------------------------------

  def windows(self, sentence_pieces):
    """Encoder inputs int32 [windows, seq_length] of every sentence's
    windows, and int32 [batch] its windows and first window, [windows]
    each window's first piece and length.

    sentence_pieces: ragged int32 [batch, (pieces)].
    """
    n = tf.cast(sentence_pieces.row_lengths(), tf.int32)  # [b]
    extra = tf.maximum(n - self.max_pieces, 0)
    count = tf.where(n > 0, 1 + (extra + self.step - 1) // self.step, 0)
    sentence = tf.repeat(tf.range(tf.size(n)), count)  # [w]
    first_window = tf.cumsum(count, exclusive=True)
    k = tf.range(tf.size(sentence)) - tf.gather(first_window, sentence)
    start = k * self.step
    length = tf.minimum(tf.gather(n, sentence) - start, self.max_pieces)
    j = tf.range(self.seq_length)[None, :]  # [1, S]
    piece = start[:, None] + j - 1  # [w, S]
    body = (j >= 1) & (j <= length[:, None])
    flat = sentence_pieces.flat_values
    row_start = tf.cast(sentence_pieces.row_starts(), tf.int32)
    at = tf.clip_by_value(tf.gather(row_start, sentence)[:, None] + piece, 0,
                          tf.maximum(tf.size(flat) - 1, 0))
    ids = tf.where(body, tf.gather(tf.concat([flat, [self.pad_id]], 0), at),
                   self.pad_id)
    ids = tf.where(j == 0, self.cls_id, ids)
    ids = tf.where(j == length[:, None] + 1, self.sep_id, ids)
    inputs = {INPUT_WORD_IDS: ids,
              INPUT_MASK: tf.cast(j <= length[:, None] + 1, tf.int32),
              INPUT_TYPE_IDS: tf.zeros_like(ids)}
    return inputs, count, first_window, start, length

  def max_context(self, word_sentence, first_piece, count, first_window,
                  start, length):
    """(window, position) int32 [words] where each word is predicted: the
    window where its first piece has the most context (the first such)."""
    k = (first_piece // self.step)[:, None] - tf.range(self.candidates)
    k_valid = (k >= 0) & (k < tf.gather(count, word_sentence)[:, None])
    window = tf.gather(first_window, word_sentence)[:, None] + tf.maximum(
        k, 0)  # [n, C]
    window = tf.minimum(window, tf.maximum(tf.size(start) - 1, 0))
    window_start = tf.gather(start, window)
    window_length = tf.gather(length, window)
    p = first_piece[:, None]
    covers = k_valid & (p >= window_start) & (
        p < window_start + window_length)
    score = (tf.cast(tf.minimum(p - window_start,
                                window_start + window_length - 1 - p),
                     tf.float64) +
             0.01 * tf.cast(window_length, tf.float64))
    score = tf.where(covers, score, tf.constant(-np.inf, tf.float64))
    best = tf.reduce_max(score, axis=1, keepdims=True)
    # The first (lowest) window of the best: candidates run downwards.
    pick = tf.reduce_max(tf.where(covers & tf.equal(score, best),
                                  tf.range(self.candidates)[None, :], -1),
                         axis=1)
    pick = tf.maximum(pick, 0)
    chosen = tf.gather(window, pick, batch_dims=1)
    position = first_piece - tf.gather(window_start, pick, batch_dims=1) + 1
    return chosen, position

  # --- 4./5. tags and entities ----------------------------------------

  def tag(self, texts):
    """tf.string [batch] -> the outputs of ner_export's serving_default."""
    words, word_start, word_end = split_words(texts)
    pieces = self.word_pieces(words.flat_values)  # [n, (p)]
    piece_splits = tf.gather(pieces.row_splits, words.row_splits)
    sentence_pieces = tf.RaggedTensor.from_row_splits(pieces.flat_values,
                                                      piece_splits)
    inputs, count, first_window, start, length = self.windows(
        sentence_pieces)
    word_sentence = tf.cast(words.value_rowids(), tf.int32)
    first_piece = tf.cast(pieces.row_starts() - tf.gather(
        piece_splits, words.value_rowids()), tf.int32)
    window, position = self.max_context(word_sentence, first_piece, count,
                                        first_window, start, length)
    logits = self.model(cut_to_bucket(inputs, self.length_buckets),
                        training=False)["logits"]  # [w, bucket, L]
    word_logits = tf.gather_nd(tf.cast(logits, tf.float64),
                               tf.stack([window, position], axis=-1))
    probabilities = tf.nn.softmax(word_logits)  # [n, L]
    tag_ids = tf.argmax(word_logits, axis=-1, output_type=tf.int32)
    scores = tf.reduce_max(probabilities, axis=-1)
    return self._entities(words.with_flat_values(tag_ids),
                          words.with_flat_values(scores), word_start,
                          word_end)

  def _entities(self, tags, scores, word_start, word_end):
    """The padded entity outputs of ragged [batch, (words)] tags, scores
    and character offsets."""
    batch = tags.nrows(out_type=tf.int32)
    # One "O" column more: every row has a word after its last one.
    dense_tags = tf.concat([tags.to_tensor(default_value=self.num_labels),
                            tf.fill([batch, 1], self.num_labels)], axis=1)
    rows, firsts, lasts, types = self.decoder(dense_tags)
    at_first = tf.stack([rows, firsts], axis=-1)
    at_last = tf.stack([rows, lasts], axis=-1)
    cumulative = tf.pad(tf.cumsum(scores.to_tensor(), axis=1),
                        [[0, 0], [1, 0]])  # [b, W + 1]
    score = ((tf.gather_nd(cumulative, at_last + [0, 1]) -
              tf.gather_nd(cumulative, at_first)) /
             tf.cast(lasts - firsts + 1, tf.float64))

    def padded(values, fill):
      return tf.RaggedTensor.from_value_rowids(
          values, rows, nrows=batch).to_tensor(default_value=fill)
    return dict(
        entity_label=padded(tf.gather(self.type_names, types), ""),
        entity_start=padded(tf.gather_nd(word_start.to_tensor(), at_first),
                            -1),
        entity_end=padded(tf.gather_nd(word_end.to_tensor(), at_last), -1),
        entity_score=padded(tf.cast(score, tf.float32), 0.0))

  def tag_ids(self, inputs):
    """The model alone: int32 [batch, seq] inputs -> `tag_logits` and
    `tag_probabilities` float32 [batch, seq, labels] (token_ids.py)."""
    logits = tf.cast(self.model(inputs, training=False)["logits"],
                     tf.float32)
    return dict(tag_logits=logits,
                tag_probabilities=tf.nn.softmax(logits, axis=-1))
