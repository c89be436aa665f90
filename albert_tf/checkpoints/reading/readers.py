"""Reads a checkpoint of any supported layout into canonical arrays.

`read_weights` picks the layout (given, or detected by locate and
keras_hub_preset) and calls its reader: official_reader,
huggingface_reader, object_readers (ours), task_models.task_sources (our
fine-tuning run dirs and exports, heads included), task_models.garden
(Model Garden encoders and task models) or keras_hub_preset.
Every reader is strict (see mapping) and returns float32 arrays under the
canonical names of name_tables.
"""

import dataclasses
from typing import Dict, Optional

from absl import logging
import numpy as np

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_common.run_constants import INPUT_FORMATS
from albert_tf.checkpoints import configs
from albert_tf.checkpoints import locate
from albert_tf.checkpoints.keras_hub_presets import preset as keras_hub_preset
from albert_tf.checkpoints.reading import huggingface_reader
from albert_tf.checkpoints.reading import object_readers
from albert_tf.checkpoints.reading import official_reader
from albert_tf.checkpoints.task_models import garden as garden_tasks
from albert_tf.checkpoints.task_models import head_tables
from albert_tf.checkpoints.task_models import task_heads
from albert_tf.checkpoints.task_models import task_sources
from albert_tf.config import AlbertConfig

_READERS = {"official": official_reader.read_official,
            "huggingface": huggingface_reader.read_huggingface,
            "ours": object_readers.read_ours,
            "garden": garden_tasks.read_garden}


@dataclasses.dataclass
class Weights:
  """Weights in our canonical names (see name_tables), as float32 arrays.

  Attributes:
    arrays: canonical name -> np.ndarray in our layout.
    format: the layout they were read from.
    path: the resolved file or prefix they were read from.
    config: the config stored with them (a Hugging Face folder's or a
      keras-hub preset's config.json), else None.
    preset: what else a keras-hub preset holds (its tokenizer), else None.
    head: a fine-tuned source's task head (task_heads.SourceHead) under its
      own names, else None.
  """
  arrays: Dict[str, np.ndarray]
  format: str
  path: str
  config: Optional[AlbertConfig] = None
  preset: Optional["keras_hub_preset.PresetContents"] = None
  head: Optional[task_heads.SourceHead] = None

  def check_config(self, config: AlbertConfig) -> None:
    """Requires the stored config, if any, to compute what `config` does.

    Raises:
      UserInputError: naming every architecture field that differs.
    """
    if self.config is None:
      return
    differences = configs.architecture_differences(self.config, config)
    if differences:
      raise UserInputError(
          f"config.json next to {self.path} disagrees with the model's "
          "config: " + ", ".join(f"{k}: checkpoint {a!r}, model {b!r}"
                                 for k, a, b in differences))


def read_weights(path: str, config: AlbertConfig,
                 input_format: str = "auto") -> Weights:
  """Reads a checkpoint of any supported layout into canonical arrays.

  Args:
    path: checkpoint prefix, .safetensors file, or a directory.
    config: the model's AlbertConfig (shapes and the name table follow it).
    input_format: one of INPUT_FORMATS.

  Raises:
    UserInputError: missing or unreadable input, unknown layout, or any
      unmatched name / missing variable / shape mismatch (all listed).
  """
  if input_format not in INPUT_FORMATS:
    raise UserInputError(f"input format must be one of {INPUT_FORMATS}, got "
                         f"{input_format!r}")
  if input_format == "keras_hub" or (input_format == "auto" and
                                     keras_hub_preset.is_preset(path)):
    contents = keras_hub_preset.read_preset(path, config)
    head = None
    if contents.head:  # an AlbertTextClassifier's
      head = task_heads.SourceHead(layout="keras_hub", arrays=contents.head,
                                   where=path, architecture=contents.task,
                                   labels=contents.labels)
    return Weights(arrays=contents.arrays, format="keras_hub", path=path,
                   config=contents.config, preset=contents, head=head)
  if input_format in ("auto", "ours"):
    ours = _our_task_model(path, config)
    if ours is not None:
      return ours
  kind, resolved = locate.resolve_path(path)
  layout = (locate.detect_format(path) if input_format == "auto"
            else input_format)
  if (layout == "huggingface") != (kind in ("safetensors", "torch")):
    raise UserInputError(f"{path} is not a {layout} checkpoint")
  stored_config, info = None, {}
  if layout == "huggingface":
    config_file = file_io.join(file_io.dirname(resolved), "config.json")
    if file_io.exists(config_file):
      stored_config = configs.load_albert_config(config_file)
      info = task_heads.huggingface_info(config_file)
  arrays = _READERS[layout](resolved, config)
  head = None
  if isinstance(arrays, tuple):  # the layouts a task head is read from
    arrays, head_arrays = arrays
    if layout in ("official", "garden"):  # names only in a labels.txt
      info = dict(labels=task_heads.official_labels(resolved))
    if head_arrays:
      head = task_heads.SourceHead(layout=layout, arrays=head_arrays,
                                   where=path, **info)
  # What was loaded or converted is reported once, by the caller.
  logging.debug("read %d variables from %s (%s layout)", len(arrays),
                resolved, layout)
  return Weights(arrays=arrays, format=layout, path=resolved,
                 config=stored_config, head=head)


def _our_task_model(path: str, config: AlbertConfig) -> Optional[Weights]:
  """Our fine-tuning run dir, a checkpoint in one, or our task export at
  `path`, read with its head (task_sources: head kind, labels.json), or
  None when `path` is none of them or holds no task head of ours (a
  pretraining run: read as an encoder)."""
  paths = task_sources.find_source(path)
  if paths is None or (paths.kind == "run" and
                       locate.detect_format(paths.prefix) != "ours"):
    return None  # a Model Garden task model beside a config has model/ keys
  source = task_sources.read_task_source(paths, config)
  if source is None:
    return None
  if source.note:
    logging.warning("%s: %s", path, source.note)
  # A part the conversion made new is not the source's: read as absent
  # (a fresh pooler, said by weight_loading).
  new = tuple(f"{part}/" for part in source.new_parts)
  arrays = {n: a for n, a in source.arrays.items()
            if not head_tables.is_task_head(n) and not n.startswith(new)}
  head = task_heads.SourceHead(
      layout="ours", where=path,
      arrays={n: a for n, a in source.arrays.items()
              if head_tables.is_task_head(n)},
      labels=list(source.labels) if source.labels else None,
      problem_type=source.problem_type, threshold=source.threshold)
  # read_task_source checked the run's config against `config`.
  return Weights(arrays=arrays, format="ours", path=paths.prefix, head=head)
