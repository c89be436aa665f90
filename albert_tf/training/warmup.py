"""The one rule for a warmup the user left unset but the steps do not fit.

Pretraining (--num_warmup_steps of --num_train_steps) and fine-tuning
(--warmup_step of --train_step) both keep their default schedule's warmup
share when the user shortens the run below the default warmup; a value the
user set is never changed (a conflict stays an error). TensorFlow-free.
"""

from absl import logging


def scaled_warmup(train_steps: int, fraction: float, warmup_flag: str,
                  steps_flag: str, source: str) -> int:
  """`fraction` of `train_steps` (rounded down), logged once as
  "using --<warmup_flag>=N (P% of --<steps_flag>, as the <source>)"."""
  warmup = int(train_steps * fraction)
  logging.info("using --%s=%d (%.3g%% of --%s, as the %s)", warmup_flag,
               warmup, 100 * fraction, steps_flag, source)
  return warmup
