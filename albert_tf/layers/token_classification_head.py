"""TokenClassificationHead: dropout + dense at every position (NER)."""

import tensorflow as tf
import tf_keras

from albert_tf.layers.checkpointed_dropout import CheckpointedDropout


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class TokenClassificationHead(tf_keras.layers.Layer):
  """Tag logits per position from the encoder's sequence output, as Hugging
  Face's AlbertForTokenClassification and Model Garden's tagging task.

  Args:
    num_classes: int, tags (labels.json's length).
    dropout_rate: float, dropout on the sequence output (0.1).
    initializer_range: float, stddev of the truncated-normal kernel init.

  Call: sequence float [batch, seq, H] -> float32 logits [batch, seq,
  num_classes].
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

  def call(self, sequence, training=None):
    sequence = tf.cast(sequence, tf.float32)
    return self.dense(self.dropout(sequence, training=training))

  def get_config(self):
    config = super().get_config()
    config.update(num_classes=self.num_classes,
                  dropout_rate=self.dropout_rate,
                  initializer_range=self.initializer_range)
    return config
