"""Reads a PyTorch `pytorch_model.bin` state dict without torch, safely.

`torch.save` writes a zip: `<name>/data.pkl` (a pickle of the state dict
whose tensors point at storages) and `<name>/data/<key>` (each storage's
raw little-endian bytes). A pickle may name any Python callable, which
unpickling would call: the unpickler here resolves only the few names a
state dict of tensors needs (as `torch.load(weights_only=True)` does) and
refuses every other one in one line, before anything runs.
"""

import io
import pickle
from typing import Dict
import zipfile

import numpy as np

from albert_common import file_io
from albert_common.errors import UserInputError

# torch storage class -> numpy dtype ("bfloat16": widened to float32).
_STORAGES = {"FloatStorage": np.float32, "DoubleStorage": np.float64,
             "HalfStorage": np.float16, "BFloat16Storage": "bfloat16",
             "LongStorage": np.int64, "IntStorage": np.int32,
             "ShortStorage": np.int16, "CharStorage": np.int8,
             "ByteStorage": np.uint8, "BoolStorage": np.bool_}


class _Storage:
  def __init__(self, dtype):
    self.dtype = dtype


def _rebuild_tensor(storage, offset, size, stride, *unused):
  """torch._utils._rebuild_tensor_v2: a view of a storage's flat array."""
  del unused  # requires_grad, backward hooks, metadata
  array = storage
  if not size:
    return np.array(array[offset])
  itemsize = array.dtype.itemsize
  return np.lib.stride_tricks.as_strided(
      array[offset:], shape=tuple(size),
      strides=tuple(s * itemsize for s in stride)).copy()


class _SafeUnpickler(pickle.Unpickler):
  """Resolves only a tensor state dict's globals; loads storages from the
  archive."""

  def __init__(self, data: bytes, archive: zipfile.ZipFile, prefix: str,
               path: str):
    super().__init__(io.BytesIO(data))
    self._archive, self._prefix, self._path = archive, prefix, path

  def find_class(self, module, name):
    if module == "collections" and name == "OrderedDict":
      import collections
      return collections.OrderedDict
    if module == "torch._utils" and name in ("_rebuild_tensor_v2",
                                              "_rebuild_tensor"):
      return _rebuild_tensor
    if module == "torch" and name in _STORAGES:
      return _Storage(_STORAGES[name])
    raise UserInputError(
        f"{self._path} is a pickle that would call {module}.{name}; only "
        "state dicts of tensors are read (as torch.load(weights_only=True)"
        "); convert it where you trust it, e.g. save_pretrained(dir, "
        "safe_serialization=True)")

  def persistent_load(self, pid):
    # ("storage", storage type, key, location, numel)
    if not (isinstance(pid, tuple) and pid and pid[0] == "storage" and
            isinstance(pid[1], _Storage)):
      raise UserInputError(f"{self._path}: unsupported storage {pid!r:.80}")
    raw = self._archive.read(f"{self._prefix}data/{pid[2]}")
    if pid[1].dtype == "bfloat16":  # the high half of a float32
      bits = np.frombuffer(raw, "<u2").astype(np.uint32) << 16
      return bits.view(np.float32)
    return np.frombuffer(raw, np.dtype(pid[1].dtype).newbyteorder("<"))


def load_torch_state_dict(path: str) -> Dict[str, np.ndarray]:
  """name -> array of a torch.save zip at `path` (any filesystem).

  Raises:
    UserInputError: not a torch zip (the legacy pre-1.6 format included),
      or a pickle naming anything but tensors.
  """
  try:
    archive = zipfile.ZipFile(io.BytesIO(file_io.read_bytes(path)))
  except (OSError, zipfile.BadZipFile) as e:
    raise UserInputError(
        f"cannot read {path} as a PyTorch zip checkpoint (torch >= 1.6 "
        f"torch.save): {e}") from None
  pickles = [n for n in archive.namelist() if n.endswith("/data.pkl")]
  if len(pickles) != 1:
    raise UserInputError(f"{path} holds no data.pkl: not a torch.save file")
  prefix = pickles[0][:-len("data.pkl")]
  try:
    state = _SafeUnpickler(archive.read(pickles[0]), archive, prefix,
                           path).load()
  except (pickle.UnpicklingError, EOFError, KeyError, ValueError) as e:
    raise UserInputError(f"cannot unpickle {path}: {e}") from None
  if not isinstance(state, dict) or not all(
      isinstance(v, np.ndarray) for v in state.values()):
    raise UserInputError(f"{path} is not a state dict of tensors")
  return dict(state)
