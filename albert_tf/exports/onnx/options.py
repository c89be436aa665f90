"""tools.export_onnx's settings and the checks made before TensorFlow loads.

Imports no TensorFlow, tf2onnx or onnxruntime.
"""

import dataclasses

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_common.settings_fields import setting
from albert_tf import saved_model_inspection as inspection
from albert_tf.exports import options as export_options
from albert_tf.exports.options import EvalDataParams

# Opsets tf2onnx 1.17 writes and ONNX Runtime, TensorRT 10 and OpenVINO
# read; 17 has LayerNormalization.
OPSETS = tuple(range(13, 19))
DEFAULT_OPSET = 17
# --quantize values of an ONNX export.
QUANTIZE_CHOICES = ("none", "dynamic_int8")


@dataclasses.dataclass(frozen=True, kw_only=True)
class OnnxExportParams(EvalDataParams):
  """Settings of tools.export_onnx (each field is its flag)."""

  saved_model: str = setting(
      help="An export: <export_dir>/encoder of export_savedmodel, or the "
      "--export_dir of run_classifier, run_squad, run_race, "
      "run_multiple_choice or run_ner.")
  output_file: str = setting(
      help="The .onnx file to write (any filesystem); the vocabulary, "
      "labels.txt, albert_config.json and <file>.json go beside it.")
  opset: int = setting(
      DEFAULT_OPSET, f"ONNX opset, {OPSETS[0]}-{OPSETS[-1]}.")
  quantize: str = setting(
      "none", "none: float32 weights; dynamic_int8: onnxruntime's "
      "quantize_dynamic, int8 weights per output channel, activations "
      "quantized at run time (its top-class agreement with float32 is "
      "printed).", choices=QUANTIZE_CHOICES)
  verify_seq_length: int = setting(
      128, "Longest random-token input the file is checked on against the "
      "SavedModel, and the length --eval_data's texts are packed to (at "
      "most the model's max_position_embeddings).")
  num_threads: int = setting(2, "onnxruntime intra-op threads (checks).")
  exit_loop: bool = setting(
      False, "An early-exit export (run_classifier --early_exit): write its "
      "exit loop (an ONNX Loop, exit_layer per example) instead of the "
      "full-depth graph. ONNX Runtime ran the loop faster than full depth "
      "when it saved about a third of the layers or more, slower when it "
      "saved fewer (docs/early-exit.md). Refused for an export without "
      "an exit loop.")


def check_onnx_request(saved_model: str, output_file: str, opset: int,
                       quantize: str, verify_seq_length: int = 128,
                       eval_data: str = "", exit_loop: bool = False) -> None:
  """Checks export_onnx's arguments before TensorFlow loads: the folder
  holds a SavedModel (not a preprocessor), --eval_data exists, --opset,
  --quantize, --verify_seq_length, --exit_loop only for an early-exit
  export, and the output file can be written.

  Raises:
    UserInputError: naming the flag or path at fault.
  """
  export_options.check_saved_model_dir(saved_model)
  if eval_data and not file_io.exists(eval_data):
    raise UserInputError(f"--eval_data={eval_data} does not exist")
  if opset not in OPSETS:
    raise UserInputError(
        f"--opset={opset} is not supported: give one of {OPSETS[0]}-"
        f"{OPSETS[-1]} (tf2onnx writes up to {OPSETS[-1]})")
  if quantize not in QUANTIZE_CHOICES:
    raise UserInputError(f"--quantize={quantize} must be one of "
                         f"{', '.join(QUANTIZE_CHOICES)}")
  if exit_loop and not inspection.has_exit_loop(saved_model):
    raise UserInputError(
        f"--exit_loop: --saved_model={saved_model} has no exit loop (only "
        "an export of run_classifier --early_exit has one); leave "
        "--exit_loop out")
  if verify_seq_length < 3:
    raise UserInputError(
        f"--verify_seq_length={verify_seq_length} must be at least 3")
  export_options.check_output_file(output_file)
