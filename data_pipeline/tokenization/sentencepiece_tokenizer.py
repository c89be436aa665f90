"""ALBERT text normalisation and SentencePiece tokenization (Python path).

Matches google-research/albert `tokenization.py`: `preprocess_text` collapses
whitespace, turns `` and '' into ", strips accents (NFKD, then drops combining
characters) unless `keep_accents`, and optionally lowercases; `encode_pieces`
re-splits a piece such as "▁1,000," that ends in a comma after a digit, so the
comma becomes its own piece.

The SentencePiece model is expected to be trained with the `identity`
normalization rule on text already passed through `preprocess_text` (as
`data_pipeline.tokenization.sentencepiece_trainer` does). All normalisation then
happens here, identically in this module and in the in-graph tokenizer
(`data_pipeline.tokenization.tf_sentencepiece`), instead of inside
SentencePiece.

This module does not import TensorFlow.
"""

from typing import Iterable, List, Sequence
import unicodedata

import numpy as np
import sentencepiece as spm

from albert_common import file_io
from albert_common.errors import UserInputError
from data_pipeline.tokenization.control_ids import ControlIds

SPIECE_UNDERLINE = "\u2581"  # "▁", SentencePiece's word-start marker.

# The official `_is_start_piece_sp` sets (create_pretraining_data.py). The
# punctuation set writes '"' twice and has no "'". (The official code also adds
# "€" and "£" as UTF-8 bytes, which never equal a str piece under Python 3;
# those characters start a piece anyway as non-English characters.)
_START_PUNCTUATION = frozenset('!"#$%&"()*+,-./:;?@[\\]^_`{|}~')
_ENGLISH_OR_PUNCTUATION = (frozenset("abcdefghijklmnopqrstuvwxyz") |
                           _START_PUNCTUATION)

_CONTROL_PIECES = {
    "pad_id": "<pad>",
    "unk_id": "<unk>",
    "cls_id": "[CLS]",
    "sep_id": "[SEP]",
    "mask_id": "[MASK]",
}


def preprocess_text(text: str,
                    remove_space: bool = True,
                    keep_accents: bool = False,
                    lower: bool = False) -> str:
  """ALBERT normalisation of one string (official `preprocess_text`).

  Args:
    text: str (bytes are decoded as UTF-8, dropping invalid bytes).
    remove_space: strip, and collapse every run of whitespace to one space.
    keep_accents: if False, NFKD-normalise and drop combining characters
      (`unicodedata.combining(c) != 0`).
    lower: lowercase with `str.lower`.

  Returns:
    The normalised str.
  """
  if isinstance(text, bytes):
    text = text.decode("utf-8", "ignore")
  if remove_space:
    text = " ".join(text.strip().split())
  text = text.replace("``", '"').replace("''", '"')
  if not keep_accents:
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c))
  if lower:
    text = text.lower()
  return text


def is_start_piece(piece: str) -> bool:
  """True if `piece` starts a word (official `_is_start_piece_sp`).

  A piece starts a word if it starts with "▁" or "<", is one punctuation
  character of the official set, or holds any character other than English
  letters and that punctuation ("for foreign characters, we always treat them
  as a whole piece"): digits, "'", accented letters, CJK all start a piece.
  """
  return (piece.startswith((SPIECE_UNDERLINE, "<")) or
          piece in _START_PUNCTUATION or
          not all(c.lower() in _ENGLISH_OR_PUNCTUATION for c in piece))


def needs_comma_split(piece: str) -> bool:
  """True if `encode_pieces` re-splits `piece`: it ends in a digit and ","."""
  return len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()


def _split_digit_comma(sp_model, piece: str) -> List[str]:
  """Re-encodes "<...digit>," without the comma, then appends ",".

  A piece that did not start a word must not start one after re-encoding, so
  the leading "▁" SentencePiece adds is removed (or the bare "▁" dropped).
  """
  sub = sp_model.EncodeAsPieces(piece[:-1].replace(SPIECE_UNDERLINE, ""))
  if (not piece.startswith(SPIECE_UNDERLINE) and sub and
      sub[0].startswith(SPIECE_UNDERLINE)):
    if len(sub[0]) == 1:
      sub = sub[1:]
    else:
      sub[0] = sub[0][1:]
  return sub + [piece[-1]]


def resplit_pieces(sp_model, pieces: Iterable[str]) -> List[str]:
  """Applies the digit-comma rule of `encode_pieces` to encoded pieces."""
  out = []
  for piece in pieces:
    if needs_comma_split(piece):
      out.extend(_split_digit_comma(sp_model, piece))
    else:
      out.append(piece)
  return out


def encode_pieces(sp_model, text: str) -> List[str]:
  """Pieces of already-preprocessed `text` (official `encode_pieces`).

  Args:
    sp_model: anything with `EncodeAsPieces(str) -> list[str]`, normally a
      `sentencepiece.SentencePieceProcessor`.
    text: str, output of `preprocess_text`.
  """
  return resplit_pieces(sp_model, sp_model.EncodeAsPieces(text))


def load_sentencepiece(spm_model_file: str,
                       fs=None) -> spm.SentencePieceProcessor:
  """Loads a `.model` file (any filesystem); UserInputError naming the path
  if it cannot. `fs`: the filesystem functions (default file_io)."""
  fs = fs or file_io
  if not fs.isfile(spm_model_file):
    raise UserInputError(
        f"SentencePiece model file not found: {spm_model_file}")
  sp = spm.SentencePieceProcessor()
  try:
    sp.LoadFromSerializedProto(fs.read_bytes(spm_model_file))
  except (OSError, RuntimeError) as e:
    raise UserInputError(
        f"cannot read SentencePiece model file {spm_model_file}: {e}") from e
  return sp


class SentencePieceTokenizer(ControlIds):
  """ALBERT tokenizer: `preprocess_text` + SentencePiece + digit-comma rule.

  Args:
    spm_model_file: str, path to a SentencePiece `.model` file.
    do_lower_case: bool, lowercase before encoding (released ALBERT: True).
    keep_accents: bool, keep accents instead of stripping them.
    fs: the filesystem functions reading the model (default file_io).
  """

  def __init__(self, spm_model_file: str, do_lower_case: bool = True,
               keep_accents: bool = False, fs=None):
    self.spm_model_file = spm_model_file
    self.do_lower_case = do_lower_case
    self.keep_accents = keep_accents
    self.sp_model = load_sentencepiece(spm_model_file, fs)
    self._split_ids = None

  def preprocess(self, text: str) -> str:
    return preprocess_text(text, keep_accents=self.keep_accents,
                           lower=self.do_lower_case)

  def tokenize(self, text: str) -> List[str]:
    """Pieces of `text`, e.g. ["▁hello", "▁world", "."]."""
    return encode_pieces(self.sp_model, self.preprocess(text))

  def encode(self, text: str) -> List[int]:
    """Ids of `text`: list of int in [0, vocab_size)."""
    return self.convert_tokens_to_ids(self.tokenize(text))

  def encode_batch(self, texts: Sequence[str],
                   num_threads: int = -1) -> List[List[int]]:
    """Ids of many texts; equal to `[encode(t) for t in texts]`, but faster.

    Args:
      texts: list of str.
      num_threads: SentencePiece encoding threads; -1 uses all cores.

    Returns:
      list (one per text) of lists of int ids.
    """
    normalised = [self.preprocess(t) for t in texts]
    batch = self.sp_model.Encode(normalised, out_type=int,
                                 num_threads=num_threads)
    check = self._comma_split_ids()
    out = []
    for text, ids in zip(normalised, batch):
      # The comma rule is rare: re-encode as pieces only where it may apply.
      if "," in text and not check.isdisjoint(ids):
        ids = self.convert_tokens_to_ids(encode_pieces(self.sp_model, text))
      out.append(ids)
    return out

  def _comma_split_ids(self) -> frozenset:
    """Ids whose piece the comma rule re-splits, plus the unknown id.

    An unknown piece's surface text is not the piece of its id, so texts with
    unknown pieces are always checked piece by piece.
    """
    if self._split_ids is None:
      self._split_ids = frozenset(
          [i for i in range(self.vocab_size)
           if needs_comma_split(self.sp_model.IdToPiece(i))] +
          [self.sp_model.unk_id()])
    return self._split_ids

  def convert_tokens_to_ids(self, tokens: Iterable[str]) -> List[int]:
    return [self.sp_model.PieceToId(t) for t in tokens]

  def convert_ids_to_tokens(self, ids: Iterable[int]) -> List[str]:
    return [self.sp_model.IdToPiece(int(i)) for i in ids]

  @property
  def vocab_size(self) -> int:
    return self.sp_model.GetPieceSize()

  def _control_id(self, name: str) -> int:
    piece = _CONTROL_PIECES[name]
    piece_id = self.sp_model.PieceToId(piece)
    # PieceToId returns the unk id for an unknown piece.
    if self.sp_model.IdToPiece(piece_id) != piece:
      raise UserInputError(
          f"SentencePiece model {self.spm_model_file} has no {piece} piece; "
          "ALBERT needs <pad>, <unk>, [CLS], [SEP] and [MASK] (train it with "
          "python -m tools.train_sentencepiece)")
    return piece_id

  def start_piece_table(self) -> np.ndarray:
    """bool array [vocab_size]: `is_start_piece` of every id's piece."""
    return np.array([is_start_piece(self.sp_model.IdToPiece(i))
                     for i in range(self.vocab_size)], dtype=bool)
