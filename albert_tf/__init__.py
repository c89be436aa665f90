"""ALBERT (A Lite BERT) for TensorFlow 2 / Keras.

Public names are imported lazily so that light modules (config) can be
used without paying TensorFlow's import time.

May import (the root modules config, optimization, parameters_and_flops,
saved_model_inspection): albert_common. The subpackages' docstrings give
theirs; tests/project/test_subpackage_graph.py holds the whole rule.
"""

import importlib

from albert_common import moved_modules

moved_modules.install()

_LAZY = {
    "AlbertConfig": "albert_tf.config",
    "AlbertEncoder": "albert_tf.networks.albert_encoder",
    "AlbertPretrainer": "albert_tf.models.albert_pretrainer",
    "AlbertClassifier": "albert_tf.models.albert_classifier",
    "AlbertSpanLabeler": "albert_tf.models.albert_span_labeler",
    "AlbertSquadV2": "albert_tf.models.albert_squad_v2",
    "AlbertMultipleChoice": "albert_tf.models.albert_multiple_choice",
    "AlbertTokenClassifier": "albert_tf.models.albert_token_classifier",
    "UserInputError": "albert_common.errors",
    "load_weights_into": "albert_tf.checkpoints.converter",
}

__all__ = sorted(_LAZY)


def __getattr__(name):
  if name in _LAZY:
    return getattr(importlib.import_module(_LAZY[name]), name)
  raise AttributeError(f"module 'albert_tf' has no attribute {name!r}")
