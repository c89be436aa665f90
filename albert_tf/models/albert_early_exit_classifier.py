"""AlbertEarlyExitClassifier: one classifier per application of the layer."""

from typing import Optional

import tensorflow as tf
import tf_keras

from albert_common.encoder_inputs import EXAMPLE_SLOT_IDS
from albert_common.encoder_inputs import EXAMPLE_STARTS
from albert_common.encoder_inputs import INPUT_MASK
from albert_common.encoder_inputs import INPUT_POSITIONS
from albert_common.encoder_inputs import INPUT_TYPE_IDS
from albert_common.encoder_inputs import INPUT_WORD_IDS
from albert_common.run_constants import EXIT_THRESHOLD
from albert_tf.layers.checkpointed_dropout import CheckpointedDropout
from albert_tf.models.encoder_model_config import EncoderModelConfig
from albert_tf.networks import early_exit_encoder
from albert_tf.networks.albert_encoder import AlbertEncoder


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class AlbertEarlyExitClassifier(EncoderModelConfig, tf_keras.Model):
  """Encoder -> each application's pooled [CLS] -> its own dense (PABEE).

  Application j (1 <= j <= L) of the shared layer has its classifier, a
  dense [H, C] on the pooler of that application's [CLS] (after dropout, as
  the official head): L * (H + 1) * C parameters more than AlbertClassifier.
  The last one is the full-depth classifier.

  Args:
    encoder: an AlbertEncoder whose layers share one block set
      (share_parameters="all", num_hidden_groups=1).
    num_classes: int, number of labels; 1 for regression.
    dropout_rate: float, dropout before each dense (official: 0.1).
    initializer_range: float, stddev of the heads' truncated-normal init;
      None takes the encoder config's.

  Inputs (dict): input_word_ids, input_mask, input_type_ids: int32
    [batch, seq].
  Outputs (dict), every application computed:
    logits: float32 [batch, C], the last application's (full depth);
    all_logits: float32 [batch, L, C], application j's at [:, j - 1].

  `early_exit(inputs, patience, threshold)` runs the exit loop instead
  (networks/early_exit_encoder.py): {"logits": [batch, C] at each example's
  exit, "exit_layer": int32 [batch]}. `loss(labels, outputs)` is PABEE's
  weighted loss. `packed_call(features)` takes packed rows (as
  AlbertClassifier's) and returns [rows * slots, ...] outputs.
  """

  CONFIG_KEYS = ("num_classes", "dropout_rate", "initializer_range")

  def __init__(self, encoder, num_classes: int, dropout_rate: float = 0.1,
               initializer_range: Optional[float] = None, **kwargs):
    if not isinstance(encoder, AlbertEncoder):
      raise ValueError("early exit runs an AlbertEncoder's layers, received "
                       f"{type(encoder).__name__}")
    early_exit_encoder.check_loopable(encoder.config)
    if initializer_range is None:
      initializer_range = encoder.config.initializer_range
    kwargs.setdefault("name", "albert_early_exit_classifier")
    super().__init__(**kwargs)
    self.encoder = encoder
    self.num_classes = num_classes
    self.dropout_rate = dropout_rate
    self.initializer_range = initializer_range
    self.num_layers = encoder.config.num_hidden_layers
    hidden = encoder.config.hidden_size
    init = tf_keras.initializers.TruncatedNormal(stddev=initializer_range)
    self.dropout = CheckpointedDropout(dropout_rate, dtype="float32")
    self.head_kernel = self.add_weight(
        "exit_heads/kernel", [self.num_layers, hidden, num_classes],
        tf.float32, init)  # (L, H, C)
    self.head_bias = self.add_weight(
        "exit_heads/bias", [self.num_layers, num_classes], tf.float32,
        "zeros")  # (L, C)

  def _heads(self, pooled, training):
    """pooled float32 [..., L, H] -> logits [..., L, C]."""
    pooled = self.dropout(tf.cast(pooled, tf.float32), training=training)
    return tf.einsum("...lh,lhc->...lc", pooled, self.head_kernel) + (
        self.head_bias)

  def call(self, inputs, training=None):
    pooled = early_exit_encoder.per_layer_pooled(self.encoder, inputs,
                                                 training)  # (B, L, H)
    all_logits = self._heads(pooled, training)  # (B, L, C)
    return dict(logits=all_logits[:, -1, :], all_logits=all_logits)

  def packed_call(self, features, training=None):
    """Every example slot's outputs of a packed batch: logits
    [rows * slots, C], all_logits [rows * slots, L, C]."""
    inputs = _packed_inputs(features)
    pooled = early_exit_encoder.per_layer_pooled(
        self.encoder, inputs, training,
        cls_positions=features[EXAMPLE_STARTS])  # (R, K, L, H)
    all_logits = tf.reshape(self._heads(pooled, training),
                            [-1, self.num_layers, self.num_classes])
    return dict(logits=all_logits[:, -1, :], all_logits=all_logits)

  def early_exit(self, inputs, patience, threshold=EXIT_THRESHOLD,
                 max_layers=None, compact: bool = True,
                 branches: bool = True):
    """Each example at its own exit (see the class docstring and
    early_exit_encoder.early_exit for compact and branches)."""
    return early_exit_encoder.early_exit(
        self.encoder, self.head_kernel, self.head_bias, inputs, patience,
        threshold, regression=self.num_classes == 1, max_layers=max_layers,
        compact=compact, branches=branches)

  def loss(self, labels, outputs):
    """PABEE's per-example loss (see `early_exit_loss`)."""
    return early_exit_loss(labels, outputs, self.num_classes == 1)


def early_exit_loss(labels, outputs, regression: bool) -> tf.Tensor:
  """PABEE's loss: sum_j j * L_j / sum_j j over the L applications.

  Args:
    labels: int [batch] classes, or float [batch] regression targets.
    outputs: the model's, with all_logits float [batch, L, C].
    regression: L_j is the squared error of all_logits[:, j, 0], else
      the softmax cross entropy.

  Returns:
    float32 [batch].
  """
  all_logits = tf.cast(outputs["all_logits"], tf.float32)  # (B, L, C)
  layers = all_logits.shape[1]
  if regression:
    target = tf.cast(labels, tf.float32)[:, tf.newaxis]
    losses = tf.square(all_logits[:, :, 0] - target)  # (B, L)
  else:
    target = tf.tile(tf.cast(labels, tf.int32)[:, tf.newaxis], [1, layers])
    losses = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=target, logits=all_logits)  # (B, L)
  weights = tf.range(1, layers + 1, dtype=tf.float32)
  return tf.reduce_sum(losses * weights, axis=1) / tf.reduce_sum(weights)


def _packed_inputs(features):
  """The encoder inputs of packed rows (as packed_pooled_output builds
  them): block-diagonal attention mask, positions restarting per example."""
  slots = features[EXAMPLE_SLOT_IDS]  # (R, S)
  same = tf.equal(slots[:, :, tf.newaxis], slots[:, tf.newaxis, :])
  mask = tf.logical_and(same, slots[:, tf.newaxis, :] > 0)  # (R, S, S)
  return {INPUT_WORD_IDS: features[INPUT_WORD_IDS],
          INPUT_TYPE_IDS: features[INPUT_TYPE_IDS],
          INPUT_POSITIONS: features[INPUT_POSITIONS],
          INPUT_MASK: tf.cast(mask, tf.int32)}
