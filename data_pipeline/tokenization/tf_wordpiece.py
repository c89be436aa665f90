"""In-graph WordPiece tokenizer: raw tf.string -> ids of a `vocab.txt`.

`TFWordPieceTokenizer` is the TensorFlow twin of
`wordpiece_tokenization.WordPieceTokenizer`, for the exported preprocessor:
BERT's basic tokenization done with tf.strings / tensorflow_text ops, then
`tensorflow_text.FastWordpieceTokenizer` on the words.

Why not `tensorflow_text.BertTokenizer`: its basic tokenizer replaces
control characters with a space (the official code drops them, joining
"ab\\x00cd" into one word), splits only on RE2's ASCII `\\s` (not U+3000,
the ideographic space of Chinese text, nor U+00A0), and with `lower_case`
applies NFKC case folding, which turns full-width "Ａ，" into "a," where
the official `str.lower` keeps them full-width. So the cleaning, CJK
spacing, lowercasing, accent stripping and punctuation split are done here
with character classes built from this Python's `unicodedata` (the same
predicates as the Python path), and WordPiece runs on pre-split words.
Words over 200 characters become "[UNK]" here, by characters, as
officially (tensorflow_text's limit counts bytes).

Known differences from the Python path: ICU (tf.strings.lower, NFD) knows
another Unicode version than Python, and `tf.strings.lower` maps one
character at a time, so Greek final sigma lowercases to "σ", not "ς".
"""

import functools
from typing import Sequence

import tensorflow as tf
import tensorflow_text as tf_text
import tf_keras

from data_pipeline.tokenization import wordpiece_tokenizer as wp
from data_pipeline.tokenization.tf_sentencepiece import char_class

# Larger than any 200-character word in UTF-8, so only the character limit
# applies.
_MAX_BYTES_PER_WORD = 4 * wp.MAX_INPUT_CHARS_PER_WORD + 4


def _is_space(char: str) -> bool:
  """Characters Python's split sees as whitespace after the cleaning."""
  return not wp.is_dropped(char) and (char.isspace() or
                                      wp.is_whitespace(char))


@functools.lru_cache(maxsize=None)
def character_classes():
  """RE2 classes: (dropped, whitespace, CJK, Mn, punctuation).

  The characters BERT's basic tokenization drops, reads as whitespace, puts
  spaces around (CJK), strips after NFD with `do_lower_case` (Mn), and
  splits off (punctuation); also used by the WordPiece SQuAD export.
  """
  import unicodedata
  return (char_class(wp.is_dropped), char_class(_is_space),
          char_class(wp.is_cjk),
          char_class(lambda c: unicodedata.category(c) == "Mn"),
          char_class(wp.is_punctuation))


class TFWordPieceTokenizer(tf_keras.layers.Layer):
  """WordPiece tokenization in-graph: strings [batch] -> ragged int32 ids.

  Args:
    tokens: list of str, the vocabulary in id order (as
      `wordpiece_tokenization.load_vocab` reads it). Use `from_file` to
      read a `vocab.txt`.
    do_lower_case: bool, as in `WordPieceTokenizer`.

  Call: `texts` tf.string [batch] -> tf.RaggedTensor int32 [batch, (tokens)],
  equal to `WordPieceTokenizer.encode` of each text.
  """

  def __init__(self, tokens: Sequence[str], do_lower_case: bool = True,
               **kwargs):
    kwargs.setdefault("trainable", False)
    super().__init__(**kwargs)
    self._tokens = list(tokens)
    self.do_lower_case = do_lower_case
    (self._dropped, self._space, self._cjk, self._mn,
     self._punctuation) = character_classes()
    self._wordpiece = tf_text.FastWordpieceTokenizer(
        vocab=self._tokens, suffix_indicator=wp.CONTINUATION,
        max_bytes_per_word=_MAX_BYTES_PER_WORD, token_out_type=tf.int64,
        unknown_token=wp.UNK_TOKEN, no_pretokenization=True)
    self._pieces = tf.constant(self._tokens, tf.string)  # [vocab]

  @classmethod
  def from_file(cls, vocab_file: str, **kwargs):
    """Reads a `vocab.txt` (any filesystem); UserInputError naming it."""
    return cls(wp.load_vocab(vocab_file), **kwargs)

  @property
  def vocab_size(self) -> int:
    return len(self._tokens)

  def words(self, texts: tf.Tensor) -> tf.RaggedTensor:
    """BERT's basic tokenization. tf.string [batch] -> [batch, (words)]."""
    x = tf.strings.regex_replace(texts, self._dropped, "")
    x = tf.strings.regex_replace(x, self._space, " ")
    x = tf.strings.regex_replace(x, f"({self._cjk})", r" \1 ")
    if self.do_lower_case:
      x = tf.strings.lower(x, encoding="utf-8")
      x = tf_text.normalize_utf8(x, "NFD")
      x = tf.strings.regex_replace(x, self._mn, "")
    words = tf_text.regex_split(x, f" +|{self._punctuation}",
                                self._punctuation)  # [b, (w)]
    long_word = tf.strings.length(words.flat_values, unit="UTF8_CHAR") > (
        wp.MAX_INPUT_CHARS_PER_WORD)
    # "[UNK]" cannot come out of the split ("[" is punctuation), and
    # WordPiece maps it to its own id.
    return words.with_flat_values(
        tf.where(long_word, wp.UNK_TOKEN, words.flat_values))

  def word_pieces_with_offsets(self, words: tf.Tensor):
    """WordPiece alone, on words (`words`' flat values), with byte offsets.

    Args:
      words: tf.string [w], one word each.

    Returns:
      (ids, begin, end), tf.RaggedTensor int64 [w, (pieces)] each: a piece's
      id and its byte range within its word.
    """
    return self._wordpiece.tokenize_with_offsets(words)

  def call(self, texts: tf.Tensor) -> tf.RaggedTensor:
    """Ids. tf.string [batch] -> tf.RaggedTensor int32 [batch, (tokens)]."""
    pieces = self._wordpiece.tokenize(self.words(texts))  # [b, (w), (p)]
    return tf.cast(pieces.merge_dims(1, 2), tf.int32)  # [b, (p)]

  def tokenize(self, texts: tf.Tensor) -> tf.RaggedTensor:
    """Pieces. tf.string [batch] -> tf.RaggedTensor string [batch, (pieces)]."""
    return tf.ragged.map_flat_values(tf.gather, self._pieces, self(texts))

  def get_config(self):
    config = super().get_config()
    config.update(tokens=self._tokens, do_lower_case=self.do_lower_case)
    return config

