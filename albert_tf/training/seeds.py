"""One --seed in [0, 2**63) for Python, NumPy, TensorFlow and tf_keras."""

import random

import tensorflow as tf
import tf_keras

# TensorFlow reduces its global seed modulo 2**31 - 1 and treats a result of 0
# specially, with a Python comparison that a tensor-valued op seed (the data
# stream's per-group shuffle seeds) cannot take inside a graph. Seeds of that
# class (0, 2**31 - 1, ...) are handed to TensorFlow as this one instead.
_TF_SEED_MODULUS = 2**31 - 1
_TF_SEED_FOR_ZERO_CLASS = _TF_SEED_MODULUS - 1


def set_global_seeds(seed: int) -> None:
  """Seeds Python, NumPy, TensorFlow and tf_keras (initialisation, dropout)
  from one --seed in [0, 2**63).

  `tf_keras.utils.set_random_seed` alone refuses NumPy seeds of 2**32 and
  above, and its TensorFlow seed 0 breaks tensor seeds; but it is called
  first, because it also restarts the generator tf_keras draws unseeded
  layers' seeds from. Left alone, a generator an earlier
  `set_random_seed` call made in the process keeps running, and a second
  run (a resume in a notebook, a test after another) draws other dropout
  seeds than the first.
  """
  tf_keras.utils.set_random_seed(seed % 2**32)
  random.seed(seed)
  tf.random.set_seed(seed % _TF_SEED_MODULUS or _TF_SEED_FOR_ZERO_CLASS)
