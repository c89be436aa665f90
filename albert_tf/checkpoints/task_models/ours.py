"""Our fine-tuned classifiers as a conversion source, head included.

A fine-tuning run of ours is read with its head and label names (the
encoder-only reading of any checkpoint is object_readers.read_ours):

  run directory   (run_classifier --output_dir) albert_config.json,
                  labels.json (own data) and the best dev checkpoint
                  (DIR/best/ckpt-*), else the latest DIR/ckpt-*
  checkpoint      a ckpt-N prefix of such a run (its folder's, or for
                  best/ckpt-N the run's, albert_config.json, labels.json)
  export          (run_classifier --export_dir) saved_model.pb, its assets
                  albert_config.json, labels.json or labels.txt, the
                  SentencePiece model, and its variables (the serving
                  module's `model` is the classifier)

Every variable of the classifier must be in the checkpoint with its shape
(object_readers' strict comparison); the number of labels is the stored
head's.
"""

import dataclasses
from typing import Dict, List, Optional, Tuple

import numpy as np

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf.config import AlbertConfig

# TensorFlow and the readers built on it are imported where used: the
# tools ask `companions` for their defaults before any check has run.

BEST_DIR = "best"  # the fine-tuning runner's best dev checkpoint folder
_REGRESSION = "<regression>"  # an export's labels.txt of a regression head


@dataclasses.dataclass
class OurTaskModel:
  """A classifier of ours, read.

  Attributes:
    arrays: canonical name -> array, the encoder and the head
      (classifier/dense/...).
    prefix: the checkpoint read.
    labels: label names in the head's order, or None (regression, or a run
      that keeps none: GLUE runs name theirs by task).
    folder: where its albert_config.json and vocabulary would be.
    vocabulary_file: an export's SentencePiece model, else "".
  """
  arrays: Dict[str, np.ndarray]
  prefix: str
  labels: Optional[List[str]]
  folder: str
  vocabulary_file: str = ""


def _latest(folder: str) -> str:
  """The newest ckpt-<step> prefix in `folder`, or ""."""
  if not file_io.isdir(folder):
    return ""
  steps = [int(n[5:-6]) for n in file_io.listdir(folder)
           if n.startswith("ckpt-") and n.endswith(".index")
           and n[5:-6].isdigit()]
  return file_io.join(folder, f"ckpt-{max(steps)}") if steps else ""


def locate_run(path: str) -> Optional[Tuple[str, str, bool]]:
  """(checkpoint prefix, folder of its companions, is an export) of a run
  directory, export or ckpt-N prefix of ours; None for anything else."""
  if file_io.isdir(path):
    if file_io.exists(file_io.join(path, "saved_model.pb")):
      return (file_io.join(path, "variables", "variables"),
              file_io.join(path, "assets"), True)
    prefix = _latest(file_io.join(path, BEST_DIR)) or _latest(path)
    return (prefix, path, False) if prefix else None
  name = file_io.basename(path)
  if name.startswith("ckpt-") and file_io.exists(path + ".index"):
    folder = file_io.dirname(path)
    if file_io.basename(folder) == BEST_DIR:
      folder = file_io.dirname(folder)
    return path, folder, False
  return None


def companions(path: str) -> Tuple[str, str]:
  """(albert_config.json, an export's SentencePiece model) of our run
  directory, ckpt-N prefix or export at `path`; "" for what is not there.
  Reads no weights (the tools' defaults for --albert_config_file and
  --spm_model_file)."""
  found = locate_run(path)
  if found is None:
    return "", ""
  _, folder, export = found
  config_file = file_io.join(folder, "albert_config.json")
  vocabulary = ""
  if export and file_io.isdir(folder):
    models = sorted(n for n in file_io.listdir(folder) if n.endswith(".model"))
    vocabulary = file_io.join(folder, models[0]) if models else ""
  return (config_file if file_io.exists(config_file) else ""), vocabulary


def _classifier(config: AlbertConfig, num_classes: int):
  from albert_tf.models.albert_classifier import AlbertClassifier
  from albert_tf.networks.albert_encoder import AlbertEncoder
  return AlbertClassifier(AlbertEncoder(config), num_classes)


def _head_width(keys: Dict[str, List[int]], config: AlbertConfig
                ) -> Optional[int]:
  """The stored classifier head's number of outputs, None if the checkpoint
  holds no classifier of ours under model/."""
  import tensorflow as tf

  from albert_tf.checkpoints import object_readers
  probe = _classifier(config, 1)
  kernel = probe.classifier.dense.kernel
  for key, variable in object_readers.checkpoint_keys(
      tf.train.Checkpoint(model=probe)).items():
    if variable is kernel and key in keys and len(keys[key]) == 2:
      return int(keys[key][-1])
  return None


def read_our_classifier(path: str, config: AlbertConfig
                        ) -> Optional[OurTaskModel]:
  """Our classifier at `path` (a run directory, ckpt-N prefix or export),
  head and labels included; None when `path` is none of those or holds no
  classifier of ours (its encoder is then read as any checkpoint).

  Raises:
    UserInputError: a classifier checkpoint that does not fit `config`
      (every misfit listed, object_readers).
  """
  import tensorflow as tf

  from albert_tf.checkpoints import locate
  from albert_tf.checkpoints import mapping
  from albert_tf.checkpoints import model_variables
  from albert_tf.checkpoints import object_readers
  found = locate_run(path)
  if found is None:
    return None
  prefix, folder, export = found
  if not export and locate.detect_format(prefix) != "ours":
    return None  # a Model Garden task model has model/... keys too
  keys = locate.list_tf_checkpoint(prefix)
  if export:
    model = _read_export(prefix, keys, config)
  else:
    width = _head_width(keys, config)
    if width is None:
      return None
    model = _classifier(config, width)
    problems = object_readers.object_mismatches(
        keys, "model", tf.train.Checkpoint(model=model))
    if any(problems):
      raise mapping.misfit_error(prefix, "ours (a classifier)", *problems)
    tf.train.Checkpoint(model=model).read(prefix).expect_partial()
  return OurTaskModel(arrays=model_variables.canonical_arrays(model),
                      prefix=prefix, labels=_labels(folder), folder=folder,
                      vocabulary_file=companions(path)[1])


def _read_export(prefix: str, keys: Dict[str, List[int]],
                 config: AlbertConfig):
  """The classifier in an export's variables. The serving module saves the
  model's variables as the list `model/variables/<i>` (its object graph is
  the serving one); the model is restored through that graph, then every
  listed variable must equal the model's i-th, so that nothing is left
  unrestored or matched to another variable.

  Raises:
    UserInputError: not a classifier export of `config`'s architecture.
  """
  import tensorflow as tf

  from albert_tf.checkpoints import locate
  listed = sorted((int(k.split("/")[2]), k) for k in keys
                  if k.startswith("model/variables/"))
  probe = _classifier(config, 1)
  index = next(i for i, v in enumerate(probe.variables)
               if v is probe.classifier.dense.kernel)
  shapes = [keys[k] for _, k in listed]
  if len(shapes) != len(probe.variables) or len(shapes[index]) != 2:
    raise UserInputError(
        f"{prefix}: an export of {len(shapes)} variables, not a classifier "
        f"of this config ({len(probe.variables)}; check "
        "--albert_config_file)")
  model = _classifier(config, int(shapes[index][-1]))
  tf.train.Checkpoint(model=model).read(prefix).expect_partial()
  reader = locate.checkpoint_reader(prefix)
  differing = [v.name for (_, key), v in zip(listed, model.variables)
               if list(keys[key]) != v.shape.as_list() or
               not np.array_equal(reader.get_tensor(key), v.numpy())]
  if differing:
    raise UserInputError(f"{prefix}: the export's variables do not restore "
                         f"into a classifier of this config: {differing}")
  return model


def _labels(folder: str) -> Optional[List[str]]:
  """labels.json's names (own data), else labels.txt's (an export); None
  for regression or when neither exists."""
  json_file = file_io.join(folder, "labels.json")  # data_pipeline's
  if file_io.exists(json_file):  # label_list; {"task_type", "labels"}
    names = file_io.read_json_object(json_file, "label list").get("labels")
    return [str(n) for n in names] if names else None
  text_file = file_io.join(folder, "labels.txt")
  if file_io.exists(text_file):
    names = [n for n in file_io.read_text(text_file).splitlines() if n]
    return None if names == [_REGRESSION] else names
  return None
