"""Model Garden task models over `networks.AlbertEncoder`, heads included.

What Model Garden's trainers save, `tf.train.Checkpoint(model=<task
model>, optimizer=..., global_step=...)` (the optimizer and step are
ignored), for:

  classifier  `models.BertClassifier` (sentence_prediction): with
              `use_encoder_pooler=True` the encoder's pooler feeds the
              head's Dense "logits"; with False (the task's default) the
              head pools itself ("pooler_dense", tanh on [CLS]), which is
              read as our pooler, and the encoder's pooler, unused, is left
              out (said in the log).
  span        `models.BertSpanLabeler` (SQuAD): Dense
              "predictions/transform/logits" [H, 2] on the sequence output.

The checkpoint's keys are object paths, so each candidate model is built
(tiny cost) and compared key by key with object_readers' strict check; the
one that fits is restored and its variables renamed (name_tables.
garden_table for the encoder, keras_tables for the heads). The head
is returned under Model Garden's variable names for task_heads.fit_head;
Model Garden keeps no label names (a labels.txt beside the checkpoint, or
--label_names, names them).
"""

from typing import Dict, List, Tuple

from absl import logging
import numpy as np
import tensorflow as tf

from albert_tf.checkpoints import locate
from albert_tf.checkpoints import mapping
from albert_tf.checkpoints import name_tables
from albert_tf.checkpoints.reading import object_readers
from albert_tf.checkpoints.task_models import head_tables
from albert_tf.checkpoints.task_models import keras_tables
from albert_tf.config import AlbertConfig

Arrays = Dict[str, np.ndarray]


def _out_width(keys: Dict[str, List[int]], root) -> Dict[int, int]:
  """{id(kernel variable): stored output width} for `root`'s 2-D kernels
  whose key the checkpoint has."""
  return {id(v): int(keys[k][-1])
          for k, v in object_readers.checkpoint_keys(root).items()
          if k in keys and len(keys[k]) == 2}


def _candidates(config: AlbertConfig, keys: Dict[str, List[int]]):
  """(description, model) of each Model Garden task model the checkpoint
  may hold, with the classifier's label count read from it."""
  from official.nlp.modeling import models
  for pooler in (True, False):
    probe = models.BertClassifier(object_readers.build_garden_encoder(config),
                                  num_classes=1, use_encoder_pooler=pooler)
    width = _out_width(keys, tf.train.Checkpoint(model=probe)).get(
        id(probe.classifier.out_proj.kernel))
    if width:
      yield (f"BertClassifier(use_encoder_pooler={pooler})",
             models.BertClassifier(object_readers.build_garden_encoder(config),
                                   num_classes=width,
                                   use_encoder_pooler=pooler))
  yield ("BertSpanLabeler",
         models.BertSpanLabeler(object_readers.build_garden_encoder(config)))


def read_garden(prefix: str, config: AlbertConfig):
  """The Model Garden checkpoint at `prefix`: an encoder alone
  (`encoder/...`, object_readers.read_garden: canonical arrays) or a task
  model (`model/...`: read_garden_task's (arrays, head))."""
  keys = locate.list_tf_checkpoint(prefix)
  if any(k.startswith("model/") for k in keys):
    return read_garden_task(prefix, config)
  return object_readers.read_garden(prefix, config)


def read_garden_task(prefix: str, config: AlbertConfig) -> Tuple[Arrays,
                                                                 Arrays]:
  """(canonical encoder arrays, the head under Model Garden's names) of the
  Model Garden task model checkpoint at `prefix`.

  Raises:
    UserInputError: no candidate fits; the misfits of the closest one
      (fewest problems) are listed.
  """
  keys = locate.list_tf_checkpoint(prefix)
  tried = []
  for what, model in _candidates(config, keys):
    problems = object_readers.object_mismatches(
        keys, "model", tf.train.Checkpoint(model=model))
    if not any(problems):
      tf.train.Checkpoint(model=model).read(prefix).expect_partial()
      return _split(model, what, prefix, config)
    tried.append((sum(map(len, problems)), what, problems))
  _, what, problems = min(tried, key=lambda t: t[0])
  raise mapping.misfit_error(prefix, f"Model Garden (model/, closest: {what})",
                             *problems)


def _split(model, what: str, prefix: str, config: AlbertConfig
           ) -> Tuple[Arrays, Arrays]:
  """The restored task model's arrays: encoder (canonical), head (theirs)."""
  source = {v.name[:-2]: v.numpy() for v in model.weights}
  head_names = head_tables.source_names("garden")
  head = {n: a for n, a in source.items() if n in head_names}
  encoder = {n: a for n, a in source.items() if n not in head_names}
  pooler = {e.theirs: e for e in keras_tables.GARDEN_HEAD_POOLER}
  if any(n in pooler for n in encoder):
    # The head pools: its pooler_dense is ours; the encoder's is unused.
    for name in keras_tables.GARDEN_ENCODER_POOLER:
      encoder.pop(name)
    for theirs, entry in pooler.items():
      encoder[entry.ours.replace("pooler/", "pooler_transform/")] = (
          encoder.pop(theirs))
    logging.info("%s: %s pools in its head (sentence_prediction/"
                 "pooler_dense, read as our pooler); the encoder's own "
                 "pooler_transform is unused there and left out", prefix,
                 what)
  arrays = mapping.map_to_ours(encoder, name_tables.garden_table(config),
                               name_tables.our_shapes(config),
                               source_name=prefix, layout="garden")
  return arrays, head
