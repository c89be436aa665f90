"""ONNX files of our exports, for ONNX Runtime, TensorRT, OpenVINO, Triton.

  options    OnnxExportParams (tools.export_onnx's flags) and the checks made
             before TensorFlow loads
  converter  export_onnx: an export's token-ids signature through tf2onnx,
             dynamic batch and sequence axes, written atomically
  runtime    onnxruntime sessions (threads, spinning), dynamic int8
  report     tools.export_onnx's run: convert, verify against the
             SavedModel, quantize, report

tf2onnx, onnx and onnxruntime are the `onnx` extra (pip install
".[onnx]"); they are imported inside the functions that use them.

May import: albert_tf.exports (encoder-side and serving), albert_tf,
data_pipeline, albert_common.
"""
