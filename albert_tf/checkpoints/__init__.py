"""Checkpoint interchange: released TF1, Hugging Face, Model Garden and ours.

`converter` is the public face: `convert_checkpoint`, `read_weights`,
`load_weights_into`, `detect_format`. Behind it, one module per stage:
`locate` (path and layout), `reading/` (`readers` with `official_reader`,
`huggingface_reader`, `object_readers`), `name_tables` + `mapping` (the
declarative name tables and their strict use), `model_variables`, `writers`,
`weight_loading`; `configs` converts configs (albert_config.json, Hugging Face
and keras-hub config.json); `keras_hub_presets/` reads and writes keras-hub
presets; `wordpiece_files` / `sentencepiece_files` write the vocabulary with
an output; `conversion_params` holds the settings of
tools.convert_checkpoint. `converter` is on top: no module of the package
imports it.

The converter's names are imported lazily, so that `configs` (what the
tools read before anything else) loads without TensorFlow.

May import: albert_tf's models, networks, layers and root modules,
data_pipeline.tokenization, albert_common (and albert_tf.keras3, inside
the keras-hub preset functions).
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
