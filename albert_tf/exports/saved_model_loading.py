"""Reloading an export: `tf.saved_model.load` or `hub.KerasLayer`, checked.

Both register the tensorflow-text ops the preprocessor (and every raw-text
serving export) needs, as `import tensorflow_text` would, and name a path
that holds no SavedModel in one clear error instead of a TensorFlow trace.
"""

from typing import Optional

import tensorflow as tf

from albert_common.errors import UserInputError


def _check_saved_model(path: str) -> None:
  """Raises UserInputError unless `path` is a SavedModel; registers the
  tensorflow-text ops the preprocessor needs (as `import tensorflow_text`)."""
  # Registers the ops the preprocessor's graph uses.
  import tensorflow_text  # noqa: F401
  if not tf.saved_model.contains_saved_model(path):
    raise UserInputError(
        f"{path} is not a SavedModel (no saved_model.pb); expected "
        "<export_dir>/encoder or <export_dir>/preprocessor written by "
        "python -m tools.export_savedmodel")


def load_saved_model(path: str):
  """tf.saved_model.load with a clear error for a path that is not one."""
  _check_saved_model(path)
  return tf.saved_model.load(path)


def hub_layer(path: str, trainable: bool = False,
              signature: Optional[str] = None, **kwargs):
  """hub.KerasLayer for an exported encoder or preprocessor, checked first."""
  import tensorflow_hub as hub
  _check_saved_model(path)
  if signature:
    kwargs.update(signature=signature, signature_outputs_as_dict=True)
  return hub.KerasLayer(path, trainable=trainable, **kwargs)
