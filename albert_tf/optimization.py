"""Optimizers and learning-rate schedule for ALBERT, from tf-models-official.

LAMB (`official.modeling.optimization.lamb.LAMB`, the port of the
tensorflow-addons optimizer) configured as the official ALBERT recipe, and
AdamW (`legacy_adamw.AdamWeightDecay`, BERT's optimizer) as the alternative.

Two differences from google-research/albert's own `lamb_optimizer.py`, both
from the library we reuse: Adam bias correction is applied (the official
ALBERT LAMB omits it), and the warmup ramps to the decayed rate at the end of
warmup rather than to `learning_rate` itself (a continuous schedule; the
official one drops by a factor (1 - warmup/total)^poly_power at the end of
warmup).

Gradient clipping is not done by the optimizer: the training step all-reduces
the gradients across replicas, clips them to global norm 1.0, and calls
`apply_gradients(..., experimental_aggregate_gradients=False)`.
"""

from official.modeling.optimization import lamb
from official.modeling.optimization import legacy_adamw
from official.modeling.optimization import lr_schedule
import tf_keras

from albert_common.errors import UserInputError
from albert_common.run_constants import OPTIMIZERS

# Regexes (searched in variable names) as the official recipe; they match our
# `.../layer_norm/gamma|beta`, every `bias` and the MLM `output_bias`.
EXCLUDE_FROM_WEIGHT_DECAY = ("LayerNorm", "layer_norm", "bias")


def learning_rate_schedule(
    learning_rate: float, num_train_steps: int, num_warmup_steps: int = 0,
    poly_power: float = 1.0
) -> tf_keras.optimizers.schedules.LearningRateSchedule:
  """Linear warmup over `num_warmup_steps`, then polynomial decay to 0.

  lr(step) = step / warmup * decay(warmup) while step < warmup, and
  decay(step) = learning_rate * (1 - step / num_train_steps) ** poly_power
  afterwards.
  """
  if num_train_steps <= 0:
    raise UserInputError(
        f"--num_train_steps must be positive, got {num_train_steps}")
  if not 0 <= num_warmup_steps < num_train_steps:
    raise UserInputError(
        f"--num_warmup_steps ({num_warmup_steps}) must be in "
        f"[0, num_train_steps={num_train_steps})")
  decay = tf_keras.optimizers.schedules.PolynomialDecay(
      initial_learning_rate=learning_rate, decay_steps=num_train_steps,
      end_learning_rate=0.0, power=poly_power)
  if num_warmup_steps == 0:
    return decay
  return lr_schedule.PolynomialWarmUp(decay, warmup_steps=num_warmup_steps,
                                      power=1.0)


def create_optimizer(optimizer: str, learning_rate: float,
                     num_train_steps: int, num_warmup_steps: int = 0,
                     poly_power: float = 1.0, weight_decay_rate: float = 0.01,
                     beta_1: float = 0.9, beta_2: float = 0.999,
                     epsilon: float = 1e-6):
  """LAMB or AdamW with ALBERT's hyperparameters and schedule.

  Args:
    optimizer: "lamb" or "adamw".
    learning_rate: peak learning rate.
    num_train_steps, num_warmup_steps, poly_power: see learning_rate_schedule.
    weight_decay_rate: decoupled weight decay, not applied to LayerNorm and
      bias variables (nor, for LAMB, their layer adaptation).
    beta_1, beta_2, epsilon: Adam moments.

  Returns:
    A tf_keras legacy optimizer; its `iterations` is the global step.
  """
  schedule = learning_rate_schedule(learning_rate, num_train_steps,
                                    num_warmup_steps, poly_power)
  if optimizer == "lamb":
    return lamb.LAMB(
        learning_rate=schedule, beta_1=beta_1, beta_2=beta_2, epsilon=epsilon,
        weight_decay_rate=weight_decay_rate,
        exclude_from_weight_decay=list(EXCLUDE_FROM_WEIGHT_DECAY),
        exclude_from_layer_adaptation=list(EXCLUDE_FROM_WEIGHT_DECAY))
  if optimizer == "adamw":
    return legacy_adamw.AdamWeightDecay(
        learning_rate=schedule, beta_1=beta_1, beta_2=beta_2, epsilon=epsilon,
        weight_decay_rate=weight_decay_rate,
        exclude_from_weight_decay=list(EXCLUDE_FROM_WEIGHT_DECAY),
        gradient_clip_norm=0.0)
  raise UserInputError(f"--optimizer must be one of {OPTIMIZERS}, "
                       f"got {optimizer!r}")
