"""Writes the shared-layer fixtures: weights, a SavedModel and outputs.

Run once on the code BEFORE issue 49's redesign (one shared block and one
loop), from the repository root:

  PYTHONPATH=$PWD python tests/data/shared_layer/write_fixtures.py

It writes, beside this file, `checkpoint/` (tf.train.Checkpoint of a tiny
AlbertEarlyExitClassifier and its encoder), `savedmodel/` (the encoder
saved by tf_keras) and `outputs.npz` (every way to run the layer on fixed
inputs); tests/albert_tf/networks/test_shared_layer_fixtures.py loads them
with today's code and compares to 1e-6. The inputs are a function of this
file only (tests import `inputs()` and `config_dict()`).
"""

import os

import numpy as np
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
BATCH, SEQ = 3, 12
SEED = (11, 29)  # the dropout scope's seed (int64 [2])


def config_dict(dropout=0.0):
  return dict(vocab_size=40, embedding_size=16, hidden_size=32,
              num_hidden_layers=3, num_attention_heads=2,
              intermediate_size=48, max_position_embeddings=16,
              hidden_dropout_prob=dropout,
              attention_probs_dropout_prob=dropout)


def inputs():
  """int32 [3, 12] with padding of 0, 4 and 7 tokens."""
  rng = np.random.RandomState(7)
  lengths = np.array([12, 8, 5])
  mask = (np.arange(SEQ)[None] < lengths[:, None]).astype(np.int32)
  words = rng.randint(4, 40, size=(BATCH, SEQ)).astype(np.int32) * mask
  types = ((np.arange(SEQ)[None] >= lengths[:, None] // 2) * mask
           ).astype(np.int32)
  return dict(input_word_ids=words, input_mask=mask, input_type_ids=types)


def packed_mask():
  """int32 [3, 12, 12]: row 0 holds two examples (6 + 6 tokens)."""
  slots = np.array([[1] * 6 + [2] * 6, [1] * 8 + [0] * 4,
                    [1] * 5 + [0] * 7])
  same = slots[:, :, None] == slots[:, None, :]
  return (same & (slots[:, None, :] > 0)).astype(np.int32)


def positions():
  return np.array([[1, 5], [2, 7], [0, 3]], np.int32)


def build(dropout=0.0, **encoder_kwargs):
  """The tiny classifier (3 classes) and its encoder, variables built."""
  from albert_tf import AlbertConfig
  from albert_tf import AlbertEncoder
  from albert_tf.models import albert_early_exit_classifier
  encoder = AlbertEncoder(AlbertConfig.from_dict(config_dict(dropout)),
                          **encoder_kwargs)
  model = albert_early_exit_classifier.AlbertEarlyExitClassifier(
      encoder, num_classes=3)
  model({k: tf.constant(v) for k, v in inputs().items()})
  return model


def copy_weights(source, target):
  """Assigns source's trainable variables to target's (same names)."""
  pairs = list(zip(source.trainable_variables, target.trainable_variables))
  assert [a.name for a, _ in pairs] == [b.name for _, b in pairs]
  for a, b in pairs:
    b.assign(a)


def outputs(model, dropout_model):
  """Every way to run the layer, name -> np.ndarray."""
  from albert_tf.layers.checkpointed_dropout import seeded
  data = {k: tf.constant(v) for k, v in inputs().items()}
  encoder = model.encoder
  out = {}

  def put(prefix, result):
    for key, value in result.items():
      if isinstance(value, list):
        for i, v in enumerate(value):
          out[f"{prefix}/{key}/{i}"] = np.asarray(v)
      else:
        out[f"{prefix}/{key}"] = np.asarray(value)

  encoder.fused_inference = False
  put("layers", encoder(data, training=False))
  put("layers_positions", encoder(data, output_positions=positions(),
                                  training=False))
  packed = dict(data, input_mask=tf.constant(packed_mask()))
  put("packed", encoder(packed, training=False))
  encoder.fused_inference = True
  put("fused", encoder(data, training=False))
  put("fused_positions", encoder(data, output_positions=positions()))
  put("classifier", model(data, training=False))
  for patience in (1, 2):
    for name, kw in (("branched", {}), ("unbranched", dict(branches=False)),
                     ("masking", dict(compact=False))):
      put(f"exit_{name}_{patience}", model.early_exit(data, patience, **kw))
  seed = tf.constant(SEED, tf.int64)
  d_encoder = dropout_model.encoder
  with seeded(seed):
    put("dropout", d_encoder(data, training=True))
  with seeded(seed):
    put("dropout_positions", d_encoder(data, output_positions=positions(),
                                       training=True))
  with seeded(seed):
    put("dropout_packed", d_encoder(packed, training=True))
  # The classifier's training outputs (its head's own dropout set to 0).
  with seeded(seed):
    put("dropout_classifier", dropout_model(data, training=True))
  weights = tf.constant(np.random.RandomState(3).normal(
      size=(BATCH, SEQ, 32)).astype(np.float32))
  for recompute in (False, True):
    d_encoder.recompute_layers = recompute
    with tf.GradientTape() as tape:
      with seeded(seed):
        y = d_encoder(data, training=True)["sequence_output"]
      loss = tf.reduce_sum(y * weights)
    grads = tape.gradient(loss, d_encoder.trainable_variables)
    for var, g in zip(d_encoder.trainable_variables, grads):
      if g is not None:  # the pooler's
        out[f"grad_{int(recompute)}/{var.name}"] = np.asarray(
            tf.convert_to_tensor(g))
  d_encoder.recompute_layers = False
  return out


def main():
  tf.random.set_seed(5)
  model = build()
  dropout_model = build(dropout=0.1)
  dropout_model.dropout.rate = 0.0  # the head's own dropout off
  copy_weights(model, dropout_model)
  tf.train.Checkpoint(model=model).write(os.path.join(HERE, "checkpoint",
                                                      "model"))
  model.encoder.save(os.path.join(HERE, "savedmodel"), include_optimizer=False)
  np.savez_compressed(os.path.join(HERE, "outputs.npz"),
                      **outputs(model, dropout_model))


if __name__ == "__main__":
  main()
