r"""Convert an exported ALBERT SavedModel to ONNX (onnxruntime, TensorRT,
OpenVINO, Triton).

  python -m tools.export_onnx --saved_model=/tmp/sst2_export \
      --output_file=/tmp/sst2_onnx/sst2.onnx --quantize=dynamic_int8

converts the export's token-ids signature (the encoder of
tools.export_savedmodel, or the --export_dir of run_classifier, run_squad,
run_race, run_multiple_choice or run_ner) with tf2onnx: int32
input_word_ids, input_mask, input_type_ids [batch, sequence] in (both axes
dynamic), the heads' outputs under the SavedModel's names out, standard
ONNX operators at --opset. The shared layer is stored once (the file is
about the float32 weights). It then runs the file in onnxruntime against
the SavedModel (max |difference|, at two batch sizes and two lengths) and,
with --quantize=dynamic_int8 (onnxruntime's quantize_dynamic, int8 weights
per output channel), writes that variant and prints its top-class
agreement with float32; with --eval_data (a fine-tuned model's dev data,
as export_tflite takes it) that agreement is counted on the dev set, and
each variant's metric on it is printed. Beside the file: the vocabulary,
labels.txt, albert_config.json and <file>.json. Needs the `onnx` extra
(pip install ".[onnx]").
"""

import sys

from albert_tf.exports.onnx.options import OnnxExportParams

from .support import cli
from .support import settings_flags

# Every flag is a field of OnnxExportParams (name, default and help).
settings_flags.define_flags(OnnxExportParams, __name__)


def main(argv):
  del argv
  # Checked before TensorFlow is imported; --help answers without it.
  from albert_tf.exports.onnx import options
  params, _ = settings_flags.read_settings(OnnxExportParams)
  options.check_onnx_request(params.saved_model, params.output_file,
                             params.opset, params.quantize,
                             params.verify_seq_length, params.eval_data,
                             params.exit_loop)
  from albert_tf.exports.dev_evaluation import settings_of
  from albert_tf.exports.onnx.report import export_and_report
  squad_settings, columns = settings_of(params)
  result = export_and_report(
      params.saved_model, params.output_file, params.opset, params.quantize,
      params.verify_seq_length, params.num_threads, params.eval_data,
      params.task_name, squad_settings, columns, params.exit_loop)
  print("\n".join(result["lines"]))
  from albert_tf.exports.cpu_hint import int8_runtime_hint
  hint = int8_runtime_hint()
  if hint:  # on stderr: stdout is the report
    print(hint, file=sys.stderr)


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
