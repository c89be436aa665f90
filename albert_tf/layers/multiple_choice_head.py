"""One score per option from the pooled output (RACE)."""

import tensorflow as tf
import tf_keras

from albert_tf.layers.checkpointed_dropout import CheckpointedDropout


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class MultipleChoiceHead(tf_keras.layers.Layer):
  """Dropout, dense H -> 1, then the scores of each question's options.

  As the official RACE model (`output_weights` [1, H], `output_bias` [1]).

  Args:
    num_choices: int, options per question (RACE: 4).
    initializer_range: float, stddev of the truncated-normal kernel.
    dropout_rate: float, dropout on the pooled output while training.

  Call args:
    pooled_output: float [batch * num_choices, H], the options of a question
      consecutive.

  Returns:
    float32 logits [batch, num_choices]; softmax over the last axis.
  """

  def __init__(self, num_choices=4, initializer_range=0.02, dropout_rate=0.1,
               **kwargs):
    super().__init__(**kwargs)
    self.num_choices = num_choices
    self.initializer_range = initializer_range
    self.dropout_rate = dropout_rate
    self.dropout = CheckpointedDropout(dropout_rate)
    self.dense = tf_keras.layers.Dense(
        1, kernel_initializer=tf_keras.initializers.TruncatedNormal(
            stddev=initializer_range),
        dtype="float32", name="dense")

  def call(self, pooled_output, training=None):
    x = self.dropout(tf.cast(pooled_output, tf.float32), training=training)
    scores = self.dense(x)  # (B*C, 1)
    return tf.reshape(scores, [-1, self.num_choices])  # (B, C)

  def get_config(self):
    config = super().get_config()
    config.update(num_choices=self.num_choices,
                  initializer_range=self.initializer_range,
                  dropout_rate=self.dropout_rate)
    return config
