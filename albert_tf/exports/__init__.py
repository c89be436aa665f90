"""SavedModel exports: what a trained ALBERT becomes for users and servers.

  encoder.py       `export_savedmodel`: <dir>/encoder + <dir>/preprocessor,
                   the TF Hub BERT/ALBERT interfaces (pretraining checkpoints)
  preprocessor.py  the raw strings -> encoder inputs model inside them
  endpoints.py     the one-argument endpoints Keras 3's TFSMLayer calls
  token_ids.py     the `token_ids` signature every serving export carries
  bucketing.py     serving with length buckets
  atomic_export.py build under a hidden name, publish atomically, assets
  options.py       checks of the export arguments (imports no TensorFlow)
  saved_model_loading.py  `load_saved_model`, `hub_layer`: reload any of
                   them
  text_runner.py   raw text -> labels / answers with a converted model
                   (LiteRT or ONNX), as an app would
  dev_evaluation.py  a converted model's dev-set metric (--eval_data)
  serving/         raw-text exports of fine-tuned models: `export_classifier`
                   (GLUE), `export_squad` (with its in-graph pipeline),
                   `export_race`, `export_ner` (entity spans of raw text;
                   `load_ner` calls one from Python)
  litert/          `export_tflite`: a token-ids signature as a LiteRT file,
                   its interpreter, its checks
  onnx/            `export_onnx`: the same as an ONNX file

The public functions are importable from here (`from albert_tf.exports
import load_saved_model`); they load lazily, so `exports.options` stays
TensorFlow-free.

May import: albert_tf.checkpoints, models, networks, layers, the root
modules, data_pipeline, albert_common.
"""

import importlib

_LAZY = {
    "export_savedmodel": "albert_tf.exports.encoder",
    "export_classifier": "albert_tf.exports.serving.classifier",
    "export_squad": "albert_tf.exports.serving.squad_export",
    "export_race": "albert_tf.exports.serving.race",
    "export_ner": "albert_tf.exports.serving.ner_export",
    "load_ner": "albert_tf.exports.serving.ner_export",
    "export_tflite": "albert_tf.exports.litert.converter",
    "load_saved_model": "albert_tf.exports.saved_model_loading",
    "hub_layer": "albert_tf.exports.saved_model_loading",
}

__all__ = sorted(_LAZY)


def __getattr__(name):
  if name in _LAZY:
    return getattr(importlib.import_module(_LAZY[name]), name)
  raise AttributeError(f"module 'albert_tf.exports' has no attribute {name!r}")
