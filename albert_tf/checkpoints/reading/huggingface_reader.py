"""Reads Hugging Face ALBERT weights from safetensors, without torch.

A `model.safetensors` file or a sharded `model.safetensors.index.json`, or
a `pytorch_model.bin` (or its shards' index) read by torch_pickle without
running any pickled code (resolved by locate), keys with or without the
`albert.` prefix. Buffers
are dropped; tensors transformers ties to others (the MLM decoder) must
equal them. A task head (head_tables: `classifier.*`, `qa_outputs.*`) is
kept under its own names for task_heads; everything else must map
(name_tables.huggingface_table). The task classes transformers builds
without a pooler (QA, token classification, masked LM) have none here.
"""

import json
from typing import Dict, Tuple

import numpy as np

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf.checkpoints import mapping
from albert_tf.checkpoints import name_tables
from albert_tf.checkpoints.task_models import task_heads
from albert_tf.config import AlbertConfig


def load_safetensors(path: str) -> Dict[str, np.ndarray]:
  """Every tensor of a .safetensors / .bin file or of the shards an index
  names."""
  # Imported on use, as every reader's own dependency.
  from safetensors import SafetensorError
  from safetensors.numpy import load
  files = [path]
  if path.endswith(".index.json"):
    try:
      weight_map = json.loads(file_io.read_text(path))["weight_map"]
    except (OSError, ValueError, KeyError) as e:
      raise UserInputError(f"bad safetensors index {path}: {e}") from e
    folder = file_io.dirname(path)
    files = [file_io.join(folder, f) for f in sorted(set(weight_map.values()))]
    absent = [f for f in files if not file_io.exists(f)]
    if absent:
      raise UserInputError(
          f"{path} names {len(absent)} shard(s) that do not exist: "
          f"{', '.join(file_io.basename(f) for f in absent)}")
  tensors = {}
  for file in files:
    if file.endswith(".bin"):
      from albert_tf.checkpoints.reading import torch_pickle
      tensors.update(torch_pickle.load_torch_state_dict(file))
      continue
    try:
      # From bytes: safetensors' own file reader knows local paths only.
      tensors.update(load(file_io.read_bytes(file)))
    except (OSError, SafetensorError, ValueError) as e:
      raise UserInputError(f"cannot read safetensors file {file}: {e}") from e
  return tensors


def read_huggingface(path: str, config: AlbertConfig
                     ) -> Tuple[Dict[str, np.ndarray], Dict[str, np.ndarray]]:
  """(canonical name -> array, the task head's arrays under their names) of
  the safetensors file or index at `path`."""
  tensors, head = task_heads.split_source(load_safetensors(path),
                                          "huggingface")
  heads = ("predictions.", "sop_classifier.")
  source = {}
  for name, array in tensors.items():
    if not name.startswith(("albert.",) + heads):
      name = "albert." + name
    source[name] = array
  for name in name_tables.HUGGINGFACE_BUFFERS:
    source.pop(name, None)
  problems = []
  for tied, target in name_tables.HUGGINGFACE_TIED.items():
    if tied in source:
      array = source.pop(tied)
      if target in source and (array.shape != source[target].shape or
                               not np.array_equal(array, source[target])):
        problems.append(f"{tied} differs from {target}, to which this model "
                        "ties it")
  if problems:
    raise mapping.misfit_error(path, "huggingface", extra=problems)
  return mapping.map_to_ours(source, name_tables.huggingface_table(config),
                             name_tables.our_shapes(config),
                             source_name=path, layout="huggingface"), head
