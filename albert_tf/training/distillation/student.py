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
from albert_tf.networks import layer_loop
from albert_tf.training.distillation import losses
from albert_tf.training.distillation import student_rule

INTERMEDIATE_LOSS = "intermediate_loss"


def intermediate_outputs(encoder, inputs, training) -> dict:
  """What the intermediate losses read, all from layer_loop.run's one pass
  (the pass whose pooled output gives the logits: the same dropout masks,
  every inner block):

    probs, values  the last block application's attention probabilities
                   [batch, heads, seq, seq] and values [batch, heads, seq,
                   d_head] (MiniLM)
    hidden, pooled the last hidden states [batch, seq, H], pooled [batch, H]
    embedding      the embedding output [batch, seq, H] (TinyBERT)
    layers         per layer, its hidden states [batch, seq, H] (TinyBERT)
    layer_scores   per layer, its last block's raw attention scores
                   [batch, heads, seq, seq] (TinyBERT)
  """
  out = layer_loop.run(encoder, inputs, training=training,
                       attention_probs=True, block_internals=True)
  per_layer = encoder.config.inner_group_num
  return dict(probs=out["attention_probs"][-1],
              values=out["attention_values"][-1],
              hidden=out["sequence_output"], pooled=out["pooled_output"],
              embedding=out["embedding_output"],
              layers=out["encoder_outputs"],
              layer_scores=out["attention_scores"][per_layer - 1::per_layer])


def _tinybert_view(outputs) -> dict:
  """losses.tinybert_loss's view of intermediate_outputs."""
  return dict(embedding=outputs["embedding"], hidden=outputs["layers"],
              scores=outputs["layer_scores"])


class DistillationModel(tf_keras.Model):
  """The student, and in training the frozen teacher beside it.

  Args:
    student: an AlbertClassifier (AlbertEncoder inside), trained.
    teacher: an AlbertClassifier, frozen; None with intermediate_loss
      "none".
    intermediate_loss: "none", "attention_relation", "hidden_projection"
      or "tinybert".
  """

  def __init__(self, student, teacher, intermediate_loss: str, **kwargs):
    super().__init__(name="distillation", **kwargs)
    self.student = student
    self.encoder = student.encoder
    self.intermediate_loss = intermediate_loss
    self.projection: Optional[tf_keras.layers.Dense] = None
    self.embedding_projection: Optional[tf_keras.layers.Dense] = None
    if intermediate_loss == "none":
      return
    self.teacher = teacher
    self.teacher.trainable = False
    width, target = (student.encoder.config.hidden_size,
                     teacher.encoder.config.hidden_size)
    projected = ("hidden_projection", "tinybert")
    if intermediate_loss in projected and width != target:
      self.projection = tf_keras.layers.Dense(target, name="projection")
      self.projection.build([None, None, width])
    if intermediate_loss == "tinybert":
      self.layer_map = student_rule.layer_map(
          student.encoder.config.num_hidden_layers,
          teacher.encoder.config.num_hidden_layers)
      if width != target:  # TinyBERT's W_e
        self.embedding_projection = tf_keras.layers.Dense(
            target, name="embedding_projection")
        self.embedding_projection.build([None, None, width])

  def packed_call(self, features, training=None):
    """The student's packed call (packing runs without an intermediate
    loss)."""
    return self.student.packed_call(features, training=training)

  def call(self, inputs, training=None):
    if not training or self.intermediate_loss == "none":
      return self.student(inputs, training=training)
    student = intermediate_outputs(self.student.encoder, inputs, training)
    teacher = tf.nest.map_structure(
        tf.stop_gradient,
        intermediate_outputs(self.teacher.encoder, inputs, False))
    mask = inputs[INPUT_MASK]
    if self.intermediate_loss == "attention_relation":
      extra = losses.attention_relation_loss(
          teacher["probs"], student["probs"], teacher["values"],
          student["values"], mask)
    elif self.intermediate_loss == "tinybert":
      extra = losses.tinybert_loss(
          _tinybert_view(teacher), _tinybert_view(student), mask,
          self.layer_map, self.embedding_projection, self.projection)
    else:
      hidden = student["hidden"]
      if self.projection is not None:
        hidden = self.projection(hidden)
      extra = losses.hidden_state_loss(teacher["hidden"], hidden, mask)
    logits = self.student.classifier(student["pooled"], training=training)
    return {"logits": tf.cast(logits, tf.float32), INTERMEDIATE_LOSS: extra}
