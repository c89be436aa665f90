"""LiteRT (TFLite): an export's token-ids signature as a .tflite file.

  converter    export_tflite: convert with built-in ops only, quantize
  interpreter  running a file with ai_edge_litert's interpreter
  runner       the raw-text runner (exports.text_runner) on a file
  report       tools.export_tflite's run: convert, write, verify, report

May import: albert_tf.exports (encoder-side and serving), albert_tf,
data_pipeline, albert_common.
"""
