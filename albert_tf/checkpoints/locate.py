"""Where a checkpoint is and which layout it has.

`resolve_path` turns a user path (a prefix, a file or a folder, on any
TensorFlow filesystem) into a TensorFlow checkpoint prefix or a safetensors
file (in a folder: the `checkpoint` state file's latest, else the folder's
only prefix, as a released download holds one); `detect_format` tells the
layout from the contents (keras-hub presets are recognised by
keras_hub_preset.is_preset before this).
"""

from typing import Dict, List, Optional, Tuple

import tensorflow as tf

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf import saved_model_inspection as inspection


def resolve_path(path: str) -> Tuple[str, str]:
  """("tf", checkpoint prefix), ("safetensors", file) or ("torch", a
  pytorch_model.bin or its shards' index) for a user path.

  Raises:
    UserInputError: nothing usable at `path`.
  """
  if file_io.isdir(path):
    for name in ("model.safetensors", "model.safetensors.index.json"):
      if file_io.exists(file_io.join(path, name)):
        return "safetensors", file_io.join(path, name)
    latest = tf.train.latest_checkpoint(path) or _only_prefix(path)
    if latest:
      return "tf", latest
    for name in ("pytorch_model.bin", "pytorch_model.bin.index.json"):
      if file_io.exists(file_io.join(path, name)):
        return "torch", file_io.join(path, name)
    for folder in (path, file_io.join(path, "encoder")):
      if inspection.is_saved_model(folder):
        raise UserInputError(
            f"{path} is {'a SavedModel' if folder == path else 'an export'}"
            ", not a checkpoint (fine-tuning takes an exported encoder as "
            f"--init_savedmodel={folder})")
    raise UserInputError(
        f"no checkpoint in directory {path}: expected model.safetensors, "
        "or a TensorFlow checkpoint (<prefix>.index and its data files)")
  if path.endswith(".safetensors") or path.endswith(".safetensors.index.json"):
    if not file_io.exists(path):
      raise UserInputError(f"checkpoint file {path} not found")
    return "safetensors", path
  if path.endswith(".bin") or path.endswith(".bin.index.json"):
    if not file_io.exists(path):
      raise UserInputError(f"checkpoint file {path} not found")
    return "torch", path
  if path.endswith(".index") and file_io.exists(path):
    return "tf", path[:-len(".index")]
  if file_io.exists(path + ".index"):
    return "tf", path
  raise UserInputError(
      f"checkpoint {path} not found (neither {path}.index, a .safetensors "
      "file nor a directory holding a checkpoint)")


def _only_prefix(folder: str) -> Optional[str]:
  """The one checkpoint prefix in `folder` (its `<prefix>.index`), for a
  folder with no `checkpoint` state file: the released google-research/albert
  downloads ship `model.ckpt-best.*` or `model.ckpt.*` without one. None if
  there is none.

  Raises:
    UserInputError: several prefixes, which nothing says how to choose.
  """
  prefixes = [name[:-len(".index")] for name in file_io.listdir(folder)
              if name.endswith(".index") and not name.startswith(".")]
  if len(prefixes) > 1:
    raise UserInputError(
        f"{folder} holds {len(prefixes)} checkpoints and no 'checkpoint' "
        f"state file saying which is the latest: {', '.join(prefixes)}; give "
        f"one by its prefix, e.g. {file_io.join(folder, prefixes[-1])}")
  return file_io.join(folder, prefixes[0]) if prefixes else None


def checkpoint_reader(prefix: str):
  """A CheckpointReader of `prefix`. (tf.train.load_checkpoint first asks
  whether the prefix is a folder, which ram:// answers yes: "ckpt-4" is a
  string prefix of "ckpt-4.index".)"""
  try:
    return tf.compat.v1.train.NewCheckpointReader(prefix)
  except (tf.errors.OpError, ValueError) as e:
    raise UserInputError(f"cannot read checkpoint {prefix}: {e}") from e


def list_tf_checkpoint(prefix: str) -> Dict[str, List[int]]:
  """Stored name -> shape of every tensor in the checkpoint at `prefix`."""
  return checkpoint_reader(prefix).get_variable_to_shape_map()


def strip_module(name: str) -> str:
  """A TF-Hub `module/` name without that prefix (the official layout)."""
  return name[len("module/"):] if name.startswith("module/") else name


def detect_format(path: str) -> str:
  """"ours", "official", "huggingface" or "garden", from the contents."""
  kind, resolved = resolve_path(path)
  if kind in ("safetensors", "torch"):
    return "huggingface"
  keys = list_tf_checkpoint(resolved)
  if "_CHECKPOINTABLE_OBJECT_GRAPH" in keys:
    roots = {k.split("/", 1)[0] for k in keys if ".ATTRIBUTES" in k}
    for root in ("model", "encoder"):
      if root in roots:
        # Model Garden's TransformerEncoderBlock attributes vs our sublayers.
        garden = any("/_attention_layer/" in k for k in keys
                     if k.startswith(root + "/"))
        return "garden" if garden else "ours"
  names = [k for k in keys if k != "_CHECKPOINTABLE_OBJECT_GRAPH"]
  if any(strip_module(k).startswith(("bert/", "cls/")) for k in names):
    return "official"
  raise UserInputError(
      f"cannot tell the layout of checkpoint {resolved}: no bert/... names "
      f"(official), model/ or encoder/ objects (ours, Model Garden); first "
      f"names: {sorted(names)[:5]}")
