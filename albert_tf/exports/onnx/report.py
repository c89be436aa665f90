"""tools.export_onnx's whole run: convert, write, verify, report.

Writes the asked variant (converter.OnnxConversion.write), then runs the
float32 model in onnxruntime against the SavedModel on random-token inputs
at two batch sizes and two sequence lengths (the axes are dynamic), and a
quantized variant against the float32 one; one line each.
"""

from typing import Dict

from albert_tf.exports import serving_kinds
from albert_tf.exports.onnx import options
from albert_tf.exports.onnx.converter import OnnxConversion
from albert_tf.exports.onnx.runtime import OnnxModel

# Parity the float32 model must keep with the SavedModel.
FLOAT_TOLERANCE = 1e-4
# Random-token inputs the quantized model's agreement is counted on.
AGREEMENT_EXAMPLES = 64


def check_shapes(batch_sizes, seq_length: int, max_positions) -> list:
  """The (batch, sequence) pairs the float model is checked at: the two
  batch sizes at the longest checked length and at about half of it."""
  longest = min(seq_length, max_positions or seq_length)
  return [(batch_sizes[0], longest), (batch_sizes[1], max(2, longest // 2
                                                          + 3))]


def export_and_report(saved_model: str, output_file: str,
                      opset: int = options.DEFAULT_OPSET,
                      quantize: str = "none", verify_seq_length: int = 128,
                      num_threads: int = 2) -> Dict:
  """Writes `output_file` as converter.export_onnx and checks it.

  Returns:
    dict: `lines` (the report), `description`, `max_difference` (float32
    vs SavedModel), `agreement` (quantized only).
  """
  options.check_onnx_request(saved_model, output_file, opset, quantize,
                             verify_seq_length)
  conversion = OnnxConversion(saved_model, opset)
  description = conversion.write(output_file, quantize)
  spec = conversion.spec
  size, weights = description["size_bytes"], conversion.weight_bytes
  what = ("float32" if quantize == "none" else
          "dynamic int8 (int8 weights per output channel)")
  lines = [f"wrote {output_file}: {spec.kind}, opset {opset}, {what}, "
           f"{size / 1e6:.2f} MB (float32 weights {weights / 1e6:.2f} MB), "
           f"int32 inputs {', '.join(spec.input_names)} "
           f"{description['input_shape']}, outputs "
           f"{', '.join(spec.output_names)}"]
  float_model = OnnxModel(conversion.serialized("none"), num_threads)
  differences, shapes = [], []
  for seed, (batch, seq) in enumerate(check_shapes(
      (1, 4), verify_seq_length, conversion.max_positions)):
    shape = (batch, *spec.input_shape[1:-1], seq)
    inputs = serving_kinds.sample_inputs(spec.input_names, shape,
                                         conversion.vocab_size, n=batch,
                                         seed=seed)
    differences.append(serving_kinds.max_difference(
        float_model(inputs), conversion.saved_model_outputs(inputs),
        inputs["input_mask"]))
    shapes.append(list(shape))
  difference = max(differences)
  verdict = "ok" if difference <= FLOAT_TOLERANCE else "ABOVE"
  lines.append(f"onnxruntime float32 vs SavedModel: max |difference| "
               f"{difference:.2e} on random-token inputs "
               f"{' and '.join(map(str, shapes))} ({verdict} "
               f"{FLOAT_TOLERANCE:g})")
  result = dict(description=description, max_difference=difference,
                lines=lines)
  if quantize != "none":
    quantized = OnnxModel(conversion.serialized(quantize), num_threads)
    shape = (1, *spec.input_shape[1:-1], shapes[0][-1])
    inputs = serving_kinds.sample_inputs(
        spec.input_names, shape, conversion.vocab_size,
        n=AGREEMENT_EXAMPLES, seed=7)
    result["agreement"] = serving_kinds.agreement(
        spec.kind, float_model(inputs), quantized(inputs))
    lines.append(f"{quantize} vs float32: top-class agreement "
                 f"{result['agreement']:.4f} on {AGREEMENT_EXAMPLES} "
                 f"random-token inputs; float32 file "
                 f"{len(conversion.serialized('none')) / 1e6:.2f} MB")
  return result
