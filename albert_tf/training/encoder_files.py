"""The config and vocabulary that come with an encoder, for the settings a
user leaves out.

- An encoder export (--init_savedmodel): its assets, where
  tools.export_savedmodel copies them.
- A checkpoint folder (--init_checkpoint=DIR): albert_config.json and one
  tokenizer file beside the checkpoint, as tools.extend_vocabulary writes
  them (a keras-hub preset's assets/tokenizer/vocabulary.spm); also a
  Hugging Face folder's or a keras-hub preset's config.json
  (`checkpoint_config`).
- Our fine-tuning run dir or task export (--init_checkpoint=DIR): its
  albert_config.json, the vocabulary and do_lower_case of its export
  (checkpoints.task_models.source_paths).

No TensorFlow: the settings checks run before it is imported.
"""

from typing import Dict

from absl import logging

from albert_common import file_io
from albert_common import settings_fields
from albert_common.errors import UserInputError
from albert_tf.checkpoints.task_models.folder_vocabulary import vocabulary_in

CONFIG_NAME = "albert_config.json"
# The config of a Hugging Face folder or a keras-hub preset (both read by
# albert_tf.checkpoints.configs.load_albert_config).
OTHER_CONFIG_NAME = "config.json"
def config_in(folder: str, flag: str) -> Dict[str, str]:
  """{"albert_config_file": folder's albert_config.json}, or {}."""
  path = file_io.join(folder, CONFIG_NAME)
  if not (file_io.isdir(folder) and file_io.exists(path)):
    return {}
  logging.info("--albert_config_file=%s (from --%s)", path, flag)
  return {"albert_config_file": path}


def checkpoint_config(folder: str, flag: str) -> Dict[str, str]:
  """{"albert_config_file": path}: the folder's albert_config.json (ours, a
  released download, an extend_vocabulary output), else its config.json (a
  Hugging Face folder, a keras-hub preset); {} when neither, or not a
  folder."""
  found = config_in(folder, flag)
  path = file_io.join(folder, OTHER_CONFIG_NAME)
  if found or not (file_io.isdir(folder) and file_io.exists(path)):
    return found
  logging.info("--albert_config_file=%s (from --%s)", path, flag)
  return {"albert_config_file": path}


def with_config_file(params):
  """`params` (settings with `albert_config_file` and `init_checkpoint`)
  with --albert_config_file, taken from the --init_checkpoint folder when
  left out (`checkpoint_config`, logged), as run_pretraining and
  extend_vocabulary take it.

  Raises:
    UserInputError: neither gives one.
  """
  if params.albert_config_file:
    return params
  found = (checkpoint_config(params.init_checkpoint, "init_checkpoint")
           if params.init_checkpoint else {})
  if not found:
    raise UserInputError(
        "--albert_config_file is required unless --init_checkpoint is a "
        "folder holding albert_config.json or a Hugging Face / keras-hub "
        f"config.json (--init_checkpoint={params.init_checkpoint!r})")
  return settings_fields.replace(params, **found)


def _own_folder_files(params, own, user_set) -> Dict[str, object]:
  """What of `own` (source_paths.folder_files) the settings leave out
  (`user_set`: the settings the user gave; None: all, as for a library
  caller: do_lower_case is kept)."""
  found = {}
  if not (params.albert_config_file or params.init_savedmodel):
    found["albert_config_file"] = own["albert_config_file"]
  if not (params.spm_model_file or params.vocab_file):
    found.update((k, v) for k, v in own.items()
                 if k in ("spm_model_file", "vocab_file"))
  if (user_set is not None and "do_lower_case" not in user_set and
      "do_lower_case" in own and hasattr(params, "do_lower_case")):
    found["do_lower_case"] = own["do_lower_case"]
  for name, path in found.items():
    logging.info("--%s=%s (from --init_checkpoint)", name, path)
  return found


def savedmodel_vocabulary(path: str) -> Dict[str, str]:
  """The vocabulary in an encoder export's assets, as `vocabulary_in`."""
  return vocabulary_in(file_io.join(path, "assets"), "init_savedmodel")


def checkpoint_folder_files(params, user_set=None) -> Dict[str, object]:
  """What a settings object leaves out and its --init_checkpoint folder
  holds: the config when no --albert_config_file (nor --init_savedmodel)
  is given, the tokenizer when neither --spm_model_file nor --vocab_file
  is; for our task export (or a run that wrote one) also its recorded
  do_lower_case when `user_set` (the settings the user gave) lacks it.
  {} when --init_checkpoint is not a folder."""
  folder = params.init_checkpoint
  if not folder or not file_io.isdir(folder):
    return {}
  from albert_tf.checkpoints.task_models import source_paths  # no TF
  own = source_paths.folder_files(folder)
  if own is not None:
    return _own_folder_files(params, own, user_set)
  found = {}
  if not (params.albert_config_file or params.init_savedmodel):
    found.update(checkpoint_config(folder, "init_checkpoint"))
  if not (params.spm_model_file or params.vocab_file):
    found.update(vocabulary_in(folder, "init_checkpoint"))
  return found
