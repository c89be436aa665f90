"""ALBERT's official tokenization as a keras-hub `AlbertTokenizer`.

The tokenizer our keras-hub presets name in tokenizer.json (and inside
preprocessor.json and task.json). It gives the ids of
`data_pipeline.tokenization.sentencepiece_tokenizer.SentencePieceTokenizer`
(google-research/albert's `preprocess_text` + SentencePiece + `encode_pieces`)
on both of keras-hub's
paths: eager Python calls (the `sentencepiece` package) and `tf.data`,
`fit`, `tf.function` or a SavedModel (TensorFlow ops). keras-hub's own
AlbertTokenizer differs from it in two ways, both closed here:

- the digit-comma rule: `encode_pieces` re-splits a piece ending in
  "<digit>," ("▁1," -> "▁1" ","), which SentencePiece alone cannot express.
  The preset's vocabulary marks those pieces unused (so that the stock
  AlbertTokenizer never emits ids pretraining never saw); this class uses
  them again and re-splits each one with a per-id table computed by the
  official rule (`keras_hub_vocabulary.comma_resplits`);
- score ties on the TensorFlow path: keras-hub runs
  `tensorflow_text.SentencepieceTokenizer`, whose bundled SentencePiece
  (0.1.96) breaks exact Viterbi ties (the same pieces in another order,
  "w" "ww" vs "ww" "w"; about 1 line in 600 of the test corpus) differently
  from the `sentencepiece` package; this class runs
  `tensorflow_text.FastSentencepieceTokenizer`, which agrees with it (as
  `data_pipeline.tokenization.tf_sentencepiece` does).

ALBERT's text normalisation needs no code: the preset's SentencePiece model
carries it as its character map (`keras_hub_vocabulary.preset_vocabulary`),
which both paths apply.

Loading a preset that names this class needs it registered first:

    import albert_tf.keras3  # noqa: F401  registers OfficialAlbertTokenizer
    import keras_hub
    keras_hub.models.AlbertTextClassifier.from_preset(path, num_classes=2)

Without the import Keras cannot find the class ("Could not locate class
'OfficialAlbertTokenizer'", with module albert_tf.keras3.
official_albert_tokenizer in the config it prints). Keras 3 only.
"""

import dataclasses
import functools
from typing import Dict, List, Tuple

import keras
import keras_hub
import numpy as np
import sentencepiece as spm
import tensorflow as tf
import tensorflow_text as tf_text

from data_pipeline.tokenization import keras_hub_vocabulary


@dataclasses.dataclass(frozen=True)
class _Encoding:
  """What both paths encode with (one per vocabulary)."""
  model_proto: bytes  # the digit-comma pieces used again
  resplits: Dict[int, List[int]]  # id -> ids after the official rule
  pieces: Tuple[str, ...]  # id -> piece


@functools.lru_cache(maxsize=4)
def _encoding(proto: bytes) -> _Encoding:
  model_proto = keras_hub_vocabulary.encoding_vocabulary(proto)
  sp = spm.SentencePieceProcessor(model_proto=model_proto)
  return _Encoding(model_proto,
                   keras_hub_vocabulary.comma_resplits(model_proto),
                   tuple(sp.IdToPiece(list(range(sp.GetPieceSize())))))


class _SentencePieceWithResplit:
  """A `sentencepiece.SentencePieceProcessor` whose `Encode` applies the
  digit-comma re-split; everything else is the processor's."""

  def __init__(self, processor, resplits: Dict[int, List[int]],
               string_output: bool):
    self._processor = processor
    self._resplits = resplits
    self._string_output = string_output

  def __getattr__(self, name):
    if name.startswith("__") or name == "_processor":  # copy, pickle
      raise AttributeError(name)
    return getattr(self._processor, name)

  def _expand(self, ids: List[int]):
    out = [j for i in ids for j in self._resplits.get(i, (i,))]
    return self._processor.IdToPiece(out) if self._string_output else out

  def Encode(self, inputs, **kwargs):
    kwargs["out_type"] = int
    ids = self._processor.Encode(inputs, **kwargs)
    if isinstance(inputs, (str, bytes)):
      return self._expand(ids)
    return [self._expand(row) for row in ids]


class _TFSentencePieceWithResplit:
  """`tensorflow_text.FastSentencepieceTokenizer` + the digit-comma re-split
  as a table lookup: the `tokenize`/`detokenize` keras-hub calls."""

  def __init__(self, encoding: _Encoding, string_output: bool,
               add_bos: bool, add_eos: bool):
    self._sp = tf_text.FastSentencepieceTokenizer(
        encoding.model_proto, add_bos=add_bos, add_eos=add_eos)
    splits, values = [0], []
    for i in range(len(encoding.pieces)):
      values.extend(encoding.resplits.get(i, (i,)))
      splits.append(len(values))
    self._resplit = tf.RaggedTensor.from_row_splits(
        tf.constant(values, tf.int32),
        tf.constant(splits, tf.int64))  # [vocab, (k)]
    self._pieces = (tf.constant(np.array(encoding.pieces, dtype=object),
                                tf.string) if string_output else None)

  def tokenize(self, inputs):
    """tf.string [...] -> ids (int32) or pieces [..., (tokens)]."""
    ids = self._sp.tokenize(inputs)
    if isinstance(ids, tf.RaggedTensor):  # [..., (p)]
      ids = ids.with_row_splits_dtype(tf.int64)
      expanded = tf.gather(self._resplit, ids.flat_values)  # [n, (k)]
      ids = ids.with_flat_values(expanded).merge_dims(-2, -1)  # [..., (p')]
    else:  # one string: [p]
      ids = tf.gather(self._resplit, ids).flat_values
    if self._pieces is not None:
      return tf.ragged.map_flat_values(tf.gather, self._pieces, ids)
    return ids

  def detokenize(self, ids):
    return self._sp.detokenize(ids)


@keras.saving.register_keras_serializable(package="albert_tf")
class OfficialAlbertTokenizer(keras_hub.models.AlbertTokenizer):
  """keras-hub `AlbertTokenizer` giving the official ALBERT ids.

  Same arguments and outputs as `keras_hub.models.AlbertTokenizer` (proto,
  sequence_length, dtype, add_bos, add_eos, name): tf.string [batch] ->
  int32 ids [batch, (tokens)] (ragged; dense [batch, sequence_length] when
  that is set), equal to `tokenization.SentencePieceTokenizer.encode` of
  each text when `proto` is a preset vocabulary written by
  `albert_tf.checkpoints.keras_hub_presets.preset`. With dtype="string", pieces;
  an unknown character is the piece "<unk>" (on both paths; the
  sentencepiece package would give its surface text), with the same id.
  """

  # keras-hub builds both encoders from `proto` with these two methods (and
  # keeps `proto` itself for save_assets: the preset's bytes stay as read).

  def _string_output(self) -> bool:
    return keras.backend.standardize_dtype(self.compute_dtype) == "string"

  def _set_proto_spm(self, proto):
    encoding = _encoding(bytes(proto))
    super()._set_proto_spm(encoding.model_proto)
    self._sentence_piece_spm = _SentencePieceWithResplit(
        self._sentence_piece_spm, encoding.resplits, self._string_output())

  def _set_proto_tf(self, proto):
    self._sentence_piece = _TFSentencePieceWithResplit(
        _encoding(bytes(proto)), self._string_output(), self.add_bos,
        self.add_eos)
