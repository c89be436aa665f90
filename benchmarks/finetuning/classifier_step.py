"""Fine-tuning step speed (GLUE-style classifier): ours vs Model Garden.

  python -m benchmarks.finetuning.classifier_step --size=base --batch_size=8 \
      --seq_length=128

One step = forward, softmax cross-entropy, backward, clipping, AdamW update.
Ours: `AlbertClassifier` (its encoder computes the last block at [CLS] only,
all a sentence-level head reads). Model Garden: `AlbertEncoder` +
`BertClassifier` with the same config. Same process, alternating steps,
medians.
"""


import numpy as np
import tensorflow as tf
import tf_keras

from albert_tf import optimization
from albert_tf.config import AlbertConfig
from benchmarks import common

NUM_CLASSES = 3


def classifier_batch(config: AlbertConfig, batch: int, seq: int, seed=0):
  rng = np.random.default_rng(seed)
  features = dict(
      input_word_ids=tf.constant(rng.integers(5, config.vocab_size,
                                              (batch, seq)), tf.int32),
      input_mask=tf.ones([batch, seq], tf.int32),
      input_type_ids=tf.zeros([batch, seq], tf.int32))
  labels = tf.constant(rng.integers(0, NUM_CLASSES, (batch,)), tf.int32)
  return features, labels


def training_step(model, logits_of):
  """A compiled AdamW step of `model`, called on a (features, labels)
  batch; `logits_of(outputs)` picks the logits."""
  optimizer = optimization.create_optimizer("adamw", 2e-5,
                                            num_train_steps=10**6)

  @tf.function
  def step(features, labels):
    with tf.GradientTape() as tape:
      logits = logits_of(model(features, training=True))
      loss = tf.reduce_mean(
          tf_keras.losses.sparse_categorical_crossentropy(
              labels, logits, from_logits=True))
    grads = tape.gradient(loss, model.trainable_variables)
    grads, _ = tf.clip_by_global_norm(grads, 1.0)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return optimizer.iterations

  return step


def ours_step(config: AlbertConfig, num_classes: int = NUM_CLASSES):
  """training_step of our AlbertClassifier."""
  from albert_tf.models.albert_classifier import AlbertClassifier
  from albert_tf.networks.albert_encoder import AlbertEncoder
  model = AlbertClassifier(AlbertEncoder(config), num_classes)
  return training_step(model, lambda outputs: outputs["logits"])


def garden_step(config: AlbertConfig, num_classes: int = NUM_CLASSES):
  """training_step of Model Garden's AlbertEncoder + BertClassifier."""
  from official.nlp.modeling import models

  from albert_tf.checkpoints.converter import build_garden_encoder
  init = tf_keras.initializers.TruncatedNormal(stddev=config.initializer_range)
  encoder = build_garden_encoder(config, dropout_rate=0.0,
                                 attention_dropout_rate=0.0, initializer=init)
  model = models.BertClassifier(encoder, num_classes=num_classes,
                                initializer=init, dropout_rate=0.1)
  return training_step(model, lambda logits: logits)


def run(size: str, batch: int, seq: int, repeats: int) -> str:
  config = common.load_config(size)
  features, labels = classifier_batch(config, batch, seq)
  steps = {"ours": ours_step(config), "garden": garden_step(config)}
  times = common.time_alternating(
      {name: (lambda step=step: step(features, labels))
       for name, step in steps.items()}, repeats)
  ours_s, garden_s = (common.median(times[k]) for k in ("ours", "garden"))
  header = ["model", "ours s/step", "Garden s/step", "speed-up (Garden/ours)",
            "ours seq/s", "Garden seq/s"]
  table = common.markdown_table(header, [[
      common.size_label(size), f"{ours_s:.2f}", f"{garden_s:.2f}",
      f"{garden_s / ours_s:.2f}x",
      f"{batch / ours_s:.1f}", f"{batch / garden_s:.1f}"]])
  print(table)
  return table


def main():
  common.model_step_main(__doc__, run, "benchmarks.finetuning.classifier_step",
                         "Fine-tuning step (classifier)",
                         "Float32, 3 classes, AdamW; ours computes the "
                         "encoder's last block at [CLS] only.",
                         repeats=8)


if __name__ == "__main__":
  main()
