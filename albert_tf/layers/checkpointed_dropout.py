"""Dropout whose random state is saved in checkpoints."""

import tf_keras


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class CheckpointedDropout(tf_keras.layers.Dropout):
  """`tf_keras.layers.Dropout` drawing from a checkpointed tf.random.Generator.

  Keras keeps a layer's random generator out of checkpoints, so a resumed run
  would draw different dropout masks than an uninterrupted one. Holding the
  generator as an attribute puts its state variable in the checkpoint. With
  rate 0 (ALBERT v2 pretraining) no generator is made.

  Args:
    rate: float in [0, 1), as Dropout.
  """

  def __init__(self, rate, **kwargs):
    kwargs.pop("rng_type", None)
    super().__init__(rate, force_generator=rate > 0, **kwargs)
    if rate > 0:
      self._random_generator._maybe_init()
      self.rng = self._random_generator._generator
