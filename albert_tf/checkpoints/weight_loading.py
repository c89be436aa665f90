"""Loads a checkpoint of any supported layout into one of our Keras models.

Every encoder variable is loaded; pretraining heads are loaded when both the
model and the checkpoint have them; whatever is left (a task head, a head
the checkpoint lacks) is reported in the `LoadReport`, never silently.
"""

import dataclasses
from typing import List

from absl import logging

from albert_tf.checkpoints import head_tables
from albert_tf.checkpoints import model_variables
from albert_tf.checkpoints import name_tables
from albert_tf.checkpoints import readers


@dataclasses.dataclass
class LoadReport:
  """What `load_weights_into` did.

  Attributes:
    format, path: the source.
    loaded: canonical names assigned.
    not_in_checkpoint: canonical names of the model's head variables the
      checkpoint lacks (left as initialised).
    unused: canonical names in the checkpoint the model has no place for
      (pretraining heads when loading into a bare encoder).
    other_variables: names of model variables outside the encoder, the
      pretraining heads and our task heads, left as initialised.
    fresh_head: canonical names of the model's task head (head_tables)
      left as initialised (the checkpoint has no head for it).
  """
  format: str
  path: str
  loaded: List[str]
  not_in_checkpoint: List[str]
  unused: List[str]
  other_variables: List[str]
  fresh_head: List[str] = dataclasses.field(default_factory=list)

  def summary(self) -> str:
    parts = [f"loaded {len(self.loaded)} variables from {self.path} "
             f"({self.format} layout)"]
    if self.not_in_checkpoint:
      parts.append(f"not in the checkpoint, left as initialised: "
                   f"{', '.join(self.not_in_checkpoint)}")
    if self.unused:
      parts.append(f"in the checkpoint but not in the model: "
                   f"{', '.join(self.unused)}")
    if self.fresh_head:
      parts.append(f"a fresh task head: {', '.join(self.fresh_head)}")
    if self.other_variables:
      parts.append(f"newly initialised (not part of ALBERT): "
                   f"{', '.join(self.other_variables)}")
    return "; ".join(parts)


def load_weights_into(model, path: str, input_format: str = "auto",
                      check_config: bool = True) -> LoadReport:
  """Loads a checkpoint of any supported layout into `model`.

  Args:
    model: an AlbertEncoder, an AlbertPretrainer, or a tf_keras model holding
      an AlbertEncoder (e.g. a fine-tuning model). Every encoder variable is
      loaded; pretraining heads are loaded when both model and checkpoint have
      them; anything else (task heads) is left as initialised and reported.
    path: checkpoint prefix, .safetensors file or directory (see
      converter's module doc).
    input_format: one of INPUT_FORMATS; "auto" detects it from the contents.
    check_config: for Hugging Face folders and keras-hub presets with a
      config.json, require that its architecture equals the model's config.

  Returns:
    A LoadReport (also logged).

  Raises:
    UserInputError: see `readers.read_weights`; also a config.json that
      disagrees with the model's config.

  Example: an encoder warm-started from a pretraining checkpoint; the
  heads it has no place for are reported, not loaded silently.

  >>> import os, tempfile
  >>> import numpy as np
  >>> import tensorflow as tf
  >>> from albert_tf import AlbertConfig, AlbertEncoder, AlbertPretrainer
  >>> from albert_tf import load_weights_into
  >>> config = AlbertConfig(vocab_size=100, embedding_size=16, hidden_size=32,
  ...                       num_hidden_layers=2, num_attention_heads=2,
  ...                       intermediate_size=64, max_position_embeddings=8)
  >>> pretrainer = AlbertPretrainer(AlbertEncoder(config))
  >>> prefix = tf.train.Checkpoint(model=pretrainer).write(
  ...     os.path.join(tempfile.mkdtemp(), "ckpt"))
  >>> encoder = AlbertEncoder(config)
  >>> report = load_weights_into(encoder, prefix)
  >>> report.format, len(report.loaded)
  ('ours', 25)
  >>> sorted({name.split("/")[0] for name in report.unused})
  ['masked_lm', 'sentence_order']
  >>> np.array_equal(encoder.get_embedding_table(),
  ...                pretrainer.encoder.get_embedding_table())
  True

  A checkpoint of another architecture is refused, listing what differs:

  >>> wider = AlbertConfig.from_dict(dict(config.to_dict(), hidden_size=64))
  >>> load_weights_into(AlbertEncoder(wider), prefix)  # doctest: +ELLIPSIS
  Traceback (most recent call last):
  ...
  albert_common.errors.UserInputError: ...
  """
  config = model_variables.encoder_config(model)
  weights = readers.read_weights(path, config, input_format)
  if check_config:
    weights.check_config(config)
  report = assign_weights(model, weights)
  if report.not_in_checkpoint:
    logging.warning("%s", report.summary())
  else:
    logging.info("%s", report.summary())
  return report


def assign_weights(model, weights: readers.Weights) -> LoadReport:
  """Assigns weights already read (readers.read_weights, for `model`'s
  config) to `model`'s variables, as load_weights_into; logs nothing."""
  targets = model_variables.canonical_variables(model)
  loaded, not_in_checkpoint, fresh_head = [], [], []
  for name, variable in targets.items():
    if name in weights.arrays:
      variable.assign(weights.arrays[name])
      loaded.append(name)
    elif head_tables.is_task_head(name):
      fresh_head.append(name)
    elif name_tables.is_head(name):
      not_in_checkpoint.append(name)
    else:  # read_weights guarantees a complete encoder
      raise AssertionError(f"encoder variable {name} not read")
  target_ids = {id(v) for v in targets.values()}
  others = [v.name for v in model.weights if id(v) not in target_ids]
  return LoadReport(format=weights.format, path=weights.path, loaded=loaded,
                    not_in_checkpoint=not_in_checkpoint,
                    unused=sorted(set(weights.arrays) - set(targets)),
                    other_variables=others, fresh_head=fresh_head)
