"""Every layer, network and model rebuilds from its get_config.

For each Keras class defined in albert_tf/layers, networks and models: built
with non-default arguments and called on small inputs, then rebuilt by
`cls.from_config` from its config after a JSON round trip (as Keras files
and SavedModels store it), given the same weights with set_weights. The
clone must compute the same outputs (1e-6) and report the same config, and
the config must carry every `__init__` argument with the value given. The
classes are discovered by import, so a new class without a case here fails
`test_every_class_has_a_case`.
"""

import dataclasses
import importlib
import inspect
import json
import pkgutil

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from albert_tf import layers as layers_package
from albert_tf import models as models_package
from albert_tf import networks as networks_package
from albert_tf.config import AlbertConfig
from albert_tf.layers.albert_embeddings import AlbertEmbeddings
from albert_tf.layers.attention_sublayer import AttentionSublayer
from albert_tf.layers.checkpointed_dropout import CheckpointedDropout
from albert_tf.layers.classification_head import ClassificationHead
from albert_tf.layers.feed_forward_sublayer import FeedForwardSublayer
from albert_tf.layers.float32_softmax_attention import Float32SoftmaxAttention
from albert_tf.layers.masked_lm_head import MaskedLMHead
from albert_tf.layers.multiple_choice_head import MultipleChoiceHead
from albert_tf.layers.sentence_order_head import SentenceOrderHead
from albert_tf.layers.span_head import SpanHead
from albert_tf.layers.squad_v2_head import SquadV2Head
from albert_tf.layers.token_classification_head import TokenClassificationHead
from albert_tf.models.albert_classifier import AlbertClassifier
from albert_tf.models.albert_early_exit_classifier import (
  AlbertEarlyExitClassifier,
)
from albert_tf.models.albert_multiple_choice import AlbertMultipleChoice
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.models.albert_span_labeler import AlbertSpanLabeler
from albert_tf.models.albert_squad_v2 import AlbertSquadV2
from albert_tf.models.albert_token_classifier import AlbertTokenClassifier
from albert_tf.networks.albert_encoder import AlbertEncoder

B, S, H = 2, 6, 16  # batch, sequence, hidden width
RNG = np.random.default_rng(0)
HIDDEN = RNG.normal(size=(B, S, H)).astype(np.float32)
WORD_IDS = RNG.integers(1, 50, size=(B, S)).astype(np.int32)
TYPE_IDS = np.array([[0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 2, 0]], np.int32)
MASK = np.array([[1] * S, [1, 1, 1, 1, 0, 0]], np.int32)
POSITIONS = np.array([[1, 3, 0], [2, 2, 1]], np.int32)
P_MASK = np.array([[1, 0, 0, 0, 0, 1], [1, 0, 0, 0, 1, 1]], np.int32)
ENCODER_INPUTS = dict(input_word_ids=WORD_IDS, input_mask=MASK,
                      input_type_ids=TYPE_IDS)
# Non-default hyperparameters (dropout is off at inference, so any rate).
EMBEDDINGS = dict(vocab_size=50, embedding_size=8, hidden_size=H,
                  max_position_embeddings=12, type_vocab_size=3,
                  initializer_range=0.05, dropout_rate=0.2)


def _encoder_config():
  return AlbertConfig(vocab_size=50, embedding_size=8, hidden_size=H,
                      num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=24, hidden_act="relu",
                      max_position_embeddings=12, type_vocab_size=3,
                      initializer_range=0.05, share_parameters="attention")


def _call_masked_lm_head(head):
  head.embedding_layer(WORD_IDS, TYPE_IDS)  # builds the (tied) word table
  return head(HIDDEN, POSITIONS), head(HIDDEN[:, :3])


# class -> (constructor args, call on the test inputs with training off).
# A callable arg is a factory (a sublayer or config), called per build.
CASES = {
    AlbertEmbeddings: (EMBEDDINGS, lambda layer: layer(WORD_IDS, TYPE_IDS,
                                                       training=False)),
    AttentionSublayer: (
        dict(hidden_size=H, num_attention_heads=2, initializer_range=0.05,
             dropout_rate=0.2, attention_dropout_rate=0.3),
        lambda layer: layer(HIDDEN, MASK, training=False)),
    CheckpointedDropout: (dict(rate=0.25, noise_shape=(B, 1, H), seed=3),
                          lambda layer: layer(HIDDEN, training=False)),
    ClassificationHead: (
        dict(num_classes=3, dropout_rate=0.2, initializer_range=0.05),
        lambda layer: layer(HIDDEN[:, 0], training=False)),
    FeedForwardSublayer: (
        dict(hidden_size=H, intermediate_size=24, hidden_act="relu",
             initializer_range=0.05, dropout_rate=0.2),
        lambda layer: layer(HIDDEN, training=False)),
    # Never called (it holds the variables shared_block reads): its
    # projections built, their weights are its outputs.
    Float32SoftmaxAttention: (
        dict(num_heads=2, key_dim=4, value_dim=6, dropout=0.1,
             output_shape=10),
        lambda layer: (layer.build_projections(tf.TensorShape(HIDDEN.shape)),
                       layer.get_weights())[1]),
    MaskedLMHead: (
        dict(embedding_layer=lambda: AlbertEmbeddings(**EMBEDDINGS),
             hidden_act="relu", initializer_range=0.05),
        _call_masked_lm_head),
    MultipleChoiceHead: (
        dict(num_choices=3, initializer_range=0.05, dropout_rate=0.2),
        # B*S = 12 pooled rows: 4 questions of 3 options.
        lambda layer: layer(HIDDEN.reshape(-1, H), training=False)),
    SentenceOrderHead: (dict(initializer_range=0.05),
                        lambda layer: layer(HIDDEN[:, 0])),
    SpanHead: (dict(initializer_range=0.05), lambda layer: layer(HIDDEN)),
    SquadV2Head: (
        dict(hidden_size=H, start_n_top=2, end_n_top=3,
             initializer_range=0.05, dropout_rate=0.2),
        lambda layer: (layer(HIDDEN, P_MASK, training=False),
                       layer(HIDDEN, P_MASK, start_positions=np.array([1, 3]),
                             training=False))),
    TokenClassificationHead: (
        dict(num_classes=5, dropout_rate=0.2, initializer_range=0.05),
        lambda layer: layer(HIDDEN, training=False)),
    AlbertEncoder: (
        dict(config=_encoder_config),
        lambda layer: (layer(ENCODER_INPUTS, training=False),
                       layer(ENCODER_INPUTS, output_positions=POSITIONS,
                             training=False))),
    AlbertClassifier: (
        dict(encoder=lambda: AlbertEncoder(_encoder_config()), num_classes=3,
             dropout_rate=0.2, initializer_range=0.07),
        lambda layer: layer(ENCODER_INPUTS, training=False)),
    AlbertEarlyExitClassifier: (
        dict(encoder=lambda: AlbertEncoder(dataclasses.replace(
            _encoder_config(), share_parameters="all")), num_classes=3,
             dropout_rate=0.2, initializer_range=0.07),
        lambda layer: (layer(ENCODER_INPUTS, training=False),
                       layer.early_exit(ENCODER_INPUTS, patience=1))),
    AlbertMultipleChoice: (
        dict(encoder=lambda: AlbertEncoder(_encoder_config()), num_choices=2,
             dropout_rate=0.2, initializer_range=0.07),
        lambda layer: layer({k: v.reshape(1, 2, S)
                             for k, v in ENCODER_INPUTS.items()},
                            training=False)),
    AlbertPretrainer: (
        dict(encoder=lambda: AlbertEncoder(_encoder_config())),
        lambda layer: layer(dict(ENCODER_INPUTS,
                                 masked_lm_positions=POSITIONS),
                            training=False)),
    AlbertSpanLabeler: (
        dict(encoder=lambda: AlbertEncoder(_encoder_config()),
             initializer_range=0.07),
        lambda layer: layer(ENCODER_INPUTS, training=False)),
    AlbertSquadV2: (
        dict(encoder=lambda: AlbertEncoder(_encoder_config()), start_n_top=2,
             end_n_top=3, dropout_rate=0.2, hidden_size=H,
             initializer_range=0.07),
        lambda layer: (layer(dict(ENCODER_INPUTS, p_mask=P_MASK),
                             training=False),
                       layer(dict(ENCODER_INPUTS, p_mask=P_MASK,
                                  start_positions=np.array([1, 2])),
                             training=False))),
    AlbertTokenClassifier: (
        dict(encoder=lambda: AlbertEncoder(_encoder_config()), num_classes=5,
             dropout_rate=0.2, initializer_range=0.07),
        lambda layer: layer(ENCODER_INPUTS, training=False)),
}


def _defined_classes():
  """Every Keras layer / model class defined in our three packages."""
  found = set()
  for package in (layers_package, networks_package, models_package):
    for info in pkgutil.iter_modules(package.__path__):
      module = importlib.import_module(f"{package.__name__}.{info.name}")
      found.update(
          obj for obj in vars(module).values()
          if inspect.isclass(obj) and obj.__module__ == module.__name__
          and issubclass(obj, tf_keras.layers.Layer))
  return found


def _build(cls):
  args, _ = CASES[cls]
  kwargs = {k: v() if callable(v) else v for k, v in args.items()}
  return cls(**kwargs)


def _json_default(value):
  # MultiHeadAttention's build shapes: a list, as Keras' JSON encoder writes.
  if isinstance(value, tf.TensorShape):
    return value.as_list()
  raise TypeError(f"not JSON serializable: {value!r}")


def _as_json(config):
  return json.loads(json.dumps(config, default=_json_default))


def _numpy(outputs):
  return [np.asarray(x) for x in tf.nest.flatten(outputs)]


def _names(classes):
  return sorted(c.__name__ for c in classes)


def test_every_class_has_a_case():
  # Including those whose get_config is Keras' (CheckpointedDropout,
  # Float32SoftmaxAttention) or EncoderModelConfig's.
  assert _names(_defined_classes()) == _names(CASES)


@pytest.mark.slow
@pytest.mark.parametrize("cls", list(CASES), ids=lambda c: c.__name__)
def test_rebuilt_from_config_computes_the_same(cls):
  args, call = CASES[cls]
  layer = _build(cls)
  expected = _numpy(call(layer))
  config = layer.get_config()
  # Every __init__ argument is in the config, with the value given.
  parameters = [p for p in inspect.signature(cls.__init__).parameters.values()
                if p.name != "self" and p.kind not in (p.VAR_KEYWORD,
                                                       p.VAR_POSITIONAL)]
  assert {p.name for p in parameters} <= set(config), sorted(config)
  for name, value in args.items():
    if not callable(value):
      assert _as_json(config[name]) == _as_json(value), name

  clone = cls.from_config(_as_json(config))
  assert type(clone) is cls
  assert _as_json(clone.get_config()) == _as_json(config)
  call(clone)  # builds the variables a call creates
  weights = layer.get_weights()
  assert [w.shape for w in clone.get_weights()] == [w.shape for w in weights]
  clone.set_weights(weights)
  got = _numpy(call(clone))
  assert len(got) == len(expected)
  for g, e in zip(got, expected):
    np.testing.assert_allclose(g, e, rtol=0, atol=1e-6)
