"""Raw text -> words with character offsets: the words NER tags.

One rule, the same in Python (here) and in the raw-text export's graph
(albert_tf.exports.serving.ner_serving builds its RE2 patterns from the
predicates below, so both agree character for character):

  - whitespace (Python's `str.isspace`) separates words and is dropped;
  - every punctuation or symbol character (Unicode categories P* and S*:
    ASCII punctuation, "$", emoji, ...) is a word of its own;
  - every CJK ideograph (BERT's ranges, as WordPiece) is a word of its own,
    so Chinese is tagged character by character, as CLUENER is;
  - any other run of characters is one word ("Müller", "3.5" is "3", ".",
    "5").

Offsets are in Unicode characters (code points), so `text[start:end]` is
the word in Python. English CoNLL files split text much the same way
(punctuation apart); a model trained on them tags these words.
"""

from typing import List, NamedTuple
import unicodedata

from data_pipeline.tokenization import wordpiece_tokenizer


class Word(NamedTuple):
  """A word of a text and its characters: text[start:end] == word."""
  word: str
  start: int
  end: int


def is_space(char: str) -> bool:
  """Separates words (and is not part of any)."""
  return char.isspace()


def is_own_word(char: str) -> bool:
  """A word by itself: punctuation, a symbol or a CJK ideograph."""
  return (unicodedata.category(char)[0] in "PS" or
          wordpiece_tokenizer.is_cjk(char))


def split_words(text: str) -> List[Word]:
  """The words of `text`, in order, with their character offsets."""
  words = []
  start = None
  for i, char in enumerate(text):
    if is_space(char) or is_own_word(char):
      if start is not None:
        words.append(Word(text[start:i], start, i))
        start = None
      if not is_space(char):
        words.append(Word(char, i, i + 1))
    elif start is None:
      start = i
  if start is not None:
    words.append(Word(text[start:], start, len(text)))
  return words
