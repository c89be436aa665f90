"""WordPiece tokenization (Python path), for BERT-style `vocab.txt` files.

Behaves as google-research/albert's `FullTokenizer` with
`spm_model_file=None` (the released Chinese ALBERTs, `vocab_chinese.txt`):

1. BERT's basic tokenizer. Clean the text: drop NUL, U+FFFD and control
   characters (categories Cc and Cf, except tab, newline and carriage
   return), turn whitespace (those three and category Zs) into spaces. Put
   spaces around every CJK ideograph, so each is a word of its own. Split on
   whitespace (Python's `str.split`). With `do_lower_case`, lowercase each
   word (`str.lower`) and strip accents (NFD, then drop category Mn). Split
   off each punctuation character (ASCII non-alphanumerics and category P*).
2. Greedy longest-match-first WordPiece on each word: continuation pieces
   carry "##"; a word with no match, or longer than 200 characters, is one
   "[UNK]".

Control tokens are looked up by name ([PAD] [UNK] [CLS] [SEP] [MASK]), so
BERT's layout ([UNK] at 100, [CLS] at 101) and a freshly learned one ([UNK]
at 1) both work. `make_tokenizer` picks SentencePiece or WordPiece with the
official precedence.

This module does not import TensorFlow.
"""

import bisect
from typing import Dict, Iterable, List, Optional, Sequence
import unicodedata

import numpy as np

from albert_common import file_io
from albert_common.errors import UserInputError
from data_pipeline.tokenization.control_ids import ControlIds

CONTINUATION = "##"
UNK_TOKEN = "[UNK]"
MAX_INPUT_CHARS_PER_WORD = 200
_CONTROL_TOKENS = {
    "pad_id": "[PAD]",
    "unk_id": UNK_TOKEN,
    "cls_id": "[CLS]",
    "sep_id": "[SEP]",
    "mask_id": "[MASK]",
}
# Words whose pieces are remembered (text repeats words; Chinese repeats
# characters). The cache is emptied when full.
_CACHE_SIZE = 1 << 16

# BERT's CJK ideograph blocks (official `_is_chinese_char`), inclusive.
CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF),
              (0x2A700, 0x2B73F), (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF),
              (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


# CJK_RANGES (disjoint) by start, for is_cjk's binary search: the export's
# character classes ask about every code point.
_CJK_BY_START = sorted(CJK_RANGES)
_CJK_STARTS = [lo for lo, _ in _CJK_BY_START]


def is_cjk(char: str) -> bool:
  """True for code points in one of CJK_RANGES."""
  cp = ord(char)
  i = bisect.bisect_right(_CJK_STARTS, cp) - 1
  return i >= 0 and cp <= _CJK_BY_START[i][1]


def is_dropped(char: str) -> bool:
  """True for characters the cleaning removes: NUL, U+FFFD, Cc, Cf."""
  if char in "\t\n\r":
    return False
  return (char in "\x00\ufffd" or
          unicodedata.category(char) in ("Cc", "Cf"))


def is_whitespace(char: str) -> bool:
  """True for characters the cleaning turns into a space."""
  return char in " \t\n\r" or unicodedata.category(char) == "Zs"


def is_punctuation(char: str) -> bool:
  """ASCII non-alphanumerics (as BERT counts "$", "^", "`") and category P*."""
  cp = ord(char)
  if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
    return True
  return unicodedata.category(char).startswith("P")


# Kinds of characters in the cleaning pass.
_OTHER, _DROP, _SPACE, _CJK = 0, 1, 2, 3
_KINDS: Dict[str, int] = {}


def _kind(char: str) -> int:
  kind = _KINDS.get(char)
  if kind is None:
    if is_dropped(char):
      kind = _DROP
    elif is_whitespace(char):
      kind = _SPACE
    elif is_cjk(char):
      kind = _CJK
    else:
      kind = _OTHER
    _KINDS[char] = kind
  return kind


def clean_text(text: str) -> str:
  """Drops control characters, spaces out whitespace and CJK ideographs."""
  out = []
  for char in text:
    kind = _kind(char)
    if kind == _OTHER:
      out.append(char)
    elif kind == _SPACE:
      out.append(" ")
    elif kind == _CJK:
      out.append(f" {char} ")
  return "".join(out)


def strip_accents(word: str) -> str:
  """NFD, then drops nonspacing marks (category Mn)."""
  if word.isascii():
    return word
  return "".join(c for c in unicodedata.normalize("NFD", word)
                 if unicodedata.category(c) != "Mn")


def split_on_punctuation(word: str) -> List[str]:
  """Each punctuation character becomes a word of its own."""
  out, current = [], []
  for char in word:
    if is_punctuation(char):
      if current:
        out.append("".join(current))
        current = []
      out.append(char)
    else:
      current.append(char)
  if current:
    out.append("".join(current))
  return out


def basic_tokenize(text: str, do_lower_case: bool) -> List[str]:
  """BERT's BasicTokenizer: str -> words (list of non-empty str)."""
  if isinstance(text, bytes):
    text = text.decode("utf-8", "ignore")
  words = []
  for word in clean_text(text).split():
    if do_lower_case:
      word = strip_accents(word.lower())
    words.extend(split_on_punctuation(word))
  return words


def parse_vocab(text: str) -> List[str]:
  """Tokens in id order, read as the official `load_vocab` reads.

  One token a line: its first whitespace-separated field, " " for a blank
  line; a repeated token keeps its first id and takes no id of its own.
  """
  lines = text.split("\n")
  if lines and not lines[-1]:
    lines.pop()  # The newline ending the last line.
  tokens, seen = [], set()
  for line in lines:
    token = line.split()[0] if line.strip() else " "
    if token not in seen:
      seen.add(token)
      tokens.append(token)
  return tokens


def load_vocab(vocab_file: str, fs=None) -> List[str]:
  """Tokens of a `vocab.txt` file (any filesystem), in id order.

  Raises:
    UserInputError: naming the file, if it is missing, unreadable, not
      UTF-8, or lacks one of [PAD] [UNK] [CLS] [SEP] [MASK].
  """
  fs = fs or file_io
  if not fs.isfile(vocab_file):
    raise UserInputError(f"vocab file not found: {vocab_file}")
  try:
    text = fs.read_bytes(vocab_file).decode("utf-8")
  except OSError as e:
    raise UserInputError(f"cannot read vocab file {vocab_file}: {e}") from e
  except UnicodeDecodeError as e:
    raise UserInputError(
        f"vocab file {vocab_file} is not UTF-8 text: {e}") from e
  tokens = parse_vocab(text)
  present = set(tokens)
  missing = [t for t in _CONTROL_TOKENS.values() if t not in present]
  if missing:
    raise UserInputError(
        f"vocab file {vocab_file} has no {' '.join(missing)} token; ALBERT "
        "needs [PAD] [UNK] [CLS] [SEP] [MASK] (one token a line)")
  return tokens


class WordPieceTokenizer(ControlIds):
  """ALBERT's WordPiece tokenizer: BERT basic tokenization + WordPiece.

  Args:
    vocab_file: str, path to a `vocab.txt` (one token a line; any
      filesystem). Ignored if `tokens` is given.
    do_lower_case: bool, lowercase and strip accents (released Chinese
      ALBERT: True).
    fs: the filesystem functions reading the file (default file_io).
    tokens: optional list of str, the vocabulary in id order, instead of
      reading `vocab_file`.
  """

  def __init__(self, vocab_file: Optional[str], do_lower_case: bool = True,
               fs=None, tokens: Optional[Sequence[str]] = None):
    self.vocab_file = vocab_file
    self.do_lower_case = do_lower_case
    self.keep_accents = not do_lower_case
    self.tokens = list(tokens) if tokens is not None else load_vocab(
        vocab_file, fs)
    self.vocab = {t: i for i, t in enumerate(self.tokens)}
    if UNK_TOKEN not in self.vocab:
      raise UserInputError(f"vocab {vocab_file} has no {UNK_TOKEN} token")
    # The longest match cannot be longer than the longest token.
    self._max_len = max(len(t) for t in self.tokens)
    self._cache: Dict[str, List[int]] = {}

  def preprocess(self, text: str) -> str:
    """The words of `text` joined by spaces (what WordPiece then splits)."""
    return " ".join(basic_tokenize(text, self.do_lower_case))

  def encode_word(self, word: str) -> List[int]:
    """Greedy longest-match-first ids of one word; [UNK] if none.

    Args:
      word: one word of `basic_tokenize` (already cleaned, split and, with
        `do_lower_case`, lowercased); `encode` is this over every word.

    Returns:
      list of int, e.g. the ids of ["un", "##aff", "##able"].
    """
    ids = self._cache.get(word)
    if ids is not None:
      return ids
    if len(word) > MAX_INPUT_CHARS_PER_WORD:
      ids = [self.vocab[UNK_TOKEN]]
    else:
      ids, start = [], 0
      while start < len(word):
        prefix = CONTINUATION if start else ""
        end = min(len(word), start + self._max_len - len(prefix))
        while end > start:
          piece_id = self.vocab.get(prefix + word[start:end])
          if piece_id is not None:
            break
          end -= 1
        if end == start:  # No piece matches: the whole word is unknown.
          ids = [self.vocab[UNK_TOKEN]]
          break
        ids.append(piece_id)
        start = end
    if len(self._cache) >= _CACHE_SIZE:
      self._cache.clear()
    self._cache[word] = ids
    return ids

  def tokenize(self, text: str) -> List[str]:
    """Pieces of `text`, e.g. ["un", "##aff", "##able", "中", "国"]."""
    return self.convert_ids_to_tokens(self.encode(text))

  def encode(self, text: str) -> List[int]:
    """Ids of `text`: list of int in [0, vocab_size)."""
    return [i for word in basic_tokenize(text, self.do_lower_case)
            for i in self.encode_word(word)]

  def encode_batch(self, texts: Sequence[str],
                   num_threads: int = -1) -> List[List[int]]:
    """`[encode(t) for t in texts]`. num_threads: unused (one thread)."""
    del num_threads
    return [self.encode(t) for t in texts]

  def convert_tokens_to_ids(self, tokens: Iterable[str]) -> List[int]:
    """Ids of tokens; a token not in the vocabulary gets [UNK]'s id."""
    unk = self.vocab[UNK_TOKEN]
    return [self.vocab.get(t, unk) for t in tokens]

  def convert_ids_to_tokens(self, ids: Iterable[int]) -> List[str]:
    return [self.tokens[int(i)] for i in ids]

  @property
  def vocab_size(self) -> int:
    return len(self.tokens)

  def _control_id(self, name: str) -> int:
    token = _CONTROL_TOKENS[name]
    if token not in self.vocab:
      raise UserInputError(
          f"vocab {self.vocab_file} has no {token} token; ALBERT needs "
          "[PAD] [UNK] [CLS] [SEP] [MASK]")
    return self.vocab[token]

  def start_piece_table(self) -> np.ndarray:
    """bool array [vocab_size]: True unless the token begins with "##".

    The official WordPiece start rule of whole-word masking.
    """
    return np.array([not t.startswith(CONTINUATION) for t in self.tokens],
                    dtype=bool)
