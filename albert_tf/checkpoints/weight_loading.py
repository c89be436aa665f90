"""Loads a checkpoint of any supported layout into one of our Keras models.

Every encoder variable is loaded; pretraining heads are loaded when both the
model and the checkpoint have them; whatever is left (a task head, a head
the checkpoint lacks) is reported in the `LoadReport`, never silently.
"""

import dataclasses
from typing import List, Optional

from absl import logging

from albert_tf.checkpoints import model_variables
from albert_tf.checkpoints import name_tables
from albert_tf.checkpoints.reading import readers
from albert_tf.checkpoints.task_models import head_tables
from albert_tf.checkpoints.task_models import task_heads
from albert_tf.checkpoints.task_models.task_heads import HeadRequest


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
  head_from: List[str] = dataclasses.field(default_factory=list)
  head_kind: Optional[str] = None
  fresh_pooler: bool = False

  def restored(self) -> str:
    """What was restored, in words: encoder, pooler, head (from which of
    the source's variables)."""
    parts = ["encoder"]
    parts.append("a fresh pooler (the source has none)" if self.fresh_pooler
                 else "pooler")
    if self.head_from:
      parts.append(f"{self.head_kind} head from "
                   f"{', '.join(self.head_from)}")
    elif self.fresh_head:
      parts.append(f"a fresh {self.head_kind} head")
    return ", ".join(parts)

  def summary(self) -> str:
    parts = [f"loaded {len(self.loaded)} variables from {self.path} "
             f"({self.format} layout): {self.restored()}"]
    if self.not_in_checkpoint:
      parts.append(f"not in the checkpoint, left as initialised: "
                   f"{', '.join(self.not_in_checkpoint)}")
    if self.unused:
      parts.append(f"in the checkpoint but not in the model: "
                   f"{', '.join(self.unused)}")
    if self.other_variables:
      parts.append(f"newly initialised (not part of ALBERT): "
                   f"{', '.join(self.other_variables)}")
    return "; ".join(parts)


def load_weights_into(model, path: str, input_format: str = "auto",
                      check_config: bool = True,
                      head: Optional[HeadRequest] = None) -> LoadReport:
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
    head: for a task model (AlbertClassifier, ...) and a source with a task
      head (a fine-tuned Hugging Face / official checkpoint): whether to
      restore it and the tool's label names (task_heads.fit_head's rules).

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
  return assign_and_log(model, weights, head)


def assign_and_log(model, weights: readers.Weights,
                   head: Optional[HeadRequest] = None) -> LoadReport:
  """assign_weights, then the report logged (one line; one warning more
  for a fresh pooler under a head that reads it)."""
  path = weights.path
  report = assign_weights(model, weights, head)
  if report.not_in_checkpoint:
    logging.warning("%s", report.summary())
  else:
    logging.info("%s", report.summary())
  if report.fresh_pooler and report.head_kind in _POOLED_HEADS:
    logging.warning("%s has no trained pooler (transformers' AlbertForMasked"
                    "LM, AlbertForQuestionAnswering and AlbertForToken"
                    "Classification have none; a conversion of one to ours "
                    "records it in conversion.json): the %s head starts on "
                    "a fresh pooler", path, report.head_kind)
  return report


# The task heads that read the pooled output.
_POOLED_HEADS = ("classifier", "multiple_choice")


def assign_weights(model, weights: readers.Weights,
                   head: Optional[HeadRequest] = None) -> LoadReport:
  """Assigns weights already read (readers.read_weights, for `model`'s
  config) to `model`'s variables, as load_weights_into; logs nothing but
  a fresh head chosen by --init_head=false.

  Raises:
    UserInputError: a source task head that does not fit the model's
      (task_heads.fit_head).
  """
  head = head or HeadRequest()
  targets = model_variables.canonical_variables(model)
  kind, head_variables = model_variables.task_head(model)
  arrays, head_from = dict(weights.arrays), []
  if kind and weights.head is not None:
    if head.init_head:
      num_labels = int(head_variables[f"{kind}/dense/kernel"].shape[-1]
                       if kind != "squad_v2" else 1)
      config = model_variables.encoder_config(model)
      arrays.update(task_heads.fit_head(weights.head, kind,
                                        config.hidden_size, num_labels,
                                        head))
      head_from = sorted(weights.head.arrays)
    else:
      logging.info("--init_head=false: a fresh %s head on the encoder of %s "
                   "(its %s is not restored)", kind, weights.path,
                   ", ".join(sorted(weights.head.arrays)))
  loaded, not_in_checkpoint, fresh_head, fresh_pooler = [], [], [], False
  for name, variable in targets.items():
    if name in arrays:
      variable.assign(arrays[name])
      loaded.append(name)
    elif head_tables.is_task_head(name):
      fresh_head.append(name)
    elif name_tables.is_head(name):
      not_in_checkpoint.append(name)
    elif name.startswith("pooler/"):  # a whole pooler absent (mapping)
      fresh_pooler = True
    else:  # read_weights guarantees a complete encoder
      raise AssertionError(f"encoder variable {name} not read")
  target_ids = {id(v) for v in targets.values()}
  others = [v.name for v in model.weights if id(v) not in target_ids]
  unused = sorted(set(weights.arrays) - set(targets))
  if weights.head is not None and not head_from:
    unused += sorted(weights.head.arrays)
  return LoadReport(format=weights.format, path=weights.path, loaded=loaded,
                    not_in_checkpoint=not_in_checkpoint, unused=unused,
                    other_variables=others, fresh_head=fresh_head,
                    head_from=head_from, head_kind=kind,
                    fresh_pooler=fresh_pooler)
