"""What a folder given as a SavedModel holds, told without TensorFlow.

`check_encoder_savedmodel` is the check of `--init_savedmodel`: the folder
must be an encoder export (`<export_dir>/encoder` of
tools.export_savedmodel, or any SavedModel whose `serving_default` takes
the encoder inputs). The other things users pass by mistake are named
with what to pass instead: the preprocessor of an export, the export
folder itself, a fine-tuned serving export, a checkpoint, a folder with
no SavedModel.

The signatures are read from `saved_model.pb` with a four-message subset
of TensorFlow's SavedModel schema (protobuf skips every other field), so
the fine-tuning tools run this check before importing TensorFlow.
"""

import functools
from typing import Dict, List, Optional, Tuple

from albert_common import file_io
from albert_common.encoder_inputs import ENCODER_INPUT_NAMES
from albert_common.errors import UserInputError

SAVED_MODEL_FILES = ("saved_model.pb", "saved_model.pbtxt")
# The signature only an early-exit classifier's export has (its token-ids
# signature at full depth, albert_tf/exports/token_ids.py).
TOKEN_IDS_FULL_DEPTH = "token_ids_full_depth"

# serving_default's input names -> what the SavedModel is (our exports).
_KINDS = (
    (("sentences",), "input_word_ids", "the preprocessor of an export"),
    (("sentences",), "", "a fine-tuned classifier export (run_classifier "
     "--export_dir)"),
    (("text_a", "text_b"), "", "a fine-tuned classifier export "
     "(run_classifier --export_dir)"),
    (("context", "question"), "", "a fine-tuned SQuAD export (run_squad "
     "--export_dir)"),
    (("article", "options", "question"), "", "a fine-tuned RACE export "
     "(run_race --export_dir)"),
    (("text",), "entity_label", "a fine-tuned NER export (run_ner "
     "--export_dir)"),
)


@functools.lru_cache(maxsize=None)
def _saved_model_class():
  """A message class parsing the signatures of a SavedModel (the field
  numbers of tensorflow/core/protobuf/{saved_model,meta_graph}.proto)."""
  from google.protobuf import descriptor_pb2
  from google.protobuf import descriptor_pool
  from google.protobuf import message_factory
  proto = descriptor_pb2.FileDescriptorProto(
      name="albert_saved_model_signatures.proto",
      package="albert_saved_model_signatures", syntax="proto3")
  string, message, int64 = (descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                            descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
                            descriptor_pb2.FieldDescriptorProto.TYPE_INT64)
  repeated = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
  optional = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL

  def add(name, *fields):
    message_type = proto.message_type.add(name=name)
    for field_name, number, kind, label, type_name in fields:
      message_type.field.add(
          name=field_name, number=number, type=kind, label=label,
          type_name=f".albert_saved_model_signatures.{type_name}"
          if type_name else None)

  # Maps are repeated key/value entries on the wire.
  add("Dim", ("size", 1, int64, optional, ""))
  add("TensorShape", ("dim", 2, message, repeated, "Dim"))
  add("TensorInfo", ("tensor_shape", 3, message, optional, "TensorShape"))
  add("TensorEntry", ("key", 1, string, optional, ""),
      ("value", 2, message, optional, "TensorInfo"))
  add("Signature", ("inputs", 1, message, repeated, "TensorEntry"),
      ("outputs", 2, message, repeated, "TensorEntry"))
  add("SignatureEntry", ("key", 1, string, optional, ""),
      ("value", 2, message, optional, "Signature"))
  add("MetaGraph", ("signature_def", 5, message, repeated, "SignatureEntry"))
  add("SavedModel", ("meta_graphs", 2, message, repeated, "MetaGraph"))
  pool = descriptor_pool.DescriptorPool()
  pool.Add(proto)
  return message_factory.GetMessageClass(
      pool.FindMessageTypeByName("albert_saved_model_signatures.SavedModel"))


def read_signatures(path: str) -> Dict[str, Tuple[List[str], List[str]]]:
  """{signature name: (sorted input names, sorted output names)} of the
  SavedModel in folder `path` (its first MetaGraph; TensorFlow's own
  `__saved_model_init_op` left out).

  Raises:
    UserInputError: saved_model.pb cannot be read or parsed.
  """
  return {key: (sorted(i.key for i in value.inputs),
                sorted(o.key for o in value.outputs))
          for key, value in _signature_defs(path).items()}


def input_shapes(path: str, signature: str = "serving_default"
                ) -> Dict[str, Tuple[int, ...]]:
  """{input name: its shape (-1 where unknown)} of a signature of the
  SavedModel in folder `path` ({} without that signature), e.g. a
  multiple-choice export's `choices` [-1, 4].

  Raises:
    UserInputError: saved_model.pb cannot be read or parsed.
  """
  definition = _signature_defs(path).get(signature)
  if definition is None:
    return {}
  return {i.key: tuple(d.size for d in i.value.tensor_shape.dim)
          for i in definition.inputs}


def _signature_defs(path: str) -> Dict:
  """{signature name: its SignatureDef message} (read_signatures)."""
  pb = file_io.join(path, "saved_model.pb")
  try:
    saved_model = _saved_model_class().FromString(file_io.read_bytes(pb))
  except OSError as e:
    raise UserInputError(f"cannot read {pb}: {e.strerror}") from None
  except Exception as e:  # protobuf's DecodeError
    raise UserInputError(f"{pb} is not a SavedModel: {e}") from None
  if not saved_model.meta_graphs:
    return {}
  return {entry.key: entry.value
          for entry in saved_model.meta_graphs[0].signature_def
          if not entry.key.startswith("__")}


def _describe(signatures) -> str:
  return ", ".join(f"{name}({', '.join(inputs)})"
                   for name, (inputs, _) in sorted(signatures.items()))


def _kind(signatures) -> Optional[str]:
  """What an export whose serving_default is not the encoder's is."""
  inputs, outputs = signatures["serving_default"]
  for names, output, kind in _KINDS:
    if tuple(inputs) == names and (not output or output in outputs):
      return kind
  return None


def is_saved_model(path: str) -> bool:
  return any(file_io.exists(file_io.join(path, name))
             for name in SAVED_MODEL_FILES)


def _not_a_saved_model(flag: str, path: str) -> str:
  """The message for a path with no saved_model.pb."""
  what = f"{flag}={path}"
  encoder = file_io.join(path, "encoder")
  if is_saved_model(encoder):
    return (f"{what} is an export folder (encoder/, preprocessor/), not a "
            f"SavedModel; pass {encoder}")
  if not file_io.isdir(path):
    if file_io.exists(path + ".index") or path.endswith(".index"):
      return f"{what} is a checkpoint, not a SavedModel; pass it as " \
             "--init_checkpoint"
    return f"{what} is a file, not a SavedModel folder"
  if (file_io.exists(file_io.join(path, "checkpoint")) or
      file_io.glob(file_io.join(path, "*.index"))):
    return (f"{what} holds a checkpoint, not a SavedModel; pass it as "
            "--init_checkpoint")
  return (f"{what} is not a SavedModel (no saved_model.pb in it); pass "
          "<export_dir>/encoder of tools.export_savedmodel")


def check_model_savedmodel(path: str, flag: str) -> None:
  """Raises UserInputError unless `path` is a SavedModel that is not an
  export's preprocessor (an encoder or a fine-tuned model: what LiteRT and
  ONNX conversion take), naming the folder to pass instead."""
  if not is_saved_model(path):
    raise UserInputError(_not_a_saved_model(flag, path))
  if not file_io.exists(file_io.join(path, "saved_model.pb")):
    return
  signatures = read_signatures(path)
  if ("serving_default" in signatures and
      _kind(signatures) == "the preprocessor of an export"):
    encoder = file_io.join(file_io.dirname(path), "encoder")
    raise UserInputError(
        f"{flag}={path} is the preprocessor of an export (raw strings -> "
        f"token ids), not a model; pass "
        f"{encoder if is_saved_model(encoder) else '<export_dir>/encoder'}")


def has_exit_loop(path: str) -> bool:
  """Whether the SavedModel in `path` is an early-exit classifier's export
  (run_classifier --early_exit --export_dir)."""
  return TOKEN_IDS_FULL_DEPTH in read_signatures(path)


def check_encoder_savedmodel(path: str,
                             flag: str = "--init_savedmodel") -> None:
  """Raises UserInputError unless `path` is an encoder SavedModel.

  Accepted: a SavedModel whose serving_default takes the encoder inputs
  (input_word_ids, input_mask, input_type_ids), or one with no signatures
  (TF Hub encoders are called as objects; their load tells the rest).

  Args:
    path: the folder the user gave (exists; checked by the caller).
    flag: names the flag in the message.
  """
  if not is_saved_model(path):
    raise UserInputError(_not_a_saved_model(flag, path))
  if not file_io.exists(file_io.join(path, "saved_model.pb")):
    return  # A text SavedModel (.pbtxt): left to the loader.
  signatures = read_signatures(path)
  if "serving_default" not in signatures:
    return
  inputs = signatures["serving_default"][0]
  if sorted(ENCODER_INPUT_NAMES) == inputs:
    return
  kind = _kind(signatures)
  message = (f"{flag}={path} is "
             f"{kind or 'a SavedModel whose serving_default is not an encoder'}"
             f" (signatures: {_describe(signatures)}), not an encoder")
  encoder = file_io.join(file_io.dirname(path), "encoder")
  if kind == "the preprocessor of an export" and is_saved_model(encoder):
    message += f"; pass {encoder}"
  else:
    message += "; pass <export_dir>/encoder of tools.export_savedmodel"
  raise UserInputError(message)
