"""Distillation losses, per example (the fine-tuning step averages them).

Soft targets (Hinton et al. 2015), per task type, teacher logits t, student
logits s [batch, C], temperature T:
  classification  T^2 * KL(softmax(t / T) || softmax(s / T))
  multi_label     T^2 * mean over labels of the binary KL of the sigmoids
  regression      (s - t)^2 (no temperature: there is no distribution)
mixed with the gold labels' loss (fine-tuning's) by alpha on labelled
records; a record of --unlabeled_file has the soft-target loss only.

The training targets are one float32 row per record, [gold (G), has_gold
(1), teacher logits (C)] (G = C for multi_label, else 1): they ride the
fine-tuning pipeline's label slot unchanged through length buckets,
packing and accumulation slices.

MiniLM (Wang et al. 2020) on the last application: the KL of the teacher's
and the student's self-attention distributions, plus the KL of their value
relations softmax(V V^T / sqrt(d_head)), each averaged over heads and the
real query rows. Both models need the same number of heads (MiniLM v1; v2's
relation heads are not implemented). hidden_projection: the MSE of the last
hidden states, the student's through a learned projection when the widths
differ, averaged over the real tokens. TinyBERT (Jiao et al. 2020, eqs. 7-9)
with its uniform layer mapping (student layer m -> teacher layer m*L/k):
the MSE of the embedding outputs plus, per mapped layer, the MSE of the raw
attention scores (before mask and softmax, as the paper fits them) over
heads and real (query, key) pairs and the MSE of the hidden states; the
student's embedding outputs and hidden states go through learned
projections W_e and W_h when the widths differ.
"""

import math

import tensorflow as tf

_EPS = 1e-12


def pack_targets(gold, has_gold, teacher_logits):
  """[N, G + 1 + C] float32 rows of numpy arrays (module docstring)."""
  import numpy as np
  gold = np.asarray(gold, np.float32).reshape(len(teacher_logits), -1)
  return np.concatenate([gold, np.asarray(has_gold, np.float32)[:, None],
                         np.asarray(teacher_logits, np.float32)], axis=1)


def split_targets(targets, num_outputs: int):
  """targets [batch, G + 1 + C] -> (gold [batch, G], has_gold [batch],
  teacher logits [batch, C])."""
  return (targets[:, :-num_outputs - 1], targets[:, -num_outputs - 1],
          targets[:, -num_outputs:])


def soft_target_loss(student_logits, teacher_logits, task_type: str,
                     temperature: float) -> tf.Tensor:
  """Per-example soft-target loss [batch] (module docstring)."""
  s = tf.cast(student_logits, tf.float32)
  t = tf.cast(teacher_logits, tf.float32)
  if task_type == "regression":
    return tf.reduce_sum(tf.square(s - t), axis=-1)
  scale = temperature * temperature
  if task_type == "multi_label":
    p = tf.sigmoid(t / temperature)
    log_q = tf.math.log_sigmoid(s / temperature)
    log_not_q = tf.math.log_sigmoid(-s / temperature)
    kl = (p * (tf.math.log(p + _EPS) - log_q) +
          (1 - p) * (tf.math.log(1 - p + _EPS) - log_not_q))
    return scale * tf.reduce_mean(kl, axis=-1)
  log_p = tf.nn.log_softmax(t / temperature)
  log_q = tf.nn.log_softmax(s / temperature)
  return scale * tf.reduce_sum(tf.exp(log_p) * (log_p - log_q), axis=-1)


def gold_loss(student_logits, gold, task_type: str) -> tf.Tensor:
  """Fine-tuning's per-example loss on the gold targets [batch, G]."""
  s = tf.cast(student_logits, tf.float32)
  if task_type == "regression":
    return tf.square(s[:, 0] - gold[:, 0])
  if task_type == "multi_label":
    return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
        labels=gold, logits=s), axis=-1)
  # Unlabelled rows hold -1: any class index does, their weight is 0.
  return tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=tf.maximum(tf.cast(gold[:, 0], tf.int32), 0), logits=s)


def distillation_loss(targets, student_logits, task_type: str,
                      temperature: float, alpha: float) -> tf.Tensor:
  """Per-example loss [batch]: alpha * soft + (1 - alpha) * gold on
  labelled rows, soft alone on unlabelled ones."""
  num_outputs = student_logits.shape[-1]
  gold, has_gold, teacher = split_targets(tf.cast(targets, tf.float32),
                                          num_outputs)
  soft = soft_target_loss(student_logits, teacher, task_type, temperature)
  hard = gold_loss(student_logits, gold, task_type)
  weight = alpha * has_gold + (1.0 - has_gold)
  return weight * soft + (1.0 - alpha) * has_gold * hard


def _kl_rows(p, q):
  """KL(p || q) over the last axis of probabilities [..., S]."""
  return tf.reduce_sum(p * (tf.math.log(p + _EPS) - tf.math.log(q + _EPS)),
                       axis=-1)


def value_relation(values, input_mask) -> tf.Tensor:
  """softmax(V V^T / sqrt(d)) over the real keys: values [batch, heads,
  seq, d], input_mask [batch, seq] -> [batch, heads, seq, seq]."""
  values = tf.cast(values, tf.float32)
  d = values.shape[-1]
  scores = tf.matmul(values, values, transpose_b=True) / math.sqrt(d)
  keys = tf.cast(input_mask, tf.float32)[:, None, None, :]  # (B, 1, 1, S)
  return tf.nn.softmax(scores + (1.0 - keys) * -1e9, axis=-1)


def attention_relation_loss(teacher_probs, student_probs, teacher_values,
                            student_values, input_mask) -> tf.Tensor:
  """MiniLM's loss [batch] on one application: attention probabilities
  [batch, heads, seq, seq], values [batch, heads, seq, d_head] (d may
  differ), input_mask [batch, seq]: the two KLs, each a mean over heads and
  real query rows."""
  rows = tf.cast(input_mask, tf.float32)[:, None, :]  # (B, 1, S)
  count = tf.maximum(tf.reduce_sum(rows, axis=-1), 1.0) * tf.cast(
      tf.shape(teacher_probs)[1], tf.float32)  # (B, 1)

  def mean_kl(p, q):
    return tf.reduce_sum(_kl_rows(p, q) * rows, axis=[1, 2]) / count[:, 0]
  attention = mean_kl(tf.cast(teacher_probs, tf.float32),
                      tf.cast(student_probs, tf.float32))
  relation = mean_kl(value_relation(teacher_values, input_mask),
                     value_relation(student_values, input_mask))
  return attention + relation


def hidden_state_loss(teacher_hidden, projected_student_hidden,
                      input_mask) -> tf.Tensor:
  """TinyBERT's MSE [batch] over the real tokens of [batch, seq, H]."""
  mask = tf.cast(input_mask, tf.float32)
  error = tf.reduce_mean(tf.square(
      tf.cast(teacher_hidden, tf.float32) -
      tf.cast(projected_student_hidden, tf.float32)), axis=-1)  # (B, S)
  return tf.reduce_sum(error * mask, axis=1) / tf.maximum(
      tf.reduce_sum(mask, axis=1), 1.0)


def attention_score_loss(teacher_scores, student_scores,
                         input_mask) -> tf.Tensor:
  """TinyBERT's attention loss [batch]: the MSE of raw attention scores
  [batch, heads, seq, seq] over heads and the real (query, key) pairs."""
  mask = tf.cast(input_mask, tf.float32)
  pairs = mask[:, None, :, None] * mask[:, None, None, :]  # (B, 1, S, S)
  error = tf.square(tf.cast(teacher_scores, tf.float32) -
                    tf.cast(student_scores, tf.float32)) * pairs
  heads = tf.cast(tf.shape(teacher_scores)[1], tf.float32)
  count = tf.square(tf.reduce_sum(mask, axis=1)) * heads  # (B,)
  return tf.reduce_sum(error, axis=[1, 2, 3]) / tf.maximum(count, 1.0)


def tinybert_loss(teacher, student, input_mask, mapping,
                  embedding_projection=None,
                  hidden_projection=None) -> tf.Tensor:
  """TinyBERT's intermediate loss [batch] (module docstring).

  Args:
    teacher, student: dicts of "embedding" [batch, seq, H], "hidden" (one
      [batch, seq, H] per layer) and "scores" (one [batch, heads, seq, seq]
      per layer: its last block's); H may differ between the two.
    input_mask: [batch, seq].
    mapping: [(student layer m, teacher layer g)], 1-based
      (student_rule.layer_map).
    embedding_projection, hidden_projection: W_e and W_h, callables on the
      student's [batch, seq, H_s] -> [batch, seq, H_t]; None: the widths
      are equal.
  """
  def project(projection, x):
    return x if projection is None else projection(x)
  loss = hidden_state_loss(
      teacher["embedding"],
      project(embedding_projection, student["embedding"]), input_mask)
  for m, g in mapping:
    loss += attention_score_loss(teacher["scores"][g - 1],
                                 student["scores"][m - 1], input_mask)
    loss += hidden_state_loss(
        teacher["hidden"][g - 1],
        project(hidden_projection, student["hidden"][m - 1]), input_mask)
  return loss
