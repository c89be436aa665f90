"""In-graph ALBERT tokenizer: raw tf.string -> SentencePiece ids.

`TFSentencePieceTokenizer` is the TensorFlow twin of
`tokenization.SentencePieceTokenizer`: the same `preprocess_text` (whitespace
collapse, `` and '' -> ", NFKD and removal of combining characters, lowercase)
done with tf.strings / tensorflow_text ops, then SentencePiece, then the
digit-comma re-split, so it can live inside a SavedModel (the exported
preprocessor). Everything the graph needs is held as constants.

Why `tensorflow_text.FastSentencepieceTokenizer` and not
`SentencepieceTokenizer`: the latter's bundled SentencePiece breaks exact
Viterbi ties (the same pieces in another order, e.g. "w"+"ww" vs "ww"+"w")
differently from the `sentencepiece` Python package, about 1 line in 400 of
English prose; the fast tokenizer agrees with it.

The digit-comma rule depends only on the piece, so each vocabulary id's
re-split ("▁1," -> ["▁1", ","]) is computed once with the Python rule
(`tokenization.resplit_pieces`) and applied in-graph as a table lookup.

Parity with the Python path holds for our models (SentencePiece's
`identity` normalization, see `sentencepiece_trainer`) and for models with
SentencePiece's own rules (nmt_nfkc, spm_train's default, and nfkc_cf are
tested): FastSentencepieceTokenizer applies the model's rule as the
`sentencepiece` package does. The whitespace and
combining-character classes are built from this Python's `unicodedata`, so
they match `str.split` and `unicodedata.combining` exactly. ICU, used for NFKD
and lowercasing, knows a different Unicode version than Python (3.11: Unicode
14): about 150 code points of recently encoded scripts (e.g. Vithkuqi,
Tulu-Tigalari) normalise or lowercase differently. A NUL character also ends
`tf.strings.lower`'s output. An unknown piece (e.g. an emoji) has the piece
"<unk>" in `tokenize`, not its surface text; its id is the same.
"""

import base64
import functools
import itertools
import unicodedata

import numpy as np
import sentencepiece as spm
import tensorflow as tf
import tensorflow_text as tf_text
import tf_keras

from albert_common import file_io
from albert_common.errors import UserInputError
from data_pipeline.tokenization import sentencepiece_tokenizer as tokenization


@functools.lru_cache(maxsize=1)
def _code_points():
  """Every Unicode code point but the surrogates (not characters)."""
  return [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF]


def char_class(predicate) -> str:
  """An RE2 character class of all code points where `predicate` holds."""
  cps = _code_points()
  ranges = []
  # The predicate runs on all 1.1M code points: map and compress keep the
  # loop in C (the WordPiece export builds five classes).
  for cp in itertools.compress(cps, map(predicate, map(chr, cps))):
    if ranges and ranges[-1][1] == cp - 1:
      ranges[-1][1] = cp
    else:
      ranges.append([cp, cp])
  parts = [f"\\x{{{a:x}}}" if a == b else f"\\x{{{a:x}}}-\\x{{{b:x}}}"
           for a, b in ranges]
  return "[" + "".join(parts) + "]"


@functools.lru_cache(maxsize=None)
def character_classes():
  """RE2 patterns: (a run of whitespace, one combining character).

  What ALBERT's normalisation collapses to one space and, without
  `keep_accents`, drops; also used by the SQuAD export.
  """
  return (char_class(str.isspace) + "+",
          char_class(lambda c: unicodedata.combining(c) != 0))


def _resplit_table(model_proto: bytes):
  """Per id: its pieces after the digit-comma rule, as ids.

  Returns:
    (pieces: np str array [vocab], splits: int64 [vocab + 1],
     values: int32 [n]); row i of (splits, values) is id i's expansion.
  """
  sp = spm.SentencePieceProcessor(model_proto=model_proto)
  pieces = [sp.IdToPiece(i) for i in range(sp.GetPieceSize())]
  splits, values = [0], []
  for i, piece in enumerate(pieces):
    if tokenization.needs_comma_split(piece):
      values.extend(sp.PieceToId(p)
                    for p in tokenization.resplit_pieces(sp, [piece]))
    else:
      values.append(i)
    splits.append(len(values))
  return (np.array(pieces, dtype=object), np.array(splits, np.int64),
          np.array(values, np.int32))


class TFSentencePieceTokenizer(tf_keras.layers.Layer):
  """ALBERT tokenization in-graph: strings [batch] -> ragged int32 ids.

  Args:
    model_proto: bytes, the serialized SentencePiece model (`.model` file
      contents). Use `from_file` to read one.
    do_lower_case: bool, as in `SentencePieceTokenizer`.
    keep_accents: bool, as in `SentencePieceTokenizer`.

  Call: `texts` tf.string [batch] -> tf.RaggedTensor int32 [batch, (tokens)],
  equal to `SentencePieceTokenizer.encode` of each text.
  """

  def __init__(self, model_proto: bytes, do_lower_case: bool = True,
               keep_accents: bool = False, **kwargs):
    kwargs.setdefault("trainable", False)
    super().__init__(**kwargs)
    self._model_proto = bytes(model_proto)
    self.do_lower_case = do_lower_case
    self.keep_accents = keep_accents
    self._whitespace, self._combining = character_classes()
    try:
      pieces, splits, values = _resplit_table(self._model_proto)
    except RuntimeError as e:
      raise UserInputError(f"not a SentencePiece model: {e}") from e
    self._sp = tf_text.FastSentencepieceTokenizer(self._model_proto)
    self._pieces = tf.constant(pieces, tf.string)  # [vocab]
    self._resplit = tf.RaggedTensor.from_row_splits(
        tf.constant(values), tf.constant(splits))  # [vocab, (k)]

  @classmethod
  def from_file(cls, spm_model_file: str, **kwargs):
    """Reads a `.model` file; UserInputError naming the path if it cannot."""
    try:
      model_proto = file_io.read_bytes(spm_model_file)
    except (tf.errors.OpError, OSError) as e:
      raise UserInputError(
          f"cannot read SentencePiece model file {spm_model_file}: {e}") from e
    try:
      return cls(model_proto, **kwargs)
    except UserInputError as e:
      raise UserInputError(f"{spm_model_file}: {e}") from e

  @property
  def vocab_size(self) -> int:
    return int(self._pieces.shape[0])

  def normalize(self, texts: tf.Tensor) -> tf.Tensor:
    """`preprocess_text` in-graph. tf.string [...] -> tf.string [...]."""
    x = tf.strings.regex_replace(texts, self._whitespace, " ")
    x = tf.strings.regex_replace(x, "^ | $", "")
    x = tf.strings.regex_replace(x, "``", '"')
    x = tf.strings.regex_replace(x, "''", '"')
    if not self.keep_accents:
      x = tf_text.normalize_utf8(x, "NFKD")
      x = tf.strings.regex_replace(x, self._combining, "")
    if self.do_lower_case:
      x = tf.strings.lower(x, encoding="utf-8")
    return x

  def call(self, texts: tf.Tensor) -> tf.RaggedTensor:
    """Ids. tf.string [batch] -> tf.RaggedTensor int32 [batch, (tokens)]."""
    ids = self._sp.tokenize(self.normalize(texts))  # [b, (p)]
    ids = ids.with_row_splits_dtype(tf.int64)
    expanded = tf.gather(self._resplit, ids.flat_values)  # [n, (k)]
    return ids.with_flat_values(expanded).merge_dims(1, 2)  # [b, (p')]

  def tokenize(self, texts: tf.Tensor) -> tf.RaggedTensor:
    """Pieces. tf.string [batch] -> tf.RaggedTensor string [batch, (pieces)]."""
    return tf.ragged.map_flat_values(tf.gather, self._pieces, self(texts))

  def get_config(self):
    # The model bytes go into the (JSON) config as base64.
    config = super().get_config()
    config.update(
        model_proto=base64.b64encode(self._model_proto).decode("ascii"),
        do_lower_case=self.do_lower_case,
        keep_accents=self.keep_accents)
    return config

  @classmethod
  def from_config(cls, config):
    config = dict(config)
    config["model_proto"] = base64.b64decode(config["model_proto"])
    return cls(**config)
