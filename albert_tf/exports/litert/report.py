"""tools.export_tflite's whole run: convert, write, verify, report.

Writes the asked variant (tflite.Conversion.write), then runs it and the
float model with LiteRT's interpreter on the dev set of `eval_data` (else on
random-token inputs) and reports, one line each: the file; the float model's
max |difference| from the SavedModel; the quantized model's top-class
agreement with the float model; each variant's task metric (tflite_eval).
"""

from typing import Dict, Optional

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf.exports import dev_evaluation as tflite_eval
from albert_tf.exports import options
from albert_tf.exports import serving_kinds
from albert_tf.exports.litert.converter import Conversion
from albert_tf.exports.litert.interpreter import LiteRTModel
from albert_tf.exports.text_runner import SquadSettings
from albert_tf.exports.text_runner import TextRunner

# Parity the float model must keep with the SavedModel.
FLOAT_TOLERANCE = 1e-4


def export_and_report(saved_model: str, output_file: str,
                      seq_length: int = 128, batch_size: int = 1,
                      quantize: str = "none", do_lower_case: bool = True,
                      eval_data: Optional[str] = None,
                      task_name: Optional[str] = None,
                      squad_settings: SquadSettings = SquadSettings(),
                      num_threads: int = 2,
                      eval_columns: tflite_eval.EvalColumns = (
                          tflite_eval.EvalColumns()),
                      length_buckets="none") -> Dict:
  """Writes `output_file` as tflite.export_tflite and checks it.

  Args:
    saved_model ... do_lower_case, length_buckets: as
      tflite.export_tflite.
    eval_data, task_name: the task's dev data (tflite_eval.task_evaluation).
    squad_settings: the fine-tuning run's SQuAD values.
    num_threads: the interpreter's.
    eval_columns: how an own-data eval_data file is read.

  Returns:
    dict: `lines` (the report), `description`, `max_difference`,
    `agreement` (quantized only), `metrics` ({variant: {metric: value}},
    with eval_data).
  """
  buckets = options.check_tflite_request(saved_model, output_file,
                                         seq_length, batch_size, quantize,
                                         eval_data, length_buckets)
  conversion = Conversion(saved_model, seq_length, batch_size, buckets)
  description = conversion.write(output_file, quantize, do_lower_case)
  try:
    return _verify(conversion, description, output_file, quantize, eval_data,
                   task_name, squad_settings, num_threads, eval_columns)
  except UserInputError:  # e.g. --eval_data that does not fit the model
    conversion.remove_written()
    raise


def _verify(conversion: Conversion, description: Dict, output_file: str,
            quantize: str, eval_data: Optional[str], task_name: Optional[str],
            squad_settings: SquadSettings, num_threads: int,
            eval_columns: tflite_eval.EvalColumns) -> Dict:
  """Runs the written variant and the float model; export_and_report's
  result."""
  spec, buckets = conversion.spec, conversion.buckets
  lines = [f"wrote {output_file}: {spec.kind}, quantize={quantize}, "
           f"{description['size_bytes'] / 1e6:.2f} MB, int32 inputs "
           f"{list(spec.input_shape)}, outputs {', '.join(spec.output_names)}"]
  if len(buckets) > 1:
    lines[0] += (", a signature per length bucket "
                 f"{', '.join(map(str, buckets))}")
  variants = ["none"] + ([quantize] if quantize != "none" else [])
  models = {v: LiteRTModel(conversion.flatbuffer(v), num_threads)
            for v in variants}
  asset_dir = file_io.dirname(output_file)
  metric = None
  if eval_data:
    runner = TextRunner(models["none"], description, asset_dir,
                        squad_settings)
    inputs, metric = tflite_eval.task_evaluation(runner, eval_data,
                                                 task_name, eval_columns)
    where = f"the {len(next(iter(inputs.values())))} inputs of {eval_data}"
  else:
    vocab_size = conversion.loaded_vocab_size()
    inputs = serving_kinds.sample_inputs(
        spec.input_names, spec.input_shape, vocab_size,
        min_length=2 if len(buckets) > 1 else None)
    where = f"{len(inputs['input_mask'])} random-token inputs"
  outputs = {v: models[v](inputs) for v in variants}
  difference = serving_kinds.max_difference(
      outputs["none"],
      serving_kinds.batched(conversion.saved_model_outputs, inputs),
      inputs["input_mask"])
  if len(buckets) > 1:
    calls = models["none"].bucket_calls
    where += (" (calls per bucket: " + ", ".join(
        f"{b}: {calls[b]}" for b in buckets) + ")")
  verdict = "ok" if difference <= FLOAT_TOLERANCE else "ABOVE"
  lines.append(f"float vs SavedModel: max |difference| {difference:.2e} on "
               f"{where} ({verdict} {FLOAT_TOLERANCE:g})")
  result = dict(description=description, max_difference=difference,
                lines=lines)
  if quantize != "none":
    result["agreement"] = serving_kinds.agreement(
        spec.kind, outputs["none"], outputs[quantize])
    lines.append(f"{quantize} vs float: top-class agreement "
                 f"{result['agreement']:.4f} on {where}")
  if metric is not None:
    result["metrics"] = {}
    for v in variants:
      runner = TextRunner(models[v], description, asset_dir, squad_settings)
      result["metrics"][v] = metric(runner)
      values = ", ".join(f"{k}={x:.4f}" for k, x in
                         sorted(result["metrics"][v].items()))
      lines.append(f"{'float' if v == 'none' else v} on {eval_data}: "
                   f"{values}")
  return result

