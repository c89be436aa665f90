"""ONNX files from our SavedModel exports, through tf2onnx.

`export_onnx(saved_model, output_file, ...)` converts an export's token-ids
signature (the encoder's `serving_default`; the `token_ids` signature of
the GLUE, SQuAD and RACE exports, token_ids.py) with tf2onnx
(`tf2onnx.convert.from_function`, its variables frozen into initializers):

  inputs   int32 `input_word_ids`, `input_mask`, `input_type_ids` [batch,
           sequence] ([batch, 4, sequence] for RACE; SQuAD v2.0's
           answer-class model also `p_mask`), both axes dynamic
  outputs  the SavedModel's names (serving_kinds.py): `pooled_output`,
           `sequence_output` (encoder); `logits`, `probabilities`
           (classifiers, multiple choice; `predictions` for regression);
           `start_logits`, `end_logits` (SQuAD; the v2.0 beam outputs);
           `tag_logits`, `tag_probabilities` [batch, sequence, tags] (NER)

An early-exit classifier's export (run_classifier --early_exit) is
converted at full depth, from its `token_ids_full_depth` signature
(`exit_layer` = L), unless `exit_loop`: then its exit loop, an ONNX
`Loop`. ONNX Runtime runs the loop faster than full depth when it saves
about a third of the layers or more, slower when it saves fewer
(docs/early-exit.md).

Standard ONNX operators only (no onnxruntime contrib ops), so TensorRT,
OpenVINO and Triton's backends read it too; onnxruntime applies its own
graph optimizations when it loads the file. ALBERT's shared layer is stored
once: every layer's nodes read the same initializers, so the file is about
the float32 weights. `quantize="dynamic_int8"` writes
onnxruntime's dynamic int8 variant of it (runtime.py).

Beside the file, as for LiteRT: the export's assets (vocabulary,
labels.txt, albert_config.json) and `<file minus .onnx>.json` describing
it. Everything is written under a temporary name and renamed.
"""

import json
import logging
import os
import re
from typing import Dict, Optional

import numpy as np
import tensorflow as tf

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf.exports import atomic_export
from albert_tf.exports import token_ids
from albert_tf.exports.onnx import options
from albert_tf.exports.token_ids import ModelSpec
from data_pipeline.tasks import label_list as label_list_lib

# Names of the dynamic axes.
BATCH, SEQUENCE = "batch", "sequence"


def description_path(onnx_file: str) -> str:
  """`model.onnx` -> `model.json` (written by export_onnx)."""
  return re.sub(r"\.onnx$", "", onnx_file) + ".json"


def to_onnx(function, spec: ModelSpec, opset: int):
  """The onnx.ModelProto of a token-ids signature function: spec's inputs
  (dynamic axes named batch and sequence) and outputs.

  Raises:
    UserInputError: an op tf2onnx cannot express in standard ONNX (named).
  """
  import onnx
  import tf2onnx
  from tf2onnx import verbose_logging
  _quiet_tf2onnx(verbose_logging)
  tensor_specs = [tf.TensorSpec(spec.input_shape, tf.int32, name=name)
                  for name in spec.input_names]

  def call(*args):
    outputs = function(**dict(zip(spec.input_names, args)))
    return {name: outputs[name] for name in spec.output_names}

  traced = tf.function(call, input_signature=tensor_specs)
  model, _ = tf2onnx.convert.from_function(traced, tensor_specs,
                                           opset=opset)
  unknown = sorted({node.op_type for node in model.graph.node
                    if not onnx.defs.has(node.op_type, node.domain or "")})
  if unknown:
    raise UserInputError(
        f"op {', '.join(unknown)} has no ONNX equivalent in tf2onnx "
        f"{tf2onnx.__version__}; this model cannot be converted")
  _name_dynamic_axes(model, function)
  _scalar_loop_counters(model.graph)
  onnx.checker.check_model(model)
  return model


def _scalar_loop_counters(graph) -> None:
  """Gives each Loop body's iteration-number input its scalar shape.

  tf2onnx leaves it without one when the body holds an If (the early-exit
  loop's), and ONNX Runtime then refuses the Loop ("subgraph input 0 has
  unknown shape"); the ONNX spec defines it as an int64 scalar."""
  for node in graph.node:
    for attribute in node.attribute:
      if attribute.g.node:
        _scalar_loop_counters(attribute.g)
    if node.op_type == "Loop":
      body = next(a.g for a in node.attribute if a.name == "body")
      counter = body.input[0].type.tensor_type
      if not counter.HasField("shape"):
        counter.shape.SetInParent()  # rank 0


def _name_dynamic_axes(model, function) -> None:
  """Axis 0 of every input and output is `batch`; the other dynamic axes
  (the sequence of the inputs and of per-position outputs) `sequence`."""
  outputs = function.structured_outputs
  for value in list(model.graph.input) + list(model.graph.output):
    dims = value.type.tensor_type.shape.dim
    static = (outputs[value.name].shape.as_list() if value.name in outputs
              else [None] * len(dims))
    for axis, dim in enumerate(dims):
      if axis == 0:
        dim.dim_param = BATCH
      elif static[axis] is None or dim.dim_param:
        dim.dim_param = SEQUENCE


def float_weight_bytes(function) -> int:
  """Bytes of the float32 variables the signature function reads."""
  return sum(4 * v.shape.num_elements() for v in function.variables
             if v.dtype == tf.float32)


def _quiet_tf2onnx(verbose_logging) -> None:
  """tf2onnx's and TensorFlow's Python loggers to ERROR, as tf2onnx's
  `set_level` does, but the caller's environment kept: `set_level` also
  writes TF_CPP_MIN_LOG_LEVEL=2 into os.environ, which this process
  ignores (TensorFlow read it at import) and every subprocess started
  later inherits (TensorFlow's C++ errors, e.g. a CPU-only build's
  "failed call to cuInit", then reach its stderr)."""
  name = "TF_CPP_MIN_LOG_LEVEL"
  kept = os.environ.get(name)
  verbose_logging.set_level(logging.ERROR)
  if kept is None:
    os.environ.pop(name, None)
  else:
    os.environ[name] = kept


class OnnxConversion:
  """One export's token-ids signature as an ONNX model.

  Args:
    saved_model: the export (checked with options.check_onnx_request).
    opset: the ONNX opset.
    exit_loop: an early-exit export's file keeps its exit loop (else it is
      written at full depth).
  """

  def __init__(self, saved_model: str, opset: int = options.DEFAULT_OPSET,
               exit_loop: bool = False):
    self.saved_model = saved_model
    self.opset = opset
    self.loaded, self.function = token_ids.token_ids_function(saved_model)
    full_depth = self.loaded.signatures.get(token_ids.TOKEN_IDS_FULL_DEPTH)
    # None (not an early-exit export), "exit loop" or "full depth".
    self.early_exit = (None if full_depth is None else
                       "exit loop" if exit_loop else "full depth")
    if full_depth is not None and not exit_loop:
      # An early-exit export: ONNX Runtime runs its Loop slower than full
      # depth when it saves few layers (docs/early-exit.md), so the default
      # file never costs more than the model without early exit.
      self.function = full_depth
    self.spec = token_ids.model_spec(self.function, saved_model=saved_model)
    self.max_positions = token_ids.max_positions(self.function)
    self.vocab_size = token_ids.vocab_size(self.function)
    self.weight_bytes = float_weight_bytes(self.function)
    self.model = to_onnx(self.function, self.spec, opset)
    self._serialized = {}

  def serialized(self, quantize: str = "none") -> bytes:
    """The file's bytes: float32, or its dynamic int8 variant (cached)."""
    if quantize not in self._serialized:
      if quantize == "none":
        self._serialized[quantize] = self.model.SerializeToString()
      else:
        from albert_tf.exports.onnx.runtime import quantize_dynamic_int8
        self._serialized[quantize] = quantize_dynamic_int8(self.model)
    return self._serialized[quantize]

  def saved_model_outputs(self, inputs: Dict[str, np.ndarray]
                          ) -> Dict[str, np.ndarray]:
    """The SavedModel signature's outputs the file keeps, as numpy."""
    outputs = self.function(**{k: tf.constant(inputs[k])
                               for k in self.spec.input_names})
    return {k: outputs[k].numpy() for k in self.spec.output_names}

  def write(self, output_file: str, quantize: str = "none") -> Dict:
    """Writes the file, the assets and the description (export_onnx)."""
    data = self.serialized(quantize)
    try:
      file_io.write_atomic(output_file, data)
    except OSError as e:
      raise UserInputError(f"--output_file={output_file} cannot be written: "
                           f"{e.strerror or e}") from None
    copied = atomic_export.copy_assets(self.saved_model, output_file)
    names = [file_io.basename(a) for a in copied]
    vocab = [n for n in names if n.endswith(".model") or
             (n.endswith(".txt") and n != "labels.txt")]
    choices = list(self.spec.input_shape[1:-1])
    description = dict(
        kind=self.spec.kind, onnx_file=file_io.basename(output_file),
        opset=self.opset, inputs=list(self.spec.input_names),
        input_shape=[BATCH, *choices, SEQUENCE],
        outputs=list(self.spec.output_names), quantize=quantize,
        max_positions=self.max_positions,
        vocab_file=vocab[0] if vocab else None,
        labels_file="labels.txt" if "labels.txt" in names else None,
        label_list_file=(label_list_lib.FILE_NAME
                         if label_list_lib.FILE_NAME in names else None),
        size_bytes=len(data), float_weight_bytes=self.weight_bytes)
    file_io.write_atomic(description_path(output_file),
                         json.dumps(description, indent=2) + "\n")
    self.written = [output_file, *copied, description_path(output_file)]
    return description

  def remove_written(self) -> None:
    """Removes what `write` wrote (a failed check leaves nothing behind)."""
    for path in getattr(self, "written", ()):
      if file_io.exists(path):
        file_io.remove(path)


def export_onnx(saved_model: str, output_file: str,
                opset: int = options.DEFAULT_OPSET,
                quantize: str = "none",
                conversion: Optional[OnnxConversion] = None,
                exit_loop: bool = False) -> Dict:
  """Converts an export's token-ids signature and writes it (module doc).

  Args:
    saved_model: an export's folder (any filesystem).
    output_file: the .onnx path (any filesystem), written atomically.
    opset: one of options.OPSETS.
    quantize: "none" or "dynamic_int8".
    conversion: an OnnxConversion of saved_model at opset, to reuse.
    exit_loop: an early-exit export keeps its loop (OnnxConversion).

  Returns:
    The description written beside the file: kind, inputs, input_shape,
    outputs, opset, quantize, vocab_file, labels_file, size_bytes,
    float_weight_bytes.

  Raises:
    UserInputError: not a SavedModel, a preprocessor, no token-ids
      signature, an unsupported opset or quantize value, an unwritable
      output file, an op tf2onnx cannot convert.
  """
  options.check_onnx_request(saved_model, output_file, opset, quantize,
                             exit_loop=exit_loop)
  conversion = conversion or OnnxConversion(saved_model, opset, exit_loop)
  return conversion.write(output_file, quantize)
