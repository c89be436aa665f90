"""SavedModel exports: what a trained ALBERT becomes for users and servers.

  encoder.py       `export_savedmodel`: <dir>/encoder + <dir>/preprocessor,
                   the TF Hub BERT/ALBERT interfaces (pretraining checkpoints)
  preprocessor.py  the raw strings -> encoder inputs model inside them
  endpoints.py     the one-argument endpoints Keras 3's TFSMLayer calls
  classifier.py    `export_classifier`: a fine-tuned GLUE model, raw text in
  squad_export.py  `export_squad`: a fine-tuned SQuAD model, raw strings in
  squad_serving.py the in-graph pipeline inside it (SquadServing), with
                   squad_serving_context (the context's pieces and their
                   characters) and squad_serving_wordpiece (WordPiece)
  race_serving.py  `export_race`: a fine-tuned RACE model, raw strings in
  ner_export.py    `export_ner`: a fine-tuned NER model, raw text in,
                   entities with character offsets out (on ner_serving and
                   ner_decoding); `load_ner` calls one from Python
  token_ids.py     the `token_ids` signature each of those carries too
  tflite.py        `export_tflite`: a token-ids signature as a LiteRT file
  litert.py        running one with ai_edge_litert's interpreter
  tflite_runner.py raw text -> labels / answers with a LiteRT file
  tflite_eval.py   parity, top-class agreement, task metrics of those files
  tflite_report.py tools.export_tflite's run: convert, write, verify, report
  atomic_export.py build under a hidden name, publish atomically, assets
  options.py       checks of the export arguments (imports no TensorFlow)
  saved_model_loading.py  `load_saved_model`, `hub_layer`: reload any of
                   them

The public functions are importable from here (`from albert_tf.exports
import load_saved_model`); they load lazily, so `exports.options` stays
TensorFlow-free.
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
