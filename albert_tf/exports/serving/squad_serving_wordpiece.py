"""The raw-text SQuAD SavedModel for a WordPiece vocabulary.

`WordPieceSquadServing` is `squad_serving.SquadServing` with the context
tokenized as `data_pipeline.tokenization.wordpiece_offsets` does in Python:
BERT's basic tokenization one original character at a time (a dropped control
character gives "", whitespace " ", a CJK ideograph " c ", any other character
its lowercased, accent-stripped form), the words and punctuation split out of
the joined text with their byte offsets, WordPiece with offsets on each
word, and every piece's range of original characters; a piece's end
extends over following characters that no piece covers and that are not
whitespace. Differences from the Python path are those of the in-graph
tokenizer (data_pipeline.tokenization.tf_wordpiece): ICU's Unicode version,
and lowercasing one character at a time (Greek final sigma).
"""

from typing import Sequence

import tensorflow as tf
import tensorflow_text as tf_text
import tf_keras

from albert_tf.exports.serving import squad_serving
from albert_tf.exports.serving import squad_serving_context
from data_pipeline.tokenization import tf_wordpiece as tf_wp
from data_pipeline.tokenization import wordpiece_tokenizer as wp
from data_pipeline.tokenization.tf_sentencepiece import char_class


class WordPieceSquadServing(squad_serving.SquadServing):
  """SquadServing over a WordPiece vocabulary.

  Args:
    model, seq_length ... threshold, do_lower_case, length_buckets: as
      SquadServing's.
    tokens: the vocabulary, tokens in id order.
  """

  def __init__(self, model: tf_keras.Model, tokens, seq_length: int,
               doc_stride: int, max_query_length: int, n_best_size: int,
               max_answer_length: int, beam: bool, version_2: bool,
               threshold: float = 0.0, do_lower_case: bool = True,
               length_buckets: Sequence[int] = ()):
    tf.Module.__init__(self, name="squad_serving")
    self.length_buckets = tuple(length_buckets)
    self.model = model
    self.tokenizer = tf_wp.TFWordPieceTokenizer(tokens,
                                                do_lower_case=do_lower_case)
    index = {t: i for i, t in enumerate(tokens)}
    self.cls_id, self.sep_id, self.pad_id = (
        index[t] for t in ("[CLS]", "[SEP]", "[PAD]"))
    self.unk_id = index[wp.UNK_TOKEN]
    (self.dropped, self.space, self.cjk, self.mn,
     self.punctuation) = tf_wp.character_classes()
    self.isspace = char_class(str.isspace)
    self.whitespace = tf.constant(squad_serving_context.WHITESPACE, tf.int32)
    self._keep_settings(seq_length, doc_stride, max_query_length,
                        n_best_size, max_answer_length, beam, version_2,
                        threshold, do_lower_case, not do_lower_case)

  def _normalize_chars(self, chars):
    """Per original char (tf.string [n]), its normalised string."""
    text = chars
    if self.do_lower_case:
      text = tf.strings.lower(text, encoding="utf-8")
      text = tf_text.normalize_utf8(text, "NFD")
      text = tf.strings.regex_replace(text, self.mn, "")
    cjk = tf.strings.regex_full_match(chars, self.cjk)
    text = tf.where(cjk, tf.strings.join([" ", chars, " "]), text)
    text = tf.where(tf.strings.regex_full_match(chars, self.space), " ", text)
    return tf.where(tf.strings.regex_full_match(chars, self.dropped), "",
                    text)

  def _paragraph(self, context):
    """ids int32 [L]; tok_start, tok_end int32 [L]; codepoints int32 [n]."""
    codepoints = tf.strings.unicode_decode(context, "UTF-8",
                                           errors="replace")
    chars = tf.strings.unicode_encode(codepoints[:, None], "UTF-8")  # [n]
    n = tf.shape(codepoints)[0]
    normalized = self._normalize_chars(chars)
    lengths = tf.strings.length(normalized, unit="UTF8_CHAR")
    norm_to_orig = tf.repeat(tf.range(n), lengths)  # [m]
    text = tf.strings.reduce_join(normalized)
    norm_cp = tf.strings.unicode_decode(text, "UTF-8")  # [m]
    char_bytes = tf.strings.length(
        tf.strings.unicode_encode(norm_cp[:, None], "UTF-8"))
    char_start_byte = tf.cumsum(char_bytes, exclusive=True)  # [m]

    words, word_begin, word_end = tf_text.regex_split_with_offsets(
        text[None], f" +|{self.punctuation}", self.punctuation)
    words = words[0]
    word_begin = tf.cast(word_begin[0], tf.int32)
    word_end = tf.cast(word_end[0], tf.int32)
    long_word = tf.strings.length(words, unit="UTF8_CHAR") > (
        wp.MAX_INPUT_CHARS_PER_WORD)
    words = tf.where(long_word, wp.UNK_TOKEN, words)
    ids, begin, end = self.tokenizer.word_pieces_with_offsets(
        words)  # [w, (p)], byte offsets within each word
    begin, end = tf.cast(begin, tf.int32), tf.cast(end, tf.int32)
    # A long word's [UNK] covers the whole word.
    word_bytes = word_end - word_begin
    begin = tf.where(long_word[:, None], tf.zeros_like(begin), begin)
    end = tf.where(long_word[:, None],
                   tf.ones_like(end) * word_bytes[:, None], end)
    abs_begin = (begin + word_begin[:, None]).flat_values
    abs_end = (end + word_begin[:, None]).flat_values  # exclusive
    first = tf.searchsorted(char_start_byte, abs_begin, side="right") - 1
    last = tf.searchsorted(char_start_byte, abs_end - 1, side="right") - 1
    start = tf.gather(norm_to_orig, first)
    raw_end = tf.gather(norm_to_orig, last)
    # Characters some piece covers, or whitespace, stop an end's extension.
    marks = tf.zeros([n + 1], tf.int32)
    marks = tf.tensor_scatter_nd_add(marks, start[:, None],
                                     tf.ones_like(start))
    marks = tf.tensor_scatter_nd_add(marks, raw_end[:, None] + 1,
                                     -tf.ones_like(raw_end))
    covered = tf.cumsum(marks)[:n] > 0
    stop = covered | tf.strings.regex_full_match(chars, self.isspace)
    stops = tf.cast(tf.where(stop)[:, 0], tf.int32)
    nxt = tf.searchsorted(stops, raw_end, side="right")
    next_stop = tf.where(nxt < tf.size(stops),
                         tf.gather(stops, tf.minimum(nxt,
                                                     tf.size(stops) - 1)),
                         n)
    return (tf.cast(ids.flat_values, tf.int32), start, next_stop - 1,
            codepoints)
