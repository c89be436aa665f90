"""LiteRT (TFLite) files from our SavedModel exports, built-in ops only.

`export_tflite(saved_model, output_file, ...)` converts an export's token-ids
signature (the encoder's `serving_default`; the `token_ids` signature of the
GLUE, SQuAD, RACE and NER exports, see token_ids.py) at a fixed batch size and
sequence length:

  inputs   int32 `input_word_ids`, `input_mask`, `input_type_ids`
           [batch_size, seq_length] ([batch_size, 4, seq_length] for RACE;
           SQuAD v2.0's answer-class model also `p_mask`)
  outputs  the SavedModel's names: `pooled_output` [batch, H] and
           `sequence_output` [batch, seq, H] (encoder); `logits`,
           `probabilities` (GLUE, RACE; `predictions` for regression);
           `start_logits`, `end_logits` (SQuAD; the v2.0 beam outputs);
           `tag_logits`, `tag_probabilities` [batch, seq, tags] (NER)

in one signature, `serving_default`. Only LiteRT built-in ops are allowed (no
Flex / select-TF ops), so the stock runtimes of Android, iOS and the web run
it; an op without a built-in kernel fails the conversion in one line naming
it. `quantize`: "none" (float32), "float16" (weights stored as float16,
dequantized at load) or "dynamic_int8" (weights int8 per channel,
activations quantized on the fly). ALBERT's shared layer is stored once: the
file is about parameters x bytes per weight (position embeddings beyond
seq_length are dropped) plus the op graph.

Beside the file the export's assets are copied (the vocabulary: the
SentencePiece model or a WordPiece vocab; `labels.txt`; `albert_config.json`;
an own-data model's `labels.json`)
and `<output_file minus .tflite>.json` describes the model for
litert/runner.py (the raw-text reference runner).
"""

import dataclasses
import json
import re
from typing import Dict, List, Optional, Tuple

import tensorflow as tf

from albert_common import file_io
from albert_common.encoder_inputs import ENCODER_INPUT_NAMES
from albert_common.errors import UserInputError
from albert_tf.exports import options
from albert_tf.exports import token_ids
from albert_tf.exports.litert.runner import description_path
from albert_tf.exports.saved_model_loading import load_saved_model
from data_pipeline.tasks import label_list as label_list_lib

# The encoder's serving_default outputs kept (the rest repeat them per layer).
ENCODER_OUTPUTS = ("pooled_output", "sequence_output")


@dataclasses.dataclass(frozen=True)
class ModelSpec:
  """What a token-ids signature is, for the converter and the runner.

  Attributes:
    kind: "encoder", "classifier", "multi_label" (a classifier of one's
      own data with sigmoid probabilities: its labels.json says so),
      "regression", "squad", "squad_beam", "race" (any multiple choice) or
      "token_classification".
    input_names: the int32 inputs, in order.
    input_shape: of each input, e.g. [1, 128] or [1, 4, 128].
    output_names: the outputs kept, sorted.
  """
  kind: str
  input_names: Tuple[str, ...]
  input_shape: Tuple[int, ...]
  output_names: Tuple[str, ...]


def token_ids_function(saved_model: str):
  """(loaded SavedModel, its token-ids signature function).

  Raises:
    UserInputError: no such signature (not our export, or one written
      before exports carried it).
  """
  loaded = load_saved_model(saved_model)
  signatures = loaded.signatures
  if token_ids.TOKEN_IDS in signatures:
    return loaded, signatures[token_ids.TOKEN_IDS]
  default = signatures.get("serving_default")
  if default is not None:
    inputs = default.structured_input_signature[1]
    if (set(ENCODER_INPUT_NAMES) == set(inputs) and
        "pooled_output" in default.structured_outputs):
      return loaded, default
  raise UserInputError(
      f"--saved_model={saved_model} has no token-ids signature ('"
      f"{token_ids.TOKEN_IDS}', or an encoder's serving_default): it is not "
      "an ALBERT export of this project, or predates token-ids signatures; "
      "re-export it")


def model_spec(function, batch_size: int, seq_length: int) -> ModelSpec:
  """The ModelSpec of a token-ids signature at a fixed input shape."""
  specs = function.structured_input_signature[1]
  names = tuple(ENCODER_INPUT_NAMES) + tuple(
      sorted(set(specs) - set(ENCODER_INPUT_NAMES)))
  choices = specs[ENCODER_INPUT_NAMES[0]].shape[1:-1].as_list()
  outputs = set(function.structured_outputs)
  if "pooled_output" in outputs:
    kind, outputs = "encoder", set(ENCODER_OUTPUTS)
  elif "start_top_index" in outputs:
    kind = "squad_beam"
  elif "start_logits" in outputs:
    kind = "squad"
  elif "predictions" in outputs:
    kind = "regression"
  elif "tag_logits" in outputs:
    kind = "token_classification"
  else:
    kind = "race" if choices else "classifier"
  return ModelSpec(kind, names, (batch_size, *choices, seq_length),
                   tuple(sorted(outputs)))


def max_positions(function) -> Optional[int]:
  """Rows of the position embedding table the signature function reads."""
  for v in function.variables:
    if "position_embedding" in v.name:
      return int(v.shape[0])
  return None


def fixed_shape_function(function, spec: ModelSpec):
  """A concrete function of `function` at spec.input_shape, spec's outputs."""
  tensor_specs = [tf.TensorSpec(spec.input_shape, tf.int32, name=name)
                  for name in spec.input_names]

  def call(*args):
    outputs = function(**dict(zip(spec.input_names, args)))
    return {name: outputs[name] for name in spec.output_names}

  return tf.function(call, input_signature=tensor_specs).get_concrete_function()


def convert(concrete_function, loaded, quantize: str) -> bytes:
  """The flatbuffer of `concrete_function`, LiteRT built-in ops only.

  Raises:
    UserInputError: an op has no built-in kernel (named).
  """
  converter = tf.lite.TFLiteConverter.from_concrete_functions(
      [concrete_function], loaded)
  converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
  if quantize != "none":
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
  if quantize == "float16":
    converter.target_spec.supported_types = [tf.float16]
  try:
    return converter.convert()
  except Exception as e:  # ConverterError, and MLIR errors as plain ones.
    raise UserInputError(_conversion_error(str(e))) from None


def _conversion_error(message: str) -> str:
  """One line out of the converter's multi-line diagnostics."""
  ops = sorted(set(re.findall(r"'(tf\.\w+)' op is neither a custom op nor a "
                              r"flex op", message)))
  if ops:
    return (f"op {', '.join(ops)} has no LiteRT built-in kernel; Flex (select "
            "TF) ops are not used, so this model cannot be converted")
  lines = [line.strip() for line in message.splitlines() if line.strip()]
  errors = [line for line in lines if "error" in line.lower()]
  return "LiteRT conversion failed: " + (errors or lines or ["?"])[0]


def _copy_assets(saved_model: str, output_file: str) -> List[str]:
  """Copies the export's asset files next to output_file; their paths."""
  assets = file_io.join(saved_model, "assets")
  copied = []
  if file_io.isdir(assets):
    for name in sorted(file_io.listdir(assets)):
      source = file_io.join(assets, name)
      if file_io.isfile(source):
        target = file_io.join(file_io.dirname(output_file), name)
        file_io.write_atomic(target, file_io.read_bytes(source))
        copied.append(target)
  return copied


def export_tflite(saved_model: str, output_file: str, seq_length: int = 128,
                  batch_size: int = 1, quantize: str = "none",
                  do_lower_case: bool = True) -> Dict:
  """Converts an export's token-ids signature and writes it (module doc).

  Args:
    saved_model: an export's folder (any filesystem).
    output_file: the .tflite path (any filesystem), written atomically.
    seq_length, batch_size: the fixed input shape.
    quantize: one of options.QUANTIZE_CHOICES.
    do_lower_case: the tokenizer's, recorded for the runner (as at
      fine-tuning).

  Returns:
    The description written to `description_path(output_file)`: kind,
    inputs, input_shape, outputs, quantize, vocab_file, labels_file,
    size_bytes.

  Raises:
    UserInputError: a bad argument (options.check_tflite_request), no
      token-ids signature, seq_length above the position table, an op
      without a built-in kernel.
  """
  options.check_tflite_request(saved_model, output_file, seq_length,
                               batch_size, quantize)
  return Conversion(saved_model, seq_length, batch_size).write(
      output_file, quantize, do_lower_case)


class Conversion:
  """One export's token-ids signature at a fixed shape, converted as asked.

  Args:
    saved_model, seq_length, batch_size: as export_tflite's (checked with
      options.check_tflite_request first).
  """

  def __init__(self, saved_model: str, seq_length: int, batch_size: int):
    self.saved_model = saved_model
    self.loaded, self.function = token_ids_function(saved_model)
    positions = max_positions(self.function)
    if positions is not None:
      options.check_tflite_seq_length(seq_length, positions)
    self.spec = model_spec(self.function, batch_size, seq_length)
    saved = label_list_lib.read(file_io.join(saved_model, "assets"))
    if (self.spec.kind == "classifier" and saved is not None and
        saved.task_type == "multi_label"):
      self.spec = dataclasses.replace(self.spec, kind="multi_label")
    self.concrete_function = fixed_shape_function(self.function, self.spec)
    self._flatbuffers = {}

  def flatbuffer(self, quantize: str) -> bytes:
    """The converted model (cached per quantize)."""
    if quantize not in self._flatbuffers:
      self._flatbuffers[quantize] = convert(self.concrete_function,
                                            self.loaded, quantize)
    return self._flatbuffers[quantize]

  def loaded_vocab_size(self) -> int:
    """Rows of the word embedding table the signature reads."""
    for v in self.function.variables:
      if "word_embeddings" in v.name:
        return int(v.shape[0])
    return 100

  def saved_model_outputs(self, inputs) -> Dict:
    """The SavedModel signature's outputs kept in the file, as numpy."""
    outputs = self.function(**{k: tf.constant(v) for k, v in inputs.items()})
    return {k: outputs[k].numpy() for k in self.spec.output_names}

  def write(self, output_file: str, quantize: str,
            do_lower_case: bool = True) -> Dict:
    """Writes the file, the assets and the description (export_tflite)."""
    flatbuffer = self.flatbuffer(quantize)
    try:
      file_io.write_atomic(output_file, flatbuffer)
    except OSError as e:
      raise UserInputError(f"--output_file={output_file} cannot be written: "
                           f"{e.strerror or e}") from None
    copied = _copy_assets(self.saved_model, output_file)
    self.written = [output_file, *copied, description_path(output_file)]
    names = [file_io.basename(a) for a in copied]
    # The SentencePiece model, or a WordPiece vocab (e.g. vocab_chinese.txt).
    vocab = [n for n in names if n.endswith(".model") or
             (n.endswith(".txt") and n != "labels.txt")]
    description = dict(
        kind=self.spec.kind, tflite_file=file_io.basename(output_file),
        inputs=list(self.spec.input_names),
        input_shape=list(self.spec.input_shape),
        outputs=list(self.spec.output_names), quantize=quantize,
        do_lower_case=do_lower_case, vocab_file=vocab[0] if vocab else None,
        labels_file="labels.txt" if "labels.txt" in names else None,
        label_list_file=(label_list_lib.FILE_NAME
                         if label_list_lib.FILE_NAME in names else None),
        size_bytes=len(flatbuffer))
    file_io.write_atomic(description_path(output_file),
                         json.dumps(description, indent=2) + "\n")
    return description

  def remove_written(self) -> None:
    """Removes what `write` wrote (a failed check leaves nothing behind)."""
    for path in getattr(self, "written", ()):
      if file_io.exists(path):
        file_io.remove(path)
