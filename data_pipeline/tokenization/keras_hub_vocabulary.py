"""Our SentencePiece model as a keras-hub `AlbertTokenizer` vocabulary.

keras-hub's `AlbertTokenizer` runs the SentencePiece model on the raw text
and nothing else, while ALBERT tokenization
(`data_pipeline.tokenization.sentencepiece_tokenizer`) first applies
`preprocess_text` (whitespace collapse, `` and '' -> ", NFKD accent stripping,
lowercasing) and afterwards the official digit-comma re-split.
`preset_vocabulary` writes what it can into the model itself:

- normalisation: the model's `normalizer_spec` becomes a character map (one
  rule per code point that `preprocess_text` changes, plus `` and ''),
  composed with the model's own normalisation (any rule: nmt_nfkc, nfkc,
  *_cf, a custom TSV; applied by a SentencePieceProcessor of the model);
  SentencePiece applies it, then collapses and strips spaces as before.
  Every path that runs the model (the sentencepiece package,
  tensorflow_text's tokenizers) applies it;
- digit-comma pieces ("▁1,", "0,"): marked UNUSED, so that the stock
  AlbertTokenizer never emits them (the official tokenizer never does
  either: it re-splits them, so pretraining never saw their ids).

The digit-comma rule itself cannot be written into a SentencePiece model
(without the piece, SentencePiece cuts "▁1," as "▁1" "," where the official
rule gives "▁" "1" ","; 8 of the 3536 test-corpus lines), so a preset
that must give the official ids names our tokenizer (convert_checkpoint
--keras_hub_tokenizer=official), `albert_tf.keras3.OfficialAlbertTokenizer`,
which encodes with `encoding_vocabulary` (the pieces used again) and
re-splits by `comma_resplits`. What the character map cannot express:
Greek final sigma (Python's str.lower gives ς at the end of a word, the map
always σ), which changes ids only for a model that has pieces with ς.

The model proto is edited with a minimal protobuf schema (the fields read
here; everything else is kept as unknown fields), because the
sentencepiece_model_pb2 bundled with sentencepiece needs a newer protobuf
runtime than TensorFlow allows.
"""

import functools
from typing import Dict, List, Tuple
import unicodedata

import sentencepiece as spm

from albert_common.errors import UserInputError
from data_pipeline.tokenization import sentencepiece_tokenizer as tokenization

_NORMAL, _UNUSED = 1, 5  # sentencepiece ModelProto.SentencePiece.Type


@functools.lru_cache(maxsize=None)
def _schema():
  """(ModelProto, NormalizerSpec) message classes for the fields we touch."""
  from google.protobuf import descriptor_pb2
  from google.protobuf import descriptor_pool
  from google.protobuf import message_factory
  field = descriptor_pb2.FieldDescriptorProto
  file = descriptor_pb2.FileDescriptorProto(
      name="albert_tf_sentencepiece_subset.proto", package="albert_tf_spm",
      syntax="proto2")

  def message(name, fields):
    proto = file.message_type.add(name=name)
    for number, (fname, ftype, label, type_name, default) in enumerate(
        fields, 1):
      if fname is None:
        continue
      f = proto.field.add(name=fname, number=number, type=ftype, label=label)
      if type_name:
        f.type_name = type_name
      if default is not None:
        f.default_value = default

  opt, rep = field.LABEL_OPTIONAL, field.LABEL_REPEATED
  message("Piece", [("piece", field.TYPE_STRING, opt, None, None),
                    ("score", field.TYPE_FLOAT, opt, None, None),
                    ("type", field.TYPE_INT32, opt, None, "1")])
  message("NormalizerSpec", [
      ("name", field.TYPE_STRING, opt, None, None),
      ("precompiled_charsmap", field.TYPE_BYTES, opt, None, None),
      ("add_dummy_prefix", field.TYPE_BOOL, opt, None, "true"),
      ("remove_extra_whitespaces", field.TYPE_BOOL, opt, None, "true"),
      ("escape_whitespaces", field.TYPE_BOOL, opt, None, "true")])
  message("ModelProto", [
      ("pieces", field.TYPE_MESSAGE, rep, ".albert_tf_spm.Piece", None),
      (None, None, None, None, None),  # 2: trainer_spec, kept unknown
      ("normalizer_spec", field.TYPE_MESSAGE, opt,
       ".albert_tf_spm.NormalizerSpec", None)])
  pool = descriptor_pool.DescriptorPool()
  pool.Add(file)
  return tuple(message_factory.GetMessageClass(
      pool.FindMessageTypeByName(f"albert_tf_spm.{n}"))
               for n in ("ModelProto", "NormalizerSpec"))


def _parse(model_proto: bytes):
  model_class, _ = _schema()
  model = model_class()
  try:
    model.ParseFromString(model_proto)
  except Exception as e:  # protobuf's DecodeError has no stable home
    raise UserInputError(f"not a SentencePiece model: {e}") from e
  if not model.pieces:
    raise UserInputError("not a SentencePiece model: it has no pieces")
  return model


def _preprocess_char(c: str, do_lower_case: bool, keep_accents: bool) -> str:
  """`preprocess_text` of one character, without the whitespace collapse."""
  if c.isspace():
    return " "
  if not keep_accents:
    decomposed = unicodedata.normalize("NFKD", c)
    if decomposed != c or unicodedata.combining(c):  # (most are neither)
      c = "".join(x for x in decomposed if not unicodedata.combining(x))
  return c.lower() if do_lower_case else c


def _model_normalizer(model_proto: bytes) -> spm.SentencePieceProcessor:
  """A processor whose `normalize` applies only the model's own rule (its
  precompiled character map: nmt_nfkc, nfkc, *_cf, a custom TSV rule), with
  no dummy prefix, whitespace collapse or escaping.

  (`SentencePieceNormalizer(normalizer_spec=...)` would be the direct route,
  but sentencepiece 0.2.2 breaks it: it calls a missing
  LoadFromSerializedNormalizerSpec.)
  """
  sp = spm.SentencePieceProcessor(model_proto=model_proto)
  sp.override_normalizer_spec(add_dummy_prefix=False,
                              remove_extra_whitespaces=False,
                              escape_whitespaces=False)
  return sp


@functools.lru_cache(maxsize=2)
def _preprocessed(do_lower_case: bool,
                  keep_accents: bool) -> Tuple[List[str], List[str]]:
  """(sources, targets): every code point but the surrogates, then `` and
  '', and what preprocess_text makes of each (the part of `_char_map` that
  does not depend on the model: computed once for all models)."""
  sources = [chr(cp) for cp in range(1, 0x110000)
             if not 0xD800 <= cp <= 0xDFFF] + ["``", "''"]
  targets = [_preprocess_char(c, do_lower_case, keep_accents)
             for c in sources[:-2]] + ['"', '"']
  return sources, targets


@functools.lru_cache(maxsize=8)
def _char_map(do_lower_case: bool, keep_accents: bool,
              model_proto: bytes) -> Tuple[Tuple[str, str], ...]:
  """Sorted (source, target) rules: preprocess_text, then the model's own
  normalisation (`model_proto`: the whole model, b"" for identity)."""
  sources, targets = _preprocessed(do_lower_case, keep_accents)
  if model_proto:
    inner = _model_normalizer(model_proto)
    nonempty = [i for i, target in enumerate(targets) if target]
    targets = list(targets)
    # One call for all (a list: the sentencepiece package's loop).
    for i, target in zip(nonempty, inner.normalize([targets[i]
                                                   for i in nonempty])):
      targets[i] = target
  rules: Dict[str, str] = {source: target for source, target
                           in zip(sources, targets) if target != source}
  return tuple(sorted(rules.items()))


def _is_identity(spec) -> bool:
  return not spec.precompiled_charsmap and spec.name in ("", "identity")


def preset_vocabulary(model_proto: bytes, do_lower_case: bool = True,
                      keep_accents: bool = False) -> Tuple[bytes, List[int]]:
  """The keras-hub vocabulary for one of our SentencePiece models.

  Args:
    model_proto: bytes of a SentencePiece `.model` file (ours: identity
      normalisation; others, e.g. the released nmt_nfkc models, have their
      normalisation composed after ALBERT's, character by character).
    do_lower_case, keep_accents: as in `tokenization.SentencePieceTokenizer`.

  Returns:
    (model bytes for keras-hub, ids of the pieces marked UNUSED).
  """
  model = _parse(model_proto)
  _, spec_class = _schema()
  spec = model.normalizer_spec
  inner = b"" if _is_identity(spec) else model_proto
  rules = _char_map(bool(do_lower_case), bool(keep_accents), inner)
  compiled = spec_class()
  compiled.ParseFromString(spm.SentencePieceNormalizer(
      norm_map=list(rules)).serialized_normalizer_spec())
  flags = {k: getattr(spec, k) for k in ("add_dummy_prefix",
                                         "remove_extra_whitespaces",
                                         "escape_whitespaces")}
  model.normalizer_spec.Clear()
  model.normalizer_spec.name = (
      f"albert_preprocess_text(do_lower_case={bool(do_lower_case)},"
      f"keep_accents={bool(keep_accents)})")
  model.normalizer_spec.precompiled_charsmap = compiled.precompiled_charsmap
  for key, value in flags.items():
    setattr(model.normalizer_spec, key, value)
  unused = []
  for i, piece in enumerate(model.pieces):
    if piece.type == _NORMAL and tokenization.needs_comma_split(piece.piece):
      piece.type = _UNUSED
      unused.append(i)
  return model.SerializeToString(), unused


def original_vocabulary(preset_proto: bytes, normalizer_spec: bytes,
                        unused: List[int]) -> bytes:
  """Undoes `preset_vocabulary` given what it replaced.

  Args:
    preset_proto: the preset's vocabulary.spm bytes.
    normalizer_spec: the original serialized NormalizerSpec.
    unused: ids `preset_vocabulary` marked UNUSED.
  """
  model = _parse(preset_proto)
  model.normalizer_spec.Clear()
  model.normalizer_spec.ParseFromString(normalizer_spec)
  for i in unused:
    if not 0 <= i < len(model.pieces) or model.pieces[i].type != _UNUSED:
      raise UserInputError(f"piece {i} of the preset vocabulary is not one "
                           "this converter marked unused")
    model.pieces[i].type = _NORMAL
  return model.SerializeToString()


def normalizer_spec_of(model_proto: bytes) -> bytes:
  """The serialized NormalizerSpec of a SentencePiece model."""
  return _parse(model_proto).normalizer_spec.SerializeToString()


def piece_count(model_proto: bytes) -> int:
  """The number of pieces of a serialized SentencePiece model."""
  return len(_parse(model_proto).pieces)


def encoding_vocabulary(preset_proto: bytes) -> bytes:
  """The model our keras-hub tokenizer encodes with: the preset's, with its
  unused digit-comma pieces used again (the official rule then re-splits
  them, see `comma_resplits`). Identity for models without such pieces."""
  model = _parse(preset_proto)
  changed = False
  for piece in model.pieces:
    if piece.type == _UNUSED and tokenization.needs_comma_split(piece.piece):
      piece.type = _NORMAL
      changed = True
  return model.SerializeToString() if changed else preset_proto


def comma_resplits(model_proto: bytes) -> Dict[int, List[int]]:
  """Id -> ids after the official digit-comma re-split, for every id the
  rule changes ("▁1," -> "▁1" ","). It depends only on the piece, so a
  tokenizer applies it as a lookup after SentencePiece."""
  sp = spm.SentencePieceProcessor(model_proto=model_proto)
  out = {}
  for i in range(sp.GetPieceSize()):
    piece = sp.IdToPiece(i)
    if tokenization.needs_comma_split(piece):
      out[i] = [sp.PieceToId(p)
                for p in tokenization.resplit_pieces(sp, [piece])]
  return out
