r"""Convert an exported ALBERT SavedModel to a LiteRT (.tflite) file.

  python -m tools.export_tflite --saved_model=/tmp/sst2_export \
      --output_file=/tmp/sst2/sst2_int8.tflite --seq_length=128 \
      --quantize=dynamic_int8 --eval_data=glue/SST-2 --task_name=SST-2

converts the export's token-ids signature (the encoder of
tools.export_savedmodel, or the --export_dir of run_classifier, run_squad,
run_race or run_multiple_choice) at a fixed --batch_size x --seq_length
(signature serving_default) and, by default (--length_buckets=auto), at
each shorter length bucket (signatures seq_32, seq_64, ...; one file, the
weights stored once), with LiteRT built-in ops only (no Flex ops: stock
Android, iOS and web runtimes run it). Inputs: int32 input_word_ids,
input_mask, input_type_ids; outputs keep the SavedModel's names. Beside the
file: the vocabulary (SentencePiece model), labels.txt, albert_config.json
and <file>.json for the reference runner (albert_tf/exports/litert/
runner.py, which calls the smallest bucket holding a request). It then runs
the file with ai_edge_litert's interpreter and prints the float model's
difference from the SavedModel, a quantized model's top-class agreement with
the float model, and with --eval_data each variant's dev metric (a model of
your own data: its dev file, read with the column flags of fine-tuning).
"""

import sys

from albert_tf.exports.options import TfliteExportParams

from .support import cli
from .support import settings_flags

# Every flag is a field of TfliteExportParams (name, default and help).
settings_flags.define_flags(TfliteExportParams, __name__)


def main(argv):
  del argv
  # Checked before TensorFlow is imported; --help answers without it.
  from albert_tf.exports import options
  params, _ = settings_flags.read_settings(TfliteExportParams)
  options.check_tflite_request(params.saved_model, params.output_file,
                               params.seq_length, params.batch_size,
                               params.quantize, params.eval_data,
                               params.length_buckets)
  from albert_tf.exports.dev_evaluation import settings_of
  from albert_tf.exports.litert.report import export_and_report
  squad_settings, columns = settings_of(params)
  result = export_and_report(
      params.saved_model, params.output_file, params.seq_length,
      params.batch_size, params.quantize, params.do_lower_case,
      params.eval_data, params.task_name, squad_settings,
      params.num_threads, columns, params.length_buckets)
  print("\n".join(result["lines"]))
  from albert_tf.exports.cpu_hint import int8_runtime_hint
  hint = int8_runtime_hint()
  if hint:  # on stderr: stdout is the report
    print(hint, file=sys.stderr)


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
