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

in the signature `serving_default`. With length buckets (`--length_buckets`;
"auto": 32, 64, ... below seq_length) the file also holds a signature
`seq_<N>` per shorter bucket, the same inputs and outputs at [batch_size,
N]: one file, the weights stored once (each signature adds its ops and its
rows of the position table, well under 5% of the file), and the runner
(interpreter.py) calls the smallest that holds a request, whose outputs
equal the full-length ones at the real positions. Only LiteRT built-in ops
are allowed (no
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

import json
import re
from typing import Dict, Sequence

import tensorflow as tf

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf.exports import atomic_export
from albert_tf.exports import options
from albert_tf.exports import token_ids
from albert_tf.exports.litert.runner import description_path
from albert_tf.exports.token_ids import ModelSpec
from data_pipeline.tasks import label_list as label_list_lib

# The signature of the full --seq_length; a shorter bucket's is seq_<N>.
FULL_SIGNATURE = "serving_default"


def signature_key(bucket: int, seq_length: int) -> str:
  """The signature name of a bucket in a file of seq_length."""
  return FULL_SIGNATURE if bucket == seq_length else f"seq_{bucket}"


def fixed_shape_function(function, spec: ModelSpec,
                         name: str = FULL_SIGNATURE):
  """A concrete function of `function` at spec.input_shape, spec's outputs;
  `name` becomes its signature's key in a file of several."""
  tensor_specs = [tf.TensorSpec(spec.input_shape, tf.int32, name=n)
                  for n in spec.input_names]

  def call(*args):
    outputs = function(**dict(zip(spec.input_names, args)))
    return {n: outputs[n] for n in spec.output_names}

  call.__name__ = name
  return tf.function(call, input_signature=tensor_specs).get_concrete_function()


def convert(concrete_functions, loaded, quantize: str) -> bytes:
  """The flatbuffer of the concrete functions (a signature each, named
  after its function, weights stored once), LiteRT built-in ops only.

  Raises:
    UserInputError: an op has no built-in kernel (named).
  """
  if not isinstance(concrete_functions, (list, tuple)):
    concrete_functions = [concrete_functions]
  converter = tf.lite.TFLiteConverter.from_concrete_functions(
      list(concrete_functions), loaded)
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


def export_tflite(saved_model: str, output_file: str, seq_length: int = 128,
                  batch_size: int = 1, quantize: str = "none",
                  do_lower_case: bool = True,
                  length_buckets="none") -> Dict:
  """Converts an export's token-ids signature and writes it (module doc).

  Args:
    saved_model: an export's folder (any filesystem).
    output_file: the .tflite path (any filesystem), written atomically.
    seq_length, batch_size: the fixed input shape (of `serving_default`).
    quantize: one of options.QUANTIZE_CHOICES.
    do_lower_case: the tokenizer's, recorded for the runner (as at
      fine-tuning).
    length_buckets: a `--length_buckets` value ("auto", "none", "32,64") or
      increasing lengths: besides `serving_default` (seq_length), a
      signature `seq_<N>` per shorter bucket, the weights stored once.

  Returns:
    The description written to `description_path(output_file)`: kind,
    inputs, input_shape, outputs, buckets, quantize, vocab_file,
    labels_file, size_bytes.

  Raises:
    UserInputError: a bad argument (options.check_tflite_request), no
      token-ids signature, seq_length above the position table, an op
      without a built-in kernel.
  """
  buckets = options.check_tflite_request(saved_model, output_file,
                                         seq_length, batch_size, quantize,
                                         length_buckets=length_buckets)
  return Conversion(saved_model, seq_length, batch_size, buckets).write(
      output_file, quantize, do_lower_case)


class Conversion:
  """One export's token-ids signature at fixed shapes, converted as asked.

  Args:
    saved_model, seq_length, batch_size: as export_tflite's (checked with
      options.check_tflite_request first).
    buckets: increasing lengths ending with seq_length (one signature
      each); () or (seq_length,): one signature.
  """

  def __init__(self, saved_model: str, seq_length: int, batch_size: int,
               buckets: Sequence[int] = ()):
    self.saved_model = saved_model
    self.loaded, self.function = token_ids.token_ids_function(saved_model)
    # An early-exit export: its loop without tf.cond (the same exits).
    self.function = self.loaded.signatures.get(
        token_ids.TOKEN_IDS_UNBRANCHED, self.function)
    positions = token_ids.max_positions(self.function)
    if positions is not None:
      options.check_tflite_seq_length(seq_length, positions)
    self.buckets = tuple(buckets) or (seq_length,)
    self.spec = token_ids.model_spec(self.function, batch_size, seq_length,
                                     saved_model)
    self.concrete_functions = [
        fixed_shape_function(
            self.function, token_ids.model_spec(self.function, batch_size,
                                                bucket),
            signature_key(bucket, seq_length))
        for bucket in self.buckets]
    self._flatbuffers = {}

  def flatbuffer(self, quantize: str) -> bytes:
    """The converted model (cached per quantize)."""
    if quantize not in self._flatbuffers:
      self._flatbuffers[quantize] = convert(self.concrete_functions,
                                            self.loaded, quantize)
    return self._flatbuffers[quantize]

  def loaded_vocab_size(self) -> int:
    """Rows of the word embedding table the signature reads."""
    return token_ids.vocab_size(self.function)

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
    copied = atomic_export.copy_assets(self.saved_model, output_file)
    self.written = [output_file, *copied, description_path(output_file)]
    names = [file_io.basename(a) for a in copied]
    # The SentencePiece model, or a WordPiece vocab (e.g. vocab_chinese.txt).
    vocab = [n for n in names if n.endswith(".model") or
             (n.endswith(".txt") and n != "labels.txt")]
    description = dict(
        kind=self.spec.kind, tflite_file=file_io.basename(output_file),
        inputs=list(self.spec.input_names),
        input_shape=list(self.spec.input_shape),
        outputs=list(self.spec.output_names), buckets=list(self.buckets),
        quantize=quantize,
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
