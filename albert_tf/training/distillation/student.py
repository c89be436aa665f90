"""The model a student trains with an intermediate loss.

The config rule is student_rule's.

DistillationModel wraps the student classifier for the fine-tuning step
(always, so that a run's checkpoints have one layout, model/student/...,
whatever --intermediate_loss a rerun or an evaluation gives): with an
intermediate loss, in training it also runs the frozen teacher (no
gradient) and returns each example's intermediate loss as
`intermediate_loss` [batch]; otherwise it is the student.
"""

from typing import Optional

import tensorflow as tf
import tf_keras

from albert_common.encoder_inputs import INPUT_MASK
from albert_common.encoder_inputs import INPUT_TYPE_IDS
from albert_common.encoder_inputs import INPUT_WORD_IDS
from albert_tf.layers import shared_block
from albert_tf.networks import layer_loop
from albert_tf.training.distillation import losses

INTERMEDIATE_LOSS = "intermediate_loss"


def last_application(encoder, inputs, training) -> dict:
  """The encoder's last application: attention probabilities [batch, heads,
  seq, seq], values [batch, heads, seq, d_head], and the last hidden
  states [batch, seq, H] (layer_loop.run's one loop)."""
  out = layer_loop.run(encoder, inputs, training=training,
                       attention_probs=True)
  word_ids = inputs[INPUT_WORD_IDS]
  batch, seq = tf.shape(word_ids)[0], tf.shape(word_ids)[1]
  config = encoder.config
  if len(out["encoder_outputs"]) > 1:
    rows = out["encoder_outputs"][-2]  # the last application's input
  else:
    rows = encoder.embedding_layer(word_ids, inputs[INPUT_TYPE_IDS],
                                   training=training)
  rows = tf.reshape(rows, [-1, config.hidden_size])  # (B*S, H)
  attention = shared_block.Attention(layer_loop.blocks(encoder)[-1][0])
  _, values = attention.keys_values(rows, batch, seq)  # (B, S, H)
  heads = config.num_attention_heads
  values = tf.transpose(tf.reshape(
      values, [batch, seq, heads, config.hidden_size // heads]),
      [0, 2, 1, 3])  # (B, N, S, D)
  return dict(probs=out["attention_probs"][-1], values=values,
              hidden=out["sequence_output"], pooled=out["pooled_output"])


class DistillationModel(tf_keras.Model):
  """The student, and in training the frozen teacher beside it.

  Args:
    student: an AlbertClassifier (AlbertEncoder inside), trained.
    teacher: an AlbertClassifier, frozen; None with intermediate_loss
      "none".
    intermediate_loss: "none", "attention_relation" or
      "hidden_projection".
  """

  def __init__(self, student, teacher, intermediate_loss: str, **kwargs):
    super().__init__(name="distillation", **kwargs)
    self.student = student
    self.encoder = student.encoder
    self.intermediate_loss = intermediate_loss
    self.projection: Optional[tf_keras.layers.Dense] = None
    if intermediate_loss == "none":
      return
    self.teacher = teacher
    self.teacher.trainable = False
    width, target = (student.encoder.config.hidden_size,
                     teacher.encoder.config.hidden_size)
    if intermediate_loss == "hidden_projection" and width != target:
      self.projection = tf_keras.layers.Dense(target, name="projection")
      self.projection.build([None, None, width])

  def packed_call(self, features, training=None):
    """The student's packed call (packing runs without an intermediate
    loss)."""
    return self.student.packed_call(features, training=training)

  def call(self, inputs, training=None):
    if not training or self.intermediate_loss == "none":
      return self.student(inputs, training=training)
    student = last_application(self.student.encoder, inputs, training)
    teacher = tf.nest.map_structure(
        tf.stop_gradient,
        last_application(self.teacher.encoder, inputs, False))
    mask = inputs[INPUT_MASK]
    if self.intermediate_loss == "attention_relation":
      extra = losses.attention_relation_loss(
          teacher["probs"], student["probs"], teacher["values"],
          student["values"], mask)
    else:
      hidden = student["hidden"]
      if self.projection is not None:
        hidden = self.projection(hidden)
      extra = losses.hidden_state_loss(teacher["hidden"], hidden, mask)
    logits = self.student.classifier(student["pooled"], training=training)
    return {"logits": tf.cast(logits, tf.float32), INTERMEDIATE_LOSS: extra}
