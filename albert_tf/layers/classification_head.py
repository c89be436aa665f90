"""ClassificationHead: dropout + dense on the pooled output (GLUE, RACE)."""

import tensorflow as tf
import tf_keras

from albert_tf.layers.checkpointed_dropout import CheckpointedDropout


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class ClassificationHead(tf_keras.layers.Layer):
  """Logits from the pooled [CLS] vector, as the official ALBERT classifier.

  Args:
    num_classes: int, output width (1 for regression).
    dropout_rate: float, dropout on the pooled output (official: 0.1).
    initializer_range: float, stddev of the truncated-normal kernel init.

  Call: pooled float [batch, H] -> float32 logits [batch, num_classes].
  """

  def __init__(self, num_classes: int, dropout_rate: float = 0.1,
               initializer_range: float = 0.02, **kwargs):
    kwargs.setdefault("dtype", "float32")
    super().__init__(**kwargs)
    self.num_classes = num_classes
    self.dropout_rate = dropout_rate
    self.initializer_range = initializer_range
    self.dropout = CheckpointedDropout(dropout_rate, dtype="float32")
    self.dense = tf_keras.layers.Dense(
        num_classes,
        kernel_initializer=tf_keras.initializers.TruncatedNormal(
            stddev=initializer_range),
        dtype="float32", name="dense")

  def call(self, pooled, training=None):
    pooled = tf.cast(pooled, tf.float32)
    return self.dense(self.dropout(pooled, training=training))

  def get_config(self):
    config = super().get_config()
    config.update(num_classes=self.num_classes,
                  dropout_rate=self.dropout_rate,
                  initializer_range=self.initializer_range)
    return config
