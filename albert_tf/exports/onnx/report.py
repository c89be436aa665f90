"""tools.export_onnx's whole run: convert, write, verify, report.

Writes the asked variant (converter.OnnxConversion.write), then runs the
float32 model in onnxruntime against the SavedModel on random-token inputs
at two batch sizes and two sequence lengths (the axes are dynamic), and a
quantized variant against the float32 one: its top-class agreement on the
dev set of `eval_data` when given (else on random-token inputs), and each
variant's task metric on it (dev_evaluation, as export_tflite reports
them); one line each. A failed check of `eval_data` removes what was
written.
"""

from typing import Dict, Optional

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf.exports import dev_evaluation
from albert_tf.exports import serving_kinds
from albert_tf.exports.onnx import options
from albert_tf.exports.onnx.converter import OnnxConversion
from albert_tf.exports.onnx.runtime import OnnxModel
from albert_tf.exports.text_runner import SquadSettings
from albert_tf.exports.text_runner import TextRunner

# Parity the float32 model must keep with the SavedModel.
FLOAT_TOLERANCE = 1e-4
# Random-token inputs the quantized model's agreement is counted on when no
# --eval_data is given.
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
                      num_threads: int = 2, eval_data: Optional[str] = None,
                      task_name: Optional[str] = None,
                      squad_settings: SquadSettings = SquadSettings(),
                      eval_columns: dev_evaluation.EvalColumns = (
                          dev_evaluation.EvalColumns()),
                      exit_loop: bool = False) -> Dict:
  """Writes `output_file` as converter.export_onnx and checks it.

  Args:
    saved_model, output_file, opset, quantize, exit_loop: as
      converter.export_onnx.
    verify_seq_length: the longest random-token check, and the length
      `eval_data`'s texts are packed to (both at most the model's
      max_position_embeddings).
    num_threads: onnxruntime's.
    eval_data, task_name, squad_settings, eval_columns: the task's dev
      data (dev_evaluation.task_evaluation).

  Returns:
    dict: `lines` (the report), `description`, `max_difference` (float32
    vs SavedModel), `agreement` (quantized only), `metrics` ({variant:
    {metric: value}}, with eval_data).
  """
  options.check_onnx_request(saved_model, output_file, opset, quantize,
                             verify_seq_length, eval_data, exit_loop)
  conversion = OnnxConversion(saved_model, opset, exit_loop)
  description = conversion.write(output_file, quantize)
  try:
    return _verify(conversion, description, output_file, quantize,
                   verify_seq_length, num_threads, eval_data, task_name,
                   squad_settings, eval_columns)
  except UserInputError:  # e.g. --eval_data that does not fit the model
    conversion.remove_written()
    raise


def _verify(conversion: OnnxConversion, description: Dict,
            output_file: str, quantize: str, verify_seq_length: int,
            num_threads: int, eval_data: Optional[str],
            task_name: Optional[str], squad_settings: SquadSettings,
            eval_columns: dev_evaluation.EvalColumns) -> Dict:
  """Runs the written variant and the float32 model; export_and_report's
  result."""
  spec = conversion.spec
  size, weights = description["size_bytes"], conversion.weight_bytes
  what = ("float32" if quantize == "none" else
          "dynamic int8 (int8 weights per output channel)")
  lines = [f"wrote {output_file}: {spec.kind}, opset {conversion.opset}, "
           f"{what}, {size / 1e6:.2f} MB (float32 weights "
           f"{weights / 1e6:.2f} MB), int32 inputs "
           f"{', '.join(spec.input_names)} {description['input_shape']}, "
           f"outputs {', '.join(spec.output_names)}" + (
               "" if conversion.early_exit is None else
               f"; early exit: {conversion.early_exit}" + (
                   " (--exit_loop writes the loop)"
                   if conversion.early_exit == "full depth" else ""))]
  models = {"none": OnnxModel(conversion.serialized("none"), num_threads)}
  if quantize != "none":
    models[quantize] = OnnxModel(conversion.serialized(quantize),
                                 num_threads)
  differences, shapes = [], []
  for seed, (batch, seq) in enumerate(check_shapes(
      (1, 4), verify_seq_length, conversion.max_positions)):
    shape = (batch, *spec.input_shape[1:-1], seq)
    inputs = serving_kinds.sample_inputs(spec.input_names, shape,
                                         conversion.vocab_size, n=batch,
                                         seed=seed)
    differences.append(serving_kinds.max_difference(
        models["none"](inputs), conversion.saved_model_outputs(inputs),
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
  metric = None
  if eval_data:
    # The vocabulary and labels as an app finds them: beside the file.
    runners = {v: TextRunner(_in_batches(m), description,
                             file_io.dirname(output_file), squad_settings,
                             seq_length=shapes[0][-1])
               for v, m in models.items()}
    inputs, metric = dev_evaluation.task_evaluation(
        runners["none"], eval_data, task_name, eval_columns)
    where = f"the {len(next(iter(inputs.values())))} inputs of {eval_data}"
  else:
    inputs = serving_kinds.sample_inputs(
        spec.input_names, (1, *spec.input_shape[1:-1], shapes[0][-1]),
        conversion.vocab_size, n=AGREEMENT_EXAMPLES, seed=7)
    where = f"{AGREEMENT_EXAMPLES} random-token inputs"
  if quantize != "none":
    result["agreement"] = serving_kinds.agreement(
        spec.kind, _in_batches(models["none"])(inputs),
        _in_batches(models[quantize])(inputs))
    lines.append(f"{quantize} vs float32: top-class agreement "
                 f"{result['agreement']:.4f} on {where}; float32 file "
                 f"{len(conversion.serialized('none')) / 1e6:.2f} MB")
  if metric is not None:
    result["metrics"] = {v: metric(runner) for v, runner in runners.items()}
    for v, values in result["metrics"].items():
      shown = ", ".join(f"{k}={x:.4f}" for k, x in sorted(values.items()))
      lines.append(f"{'float32' if v == 'none' else v} on {eval_data}: "
                   f"{shown}")
  return result


def _in_batches(model: OnnxModel):
  """The model called on 64 examples at a time (a dev set in one call
  would hold all its activations at once)."""
  return lambda inputs: serving_kinds.batched(model, inputs)
