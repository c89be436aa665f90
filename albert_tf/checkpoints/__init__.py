"""Checkpoint interchange: released TF1, Hugging Face, Model Garden and ours.

`name_tables` holds the declarative name tables, `configs` the config
conversion (albert_config.json / Hugging Face config.json), `converter` the
strict readers, writers and `load_weights_into`.

The converter's names are imported lazily, so that `configs` (what the
tools read before anything else) loads without TensorFlow.
"""

import importlib

_FROM_CONVERTER = ("convert_checkpoint", "detect_format", "load_weights_into",
                   "read_weights")

__all__ = list(_FROM_CONVERTER)


def __getattr__(name):
  if name in _FROM_CONVERTER:
    converter = importlib.import_module("albert_tf.checkpoints.converter")
    return getattr(converter, name)
  raise AttributeError(
      f"module 'albert_tf.checkpoints' has no attribute {name!r}")
