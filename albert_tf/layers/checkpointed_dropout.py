"""Dropout whose random state is saved in checkpoints."""

import contextlib
import threading

import tensorflow as tf
import tf_keras
from tf_keras.src.saving.legacy.saved_model import save_impl
from tf_keras.src.utils import control_flow_util

# The seed of the innermost `seeded` scope of this thread and its next index.
_scope = threading.local()


@contextlib.contextmanager
def seeded(seed):
  """Inside, each CheckpointedDropout call draws a stateless mask.

  The k-th dropout call (rate > 0) inside the scope draws its mask from
  `fold_in(seed, k)`: running the same code again under the same seed draws
  the same masks, as a recomputed forward pass must
  (networks/training_graph.py). Outside any scope, or with `seed` None,
  dropout draws from its checkpointed generator as before.

  Args:
    seed: int64 [2] tensor (e.g. `Generator.make_seeds(1)[:, 0]`), or None.
  """
  previous = getattr(_scope, "state", None)
  _scope.state = None if seed is None else [seed, 0]
  try:
    yield
  finally:
    _scope.state = previous


def _next_seed():
  """The seed of the next dropout call in the current scope, or None.

  None while Keras traces layer call functions for a SavedModel: it traces
  each sublayer's call on its own, where the encoder's seed (a tensor of
  the enclosing trace) cannot be saved; an export needs no recomputed
  masks."""
  state = getattr(_scope, "state", None)
  if state is None or save_impl.tracing_enabled():
    return None
  seed, index = state
  state[1] = index + 1
  return tf.random.experimental.stateless_fold_in(seed, index)


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class CheckpointedDropout(tf_keras.layers.Dropout):
  """`tf_keras.layers.Dropout` drawing from a checkpointed tf.random.Generator.

  Keras keeps a layer's random generator out of checkpoints, so a resumed run
  would draw different dropout masks than an uninterrupted one. Holding the
  generator as an attribute puts its state variable in the checkpoint. With
  rate 0 (ALBERT v2 pretraining) no generator is made.

  Inside a `seeded(seed)` scope the mask is stateless (a function of the
  scope's seed and the call's index in the scope); the encoder draws that
  seed from this generator, so resumed runs still draw the same masks.

  Args:
    rate: float in [0, 1), as Dropout.
  """

  def __init__(self, rate, **kwargs):
    kwargs.pop("rng_type", None)
    super().__init__(rate, force_generator=rate > 0, **kwargs)
    if rate > 0:
      self._random_generator._maybe_init()
      self.rng = self._random_generator._generator

  def call(self, inputs, training=None):
    seed = _next_seed() if self.rate > 0 else None
    if seed is None:
      return super().call(inputs, training=training)
    if training is None:
      training = tf_keras.backend.learning_phase()

    noise_shape = self._get_noise_shape(inputs)
    if noise_shape is None:
      noise_shape = tf.shape(inputs)

    def dropped():
      uniform = tf.random.stateless_uniform(noise_shape, seed)  # float32
      keep = tf.cast(uniform >= self.rate, inputs.dtype)
      return inputs * keep * tf.cast(1.0 / (1.0 - self.rate), inputs.dtype)

    return control_flow_util.smart_cond(training, dropped,
                                        lambda: tf.identity(inputs))
