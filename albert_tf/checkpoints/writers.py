"""Writes canonical arrays in our, the official TF1 and Hugging Face layouts.

(keras-hub presets: keras_hub_preset_writer.write_preset.) Outputs may be on any
TensorFlow filesystem; every file is written under a temporary name and
renamed, so no half-written checkpoint appears under the final name.
"""

import json
from typing import Any, Dict, List, Optional, Sequence

from absl import logging
import numpy as np
import tensorflow as tf

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf.checkpoints import configs
from albert_tf.checkpoints import mapping
from albert_tf.checkpoints import model_variables
from albert_tf.checkpoints import name_tables
from albert_tf.checkpoints.task_models import head_tables
from albert_tf.config import AlbertConfig


def _move_into_place(tmp_dir: str, output_dir: str, names: Sequence[str],
                     last: Sequence[str] = ()) -> None:
  """Renames files from tmp_dir into output_dir (`last` ones at the end)."""
  for name in [n for n in names if n not in last] + list(last):
    file_io.rename(file_io.join(tmp_dir, name), file_io.join(output_dir, name))


def _write_checkpoint_files(output_prefix: str, write) -> List[str]:
  """Calls write(tmp_prefix), then moves the files to output_prefix.

  The files are written in a hidden folder `.<name>.tmp-<pid>` next to
  them. The `.index` file (which makes a checkpoint visible) moves last, and
  the `checkpoint` state file after it, so no half-written checkpoint
  appears under the final name.
  """
  output_dir = file_io.dirname(output_prefix) or "."
  base = file_io.basename(output_prefix)
  tmp_dir = file_io.temp_name(output_prefix)
  try:
    file_io.makedirs(tmp_dir)
  except OSError as e:
    raise UserInputError(f"--output_checkpoint={output_prefix}: cannot "
                         f"create its directory: {e}") from None
  try:
    write(file_io.join(tmp_dir, base))
    files = [f for f in file_io.listdir(tmp_dir) if f.startswith(base + ".")]
    _move_into_place(tmp_dir, output_dir, files, last=[base + ".index"])
    file_io.write_atomic(file_io.join(output_dir, "checkpoint"),
                         f'model_checkpoint_path: "{base}"\n'
                         f'all_model_checkpoint_paths: "{base}"\n')
  finally:
    file_io.rmtree(tmp_dir)
  return files


def write_official(arrays: Dict[str, np.ndarray], config: AlbertConfig,
                   output_prefix: str, head: Optional[str] = None) -> None:
  """A TF1 checkpoint with google-research/albert names: the files a
  tf.compat.v1 Saver writes (SaveV2: .index + .data-00000-of-00001),
  written eagerly (a Session would only add TensorFlow's MLIR log line).
  `head`: the task head kind `arrays` holds (head_tables), or None."""
  table = name_tables.official_table(config)
  if head:
    table += head_tables.head_table("official", head)
  tensors = mapping.map_from_ours(arrays, table)

  def write(prefix):
    names = sorted(tensors)
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names,
                      shape_and_slices=[""] * len(names),
                      tensors=[tf.constant(tensors[n]) for n in names])

  _write_checkpoint_files(output_prefix, write)


def write_huggingface(arrays: Dict[str, np.ndarray], config: AlbertConfig,
                      output: str, head: Optional[str] = None,
                      task_values: Optional[Dict[str, Any]] = None) -> str:
  """model.safetensors (+ config.json when `output` is a directory).

  Args:
    head: the task head kind `arrays` holds (head_tables), or None.
    task_values: config.json entries of that task model (architectures,
      id2label, problem_type, ...: task_writers.huggingface_task_values).

  Returns:
    The path of the .safetensors file written.
  """
  # Imported on use, as the reader's.
  from safetensors.numpy import save
  table = name_tables.huggingface_table(config)
  if head:
    table += head_tables.head_table("huggingface", head)
  tensors = mapping.map_from_ours(arrays, table)
  heads = name_tables.heads_in(arrays)
  architectures = (["AlbertForPreTraining"] if heads == {"masked_lm",
                                                        "sentence_order"}
                   else ["AlbertForMaskedLM"] if heads == {"masked_lm"}
                   else ["AlbertModel"])
  if output.endswith(".safetensors"):
    file = output
  else:
    file = file_io.join(output, "model.safetensors")
  try:
    file_io.makedirs(file_io.dirname(file))
  except OSError as e:
    raise UserInputError(f"--output_checkpoint={output}: cannot create its "
                         f"directory: {e}") from None
  file_io.write_atomic(file, save(tensors, metadata={"format": "pt"}))
  if not output.endswith(".safetensors"):
    values = configs.config_to_huggingface(config, architectures)
    values.update(task_values or {})
    file_io.write_atomic(file_io.join(output, "config.json"),
                         json.dumps(values, indent=2, sort_keys=True) + "\n")
  return file


def write_ours(arrays: Dict[str, np.ndarray], config: AlbertConfig,
               output_prefix: str, fresh_ok: Sequence[str] = ()) -> str:
  """tf.train.Checkpoint(model=AlbertPretrainer) when both heads are there,
  else tf.train.Checkpoint(encoder=AlbertEncoder).

  Args:
    arrays: canonical name -> array.
    config: the model's config.
    output_prefix: the checkpoint prefix written.
    fresh_ok: canonical name prefixes ("pooler/", "sentence_order/") that
      may be absent from `arrays`: they keep a new model's initial values,
      and the MLM head alone is enough for the pretrainer (the caller says
      so). Left empty, a missing variable is an error.

  Returns:
    The checkpoint's root name ("model" or "encoder").
  """
  # tf_keras is loaded on use (see model_variables).
  from albert_tf.models.albert_pretrainer import AlbertPretrainer
  from albert_tf.networks.albert_encoder import AlbertEncoder
  encoder = AlbertEncoder(config)
  heads = name_tables.heads_in(arrays)
  if heads == {"masked_lm", "sentence_order"} or (
      "masked_lm" in heads and "sentence_order/" in fresh_ok):
    model, root = AlbertPretrainer(encoder), "model"
  else:
    if heads:
      logging.warning("only the %s head is present: the checkpoint written "
                      "holds the encoder without it (our pretrainer has both "
                      "heads)", ", ".join(sorted(heads)))
    model, root = encoder, "encoder"
  variables = model_variables.canonical_variables(model)
  fresh = sorted(n for n in set(variables) - set(arrays)
                 if n.startswith(tuple(fresh_ok)))
  missing = sorted(set(variables) - set(arrays) - set(fresh))
  if missing:
    raise UserInputError(f"cannot write our checkpoint, missing: {missing}")
  for name, variable in variables.items():
    if name not in fresh:
      variable.assign(arrays[name])
  checkpoint = tf.train.Checkpoint(**{root: model})
  _write_checkpoint_files(output_prefix, checkpoint.write)
  return root


def write_ours_task_model(arrays: Dict[str, np.ndarray], config: AlbertConfig,
                          output_prefix: str, head: str, num_labels: int,
                          fresh_ok: Sequence[str] = ()) -> None:
  """tf.train.Checkpoint(model=<our task model of kind `head`>): the
  checkpoint of a fine-tuning run, read back by task_sources.

  Args:
    arrays: canonical name -> array, encoder, pooler and head.
    head: the task head kind (head_tables.HEAD_KINDS).
    num_labels: C of the head.
    fresh_ok: canonical name prefixes ("pooler/") that may be absent: they
      keep the new model's initial values (the caller says so).
  """
  from albert_tf.checkpoints.task_models import task_sources
  model = task_sources.build_task_model(head, config, num_labels)
  variables = model_variables.canonical_variables(model)
  missing = sorted(n for n in set(variables) - set(arrays)
                   if not n.startswith(tuple(fresh_ok)))
  if missing:
    raise UserInputError(f"cannot write our task model, missing: {missing}")
  for name, variable in variables.items():
    if name in arrays:
      variable.assign(arrays[name])
  _write_checkpoint_files(output_prefix,
                          tf.train.Checkpoint(model=model).write)
