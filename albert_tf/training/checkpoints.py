"""Warm-starting a model from a checkpoint written by our training runs.

Our checkpoints are `tf.train.Checkpoint(model=<AlbertPretrainer or
fine-tuning model>, optimizer=...)`; an encoder-only checkpoint is
`tf.train.Checkpoint(encoder=<AlbertEncoder>)`. A warm start restores weights
only (never the optimizer or the step) and fails if any variable of the part
it restores is missing from the checkpoint.
"""

from typing import List

import tensorflow as tf
from absl import logging

from albert_tf.errors import UserInputError


def resolve_checkpoint(path: str) -> str:
  """A checkpoint prefix from a prefix or a directory holding checkpoints."""
  if tf.io.gfile.isdir(path):
    latest = tf.train.latest_checkpoint(path)
    if latest is None:
      raise UserInputError(f"no checkpoint found in directory {path}")
    return latest
  if not tf.io.gfile.exists(path + ".index"):
    raise UserInputError(f"checkpoint {path} not found (no {path}.index)")
  return path


def checkpoint_keys(path: str) -> List[str]:
  try:
    return [name for name, _ in tf.train.list_variables(path)]
  except (tf.errors.OpError, ValueError) as e:
    raise UserInputError(f"cannot read checkpoint {path}: {e}") from e


def _restore(root: tf.train.Checkpoint, path: str) -> None:
  status = root.read(path)
  status.assert_existing_objects_matched()
  status.expect_partial()


def warm_start(model, init_checkpoint: str) -> str:
  """Loads weights into `model` (which has an `.encoder`) from a checkpoint.

  A whole-model checkpoint restores every variable of `model` when it holds
  them all, else (another model's heads, e.g. pretraining -> fine-tuning) the
  encoder alone; an encoder-only checkpoint restores the encoder. Every
  variable of what is restored must be in the checkpoint with its shape.
  Returns a one-line description.

  Raises:
    UserInputError: missing file, or a checkpoint of another architecture.
  """
  path = resolve_checkpoint(init_checkpoint)
  keys = checkpoint_keys(path)
  encoder_only = tf.train.Checkpoint(encoder=model.encoder)
  try:
    if any(k.startswith("model/") for k in keys):
      try:
        _restore(tf.train.Checkpoint(model=model), path)
        what = "model"
      except AssertionError:
        _restore(tf.train.Checkpoint(model=encoder_only), path)
        what = "encoder (the checkpoint's heads differ from this model's)"
    elif any(k.startswith("encoder/") for k in keys):
      _restore(encoder_only, path)
      what = "encoder"
    else:
      raise UserInputError(
          f"{path} is not a checkpoint of this library (no 'model/' or "
          f"'encoder/' variables; first keys: {keys[:3]}); convert released "
          f"or Hugging Face weights with python -m tools.convert_checkpoint")
  except (AssertionError, ValueError, tf.errors.InvalidArgumentError) as e:
    if isinstance(e, UserInputError):
      raise
    raise UserInputError(
        f"checkpoint {path} does not fit this model: {e}") from e
  message = f"warm-started the {what} from {path}"
  logging.info(message)
  return message
