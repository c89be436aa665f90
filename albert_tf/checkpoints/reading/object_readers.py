"""Reads object-graph checkpoints: ours and Model Garden's encoder.

ours: `tf.train.Checkpoint(model=AlbertPretrainer)` (optionally with an
  optimizer, step, ... under other names, which are ignored), a model that
  holds our encoder as `.encoder` (its encoder is read), or
  `tf.train.Checkpoint(encoder=AlbertEncoder)`.
garden: `tf.train.Checkpoint(encoder=official.nlp.modeling.networks.
  AlbertEncoder)`, as Model Garden's tf2_albert_encoder_checkpoint_converter
  writes it (encoder only; name_tables.garden_table). (Model Garden task
  models: task_models.garden.)

Before anything is restored, the checkpoint's keys are compared with the
keys the model would save: every unmatched key, missing variable and shape
mismatch is reported together.
"""

from typing import Dict, List

from absl import logging
import numpy as np
import tensorflow as tf

from albert_tf.checkpoints import locate
from albert_tf.checkpoints import mapping
from albert_tf.checkpoints import model_variables
from albert_tf.checkpoints import name_tables
from albert_tf.config import AlbertConfig

# Keras models (ours: tf_keras; Model Garden's) are imported where used, so
# that importing the converter loads neither.


def checkpoint_keys(root: tf.train.Checkpoint) -> Dict[str, tf.Variable]:
  """The checkpoint key each variable under `root` is saved as."""
  from tensorflow.python.checkpoint import graph_view
  from tensorflow.python.trackable import trackable_utils
  objects, paths = graph_view.ObjectGraphView(root).breadth_first_traversal()
  return {trackable_utils.object_path_to_string(paths[o]) +
          "/.ATTRIBUTES/VARIABLE_VALUE": o
          for o in objects if isinstance(o, tf.Variable)}


def _is_object_weight(key: str, root_name: str) -> bool:
  return (key.startswith(root_name + "/") and ".OPTIMIZER_SLOT" not in key
          and key.endswith("/.ATTRIBUTES/VARIABLE_VALUE")
          and not _is_rng_state(key))


def _is_rng_state(key: str) -> bool:
  """A dropout layer's random-generator state: a model with dropout has it,
  one without has none; it is no weight (a source trained without dropout
  may be continued with it, and the other way round)."""
  return "/rng/_state_var/" in key


def object_mismatches(keys: Dict[str, List[int]], root_name: str,
                      root: tf.train.Checkpoint):
  """(unmatched, missing, mismatched) between a checkpoint's keys (name ->
  shape) and the objects under `root` (dropout RNG states aside)."""
  expected = {k: v for k, v in checkpoint_keys(root).items()
              if not _is_rng_state(k)}
  present = {k: s for k, s in keys.items() if _is_object_weight(k, root_name)}
  unmatched = sorted(set(present) - set(expected))
  missing = sorted(f"{v.name[:-2]} ({k})" for k, v in expected.items()
                   if k not in present)
  mismatched = [f"{expected[k].name[:-2]} ({k}) is {list(present[k])}, the "
                f"model needs {expected[k].shape.as_list()}"
                for k in sorted(set(present) & set(expected))
                if list(present[k]) != expected[k].shape.as_list()]
  return unmatched, missing, mismatched


def _restore(prefix: str, root_name: str, model, checked: bool) -> None:
  """Restores `model`. `checked`: object_mismatches found every weight
  present (a dropout RNG state the checkpoint lacks stays as initialised);
  else every object of `model` must be in the checkpoint."""
  status = tf.train.Checkpoint(**{root_name: model}).read(prefix)
  status.expect_partial()
  if not checked:
    status.assert_existing_objects_matched()


def read_ours(prefix: str, config: AlbertConfig) -> Dict[str, np.ndarray]:
  """Canonical name -> array of our checkpoint at `prefix`."""
  from albert_tf.models.albert_pretrainer import AlbertPretrainer
  from albert_tf.networks.albert_encoder import AlbertEncoder
  keys = locate.list_tf_checkpoint(prefix)
  roots = {k.split("/", 1)[0] for k in keys if ".ATTRIBUTES" in k}
  root_name = "model" if "model" in roots else "encoder"
  encoder = AlbertEncoder(config)
  model = AlbertPretrainer(encoder) if root_name == "model" else encoder
  problems = object_mismatches(keys, root_name,
                               tf.train.Checkpoint(**{root_name: model}))
  if not any(problems):
    _restore(prefix, root_name, model, checked=True)
    return model_variables.canonical_arrays(model)
  if root_name == "model" and not problems[2]:
    # Another model holding our encoder as `.encoder` (e.g. a fine-tuning
    # model): its encoder must be complete; its own heads are not ours.
    try:
      _restore(prefix, "model", tf.train.Checkpoint(encoder=encoder),
               checked=False)
      logging.warning("%s is not an AlbertPretrainer checkpoint; read its "
                      "encoder only", prefix)
      return model_variables.canonical_arrays(encoder)
    except (AssertionError, ValueError, tf.errors.OpError):
      pass
  raise mapping.misfit_error(prefix, f"ours ({root_name}/)", *problems)


def build_garden_encoder(config: AlbertConfig, **kwargs):
  """Model Garden's `networks.AlbertEncoder` with `config`'s architecture.

  kwargs go to its constructor (e.g. initializer, dropout_rate).
  """
  from official.nlp.modeling import networks
  kwargs.setdefault("dict_outputs", True)
  return networks.AlbertEncoder(
      vocab_size=config.vocab_size, embedding_width=config.embedding_size,
      hidden_size=config.hidden_size, num_layers=config.num_hidden_layers,
      num_attention_heads=config.num_attention_heads,
      intermediate_size=config.intermediate_size,
      max_sequence_length=config.max_position_embeddings,
      type_vocab_size=config.type_vocab_size, **kwargs)


def read_garden(prefix: str, config: AlbertConfig) -> Dict[str, np.ndarray]:
  """Canonical name -> array of the Model Garden encoder at `prefix`."""
  table = name_tables.garden_table(config)
  garden = build_garden_encoder(config)
  keys = locate.list_tf_checkpoint(prefix)
  problems = object_mismatches(keys, "encoder",
                                tf.train.Checkpoint(encoder=garden))
  if any(problems):
    raise mapping.misfit_error(prefix, "Model Garden (encoder/)", *problems)
  _restore(prefix, "encoder", garden, checked=True)
  source = {v.name[:-2]: v.numpy() for v in garden.weights}
  return mapping.map_to_ours(source, table, name_tables.our_shapes(config),
                             source_name=prefix, layout="garden")
