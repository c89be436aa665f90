"""The pretraining objective (MLM + SOP) and its metrics.

Losses are normalised by global quantities (the sum of `masked_lm_weights`
and the number of sequences over all replicas), so that summing the replicas'
gradients gives exactly the gradient of the global-batch loss, whatever the
number of replicas.
"""

from typing import Dict

import tensorflow as tf
import tf_keras


def replica_loss(batch: Dict[str, tf.Tensor], outputs: Dict[str, tf.Tensor],
                 global_mlm_weight: tf.Tensor, global_batch_size: int):
  """This replica's share of the global MLM + SOP loss.

  Args:
    batch: masked_lm_ids int32 [b, P], masked_lm_weights float32 [b, P],
      next_sentence_labels int32 [b] (or [b, 1]).
    outputs: mlm_logits float32 [b, P, V], sop_logits float32 [b, 2].
    global_mlm_weight: scalar, sum of masked_lm_weights over all replicas.
    global_batch_size: sequences per step over all replicas.

  Returns:
    (loss, per_token) where loss is the scalar replica share and per_token a
    dict with mlm_ce [b, P], sop_ce [b] and sop_labels [b].
  """
  weights = tf.cast(batch["masked_lm_weights"], tf.float32)
  mlm_ce = tf_keras.losses.sparse_categorical_crossentropy(
      batch["masked_lm_ids"], outputs["mlm_logits"], from_logits=True)
  sop_labels = tf.reshape(batch["next_sentence_labels"], [-1])
  sop_ce = tf_keras.losses.sparse_categorical_crossentropy(
      sop_labels, outputs["sop_logits"], from_logits=True)
  mlm_loss = tf.reduce_sum(mlm_ce * weights) / tf.maximum(global_mlm_weight,
                                                          1e-5)
  sop_loss = tf.reduce_sum(sop_ce) / global_batch_size
  return mlm_loss + sop_loss, dict(mlm_ce=mlm_ce, sop_ce=sop_ce,
                                   sop_labels=sop_labels)


class PretrainingMetrics:
  """MLM loss/accuracy weighted by masked_lm_weights; SOP loss/accuracy.

  Create inside the strategy scope; `update` runs in replica context.
  """

  NAMES = ("mlm_loss", "mlm_accuracy", "sop_loss", "sop_accuracy")

  def __init__(self):
    self.metrics = {name: tf_keras.metrics.Mean(name) for name in self.NAMES}

  def update(self, batch, outputs, per_token):
    weights = tf.cast(batch["masked_lm_weights"], tf.float32)
    mlm_correct = tf.cast(
        tf.equal(tf.argmax(outputs["mlm_logits"], -1, output_type=tf.int32),
                 tf.cast(batch["masked_lm_ids"], tf.int32)), tf.float32)
    sop_correct = tf.cast(
        tf.equal(tf.argmax(outputs["sop_logits"], -1, output_type=tf.int32),
                 tf.cast(per_token["sop_labels"], tf.int32)), tf.float32)
    self.metrics["mlm_loss"].update_state(per_token["mlm_ce"],
                                          sample_weight=weights)
    self.metrics["mlm_accuracy"].update_state(mlm_correct,
                                              sample_weight=weights)
    self.metrics["sop_loss"].update_state(per_token["sop_ce"])
    self.metrics["sop_accuracy"].update_state(sop_correct)

  def reset(self):
    for metric in self.metrics.values():
      metric.reset_state()

  def result(self) -> Dict[str, tf.Tensor]:
    return {name: metric.result() for name, metric in self.metrics.items()}
