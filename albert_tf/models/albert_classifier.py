"""AlbertClassifier: sequence classification / regression on pooled output."""

from typing import Optional

import tensorflow as tf
import tf_keras

from albert_common.encoder_inputs import ENCODER_INPUT_NAMES
from albert_tf.layers.classification_head import ClassificationHead
from albert_tf.models.encoder_model_config import EncoderModelConfig
from albert_tf.networks.albert_encoder import packed_pooled_output
from albert_tf.networks.albert_encoder import pooled_output


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class AlbertClassifier(EncoderModelConfig, tf_keras.Model):
  """Encoder -> pooled [CLS] -> dropout -> dense (official run_classifier).

  Args:
    encoder: an AlbertEncoder, or any layer with the TF Hub encoder interface
      (e.g. hub.KerasLayer of an exported encoder): dict of int32
      [batch, seq] inputs -> dict with `pooled_output` [batch, H].
    num_classes: int, number of labels; 1 for regression (STS-B).
    dropout_rate: float, dropout before the dense layer (official: 0.1).
    initializer_range: float, stddev of the head's truncated-normal init;
      None takes the encoder config's (0.02 for released models).

  Inputs (dict): input_word_ids, input_mask, input_type_ids: int32
    [batch, seq].
  Outputs (dict): logits: float32 [batch, num_classes].

  `packed_call(features)` takes packed rows instead (several examples a
  row, data_pipeline.tasks.packing; an AlbertEncoder only) and returns
  each example slot's logits, float32 [rows * slots, num_classes], equal to
  those the examples have unpacked.
  """

  CONFIG_KEYS = ("num_classes", "dropout_rate", "initializer_range")

  def __init__(self, encoder, num_classes: int, dropout_rate: float = 0.1,
               initializer_range: Optional[float] = None, **kwargs):
    if initializer_range is None:
      config = getattr(encoder, "config", None)
      initializer_range = getattr(config, "initializer_range", 0.02)
    inputs = {name: tf_keras.Input(shape=(None,), dtype=tf.int32, name=name)
              for name in ENCODER_INPUT_NAMES}
    pooled = pooled_output(encoder, inputs)
    head = ClassificationHead(num_classes, dropout_rate, initializer_range,
                              name="classifier")
    outputs = dict(logits=head(pooled))
    kwargs.setdefault("name", "albert_classifier")
    super().__init__(inputs=inputs, outputs=outputs, **kwargs)
    self.encoder = encoder
    self.classifier = head
    self.num_classes = num_classes
    self.dropout_rate = dropout_rate
    self.initializer_range = initializer_range

  def packed_call(self, features, training=None):
    """Logits of every example slot of a packed batch (see the class
    docstring): {"logits": float32 [rows * slots, num_classes]}."""
    pooled = packed_pooled_output(self.encoder, features, training)  # (R,K,H)
    logits = self.classifier(pooled, training=training)  # (R, K, C)
    return dict(logits=tf.reshape(logits, [-1, self.num_classes]))
