"""Our Keras models' variables under their canonical names (name_tables).

The names are the encoder's variable names relative to the encoder, plus
"masked_lm/..." and "sentence_order/..." for our pretraining heads and
"<kind>/..." for a task model's head (head_tables); they do not depend on
the Keras name scope a model was built in.
"""

from typing import Dict, Optional, Tuple

import numpy as np
import tensorflow as tf

from albert_common.errors import UserInputError
from albert_tf.config import AlbertConfig

# Our tf_keras classes are imported where used, so that importing the
# converter does not load tf_keras (keras_hub_preset imports it in Keras 3
# processes too).


def _find(model, cls):
  if isinstance(model, cls):
    return model
  for module in model.submodules:
    if isinstance(module, cls):
      return module
  return None


def _encoder_of(model):
  from albert_tf.networks.albert_encoder import AlbertEncoder
  encoder = _find(model, AlbertEncoder)
  if encoder is None:
    raise UserInputError(f"model {model.name!r} holds no AlbertEncoder")
  return encoder


def encoder_config(model) -> AlbertConfig:
  """The AlbertConfig of the AlbertEncoder `model` is or holds."""
  return _encoder_of(model).config


def task_head(model) -> Tuple[Optional[str], Dict[str, tf.Variable]]:
  """(head kind, canonical name -> variable) of our task model `model`'s
  head (head_tables), or (None, {}) for a model without one (an encoder, a
  pretrainer, the early-exit classifier)."""
  from albert_tf.layers.classification_head import ClassificationHead
  from albert_tf.layers.multiple_choice_head import MultipleChoiceHead
  from albert_tf.layers.span_head import SpanHead
  from albert_tf.layers.squad_v2_head import SquadV2Head
  from albert_tf.layers.token_classification_head import TokenClassificationHead
  from albert_tf.models.albert_early_exit_classifier import (
    AlbertEarlyExitClassifier,
  )
  if _find(model, AlbertEarlyExitClassifier) is not None:
    return None, {}
  for kind, cls in (("token_classifier", TokenClassificationHead),
                    ("classifier", ClassificationHead),
                    ("span", SpanHead),
                    ("multiple_choice", MultipleChoiceHead)):
    head = _find(model, cls)
    if head is not None:
      return kind, {f"{kind}/dense/kernel": head.dense.kernel,
                    f"{kind}/dense/bias": head.dense.bias}
  head = _find(model, SquadV2Head)
  if head is None:
    return None, {}
  out = {}
  for ours, layer in (("start_logits", head.start_dense),
                      ("end_dense_0", head.end_dense_0),
                      ("end_dense_1", head.end_dense_1),
                      ("answer_class_dense_0", head.answer_dense_0),
                      ("answer_class_dense_1", head.answer_dense_1)):
    out[f"squad_v2/{ours}/kernel"] = layer.kernel
    if layer.use_bias:
      out[f"squad_v2/{ours}/bias"] = layer.bias
  out["squad_v2/end_layer_norm/gamma"] = head.end_layer_norm.gamma
  out["squad_v2/end_layer_norm/beta"] = head.end_layer_norm.beta
  return "squad_v2", out


def canonical_variables(model) -> Dict[str, tf.Variable]:
  """Canonical name -> variable, for an AlbertEncoder, AlbertPretrainer or a
  model holding an AlbertEncoder (and optionally our pretraining heads or
  one of our task heads)."""
  from albert_tf.layers.masked_lm_head import MaskedLMHead
  from albert_tf.layers.sentence_order_head import SentenceOrderHead
  encoder = _encoder_of(model)
  table_name = encoder.get_embedding_table().name
  prefix = table_name[:-len("embeddings/word_embeddings/embeddings:0")]
  out = {}
  for v in encoder.weights:
    if not v.name.startswith(prefix):
      raise ValueError(f"unexpected encoder variable name {v.name}")
    out[v.name[len(prefix):-2]] = v
  mlm = _find(model, MaskedLMHead)
  if mlm is not None and model is not encoder:
    out.update({"masked_lm/transform/kernel": mlm.transform.kernel,
                "masked_lm/transform/bias": mlm.transform.bias,
                "masked_lm/layer_norm/gamma": mlm.layer_norm.gamma,
                "masked_lm/layer_norm/beta": mlm.layer_norm.beta,
                "masked_lm/output_bias": mlm.output_bias})
  sop = _find(model, SentenceOrderHead)
  if sop is not None and model is not encoder:
    out.update({"sentence_order/dense/kernel": sop.dense.kernel,
                "sentence_order/dense/bias": sop.dense.bias})
  if model is not encoder:
    out.update(task_head(model)[1])
  return out


def canonical_arrays(model) -> Dict[str, np.ndarray]:
  """Canonical name -> the variable's value, as `canonical_variables`."""
  return {n: v.numpy() for n, v in canonical_variables(model).items()}
