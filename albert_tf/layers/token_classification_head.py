"""TokenClassificationHead: dropout + dense at every position (NER)."""

import tf_keras

from albert_tf.layers.classification_head import ClassificationHead


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class TokenClassificationHead(ClassificationHead):
  """Tag logits per position from the encoder's sequence output, as Hugging
  Face's AlbertForTokenClassification and Model Garden's tagging task: the
  classification head's dropout + dense, applied along the last axis.

  Args:
    num_classes: int, tags (labels.json's length).
    dropout_rate: float, dropout on the sequence output (0.1).
    initializer_range: float, stddev of the truncated-normal kernel init.

  Call: sequence float [batch, seq, H] -> float32 logits [batch, seq,
  num_classes].
  """
