"""Precision: `--dtype` -> the encoder's Keras dtype policy, and float16's
loss scaling; the same for pretraining and fine-tuning."""

import tensorflow as tf
import tf_keras

# --dtype (albert_common.run_constants.DTYPES) -> the Keras dtype policy of
# the encoder (None: float32). Mixed policies keep float32 variables and
# compute in 16 bits.
DTYPE_POLICIES = {"float32": None, "bfloat16": "mixed_bfloat16",
                  "float16": "mixed_float16"}


def with_loss_scaling(optimizer, dtype: str):
  """`optimizer`, wrapped in a dynamic LossScaleOptimizer for float16 (whose
  small gradients would underflow). Build inside the strategy's scope."""
  if dtype == "float16":
    return tf_keras.mixed_precision.LossScaleOptimizer(optimizer)
  return optimizer


def is_loss_scaled(optimizer) -> bool:
  return isinstance(optimizer, tf_keras.mixed_precision.LossScaleOptimizer)


def scaled_loss(optimizer, loss: tf.Tensor) -> tf.Tensor:
  """The loss to differentiate: multiplied by the loss scale if any."""
  return optimizer.get_scaled_loss(loss) if is_loss_scaled(optimizer) else loss
