"""Activation functions named as in albert_config.json `hidden_act`."""

import tensorflow as tf
import tf_keras


@tf_keras.utils.register_keras_serializable(package="albert_tf")
def gelu_tanh(x):
  """GELU, tanh approximation: the official ALBERT `gelu`.

  0.5 * x * (1 + tanh(c * (x + 0.044715 x^3))) written as
  x * sigmoid(2c * x * (1 + 0.044715 x^2)), the same function (0.5 * (1 +
  tanh(z)) = sigmoid(2z)) in fewer elementwise ops. (Measured on CPU, the
  two forms give the same step time: benchmarks/investigations/ablations.py.)
  """
  return x * tf.math.sigmoid(
      x * (1.5957691216057308 + 0.07135481627260025 * tf.math.square(x)))


@tf_keras.utils.register_keras_serializable(package="albert_tf")
def gelu_exact(x):
  """GELU with the exact erf (Hugging Face's `gelu`)."""
  return tf_keras.activations.gelu(x, approximate=False)


BY_NAME = {
    "gelu": gelu_tanh,
    "gelu_new": gelu_tanh,
    "gelu_pytorch_tanh": gelu_tanh,
    "gelu_exact": gelu_exact,
    "relu": tf.nn.relu,
    "tanh": tf.math.tanh,
    "linear": tf.identity,
}


def get_activation(name: str):
  """The function for a `hidden_act` name; see AlbertConfig.ACTIVATIONS."""
  try:
    return BY_NAME[name]
  except KeyError:
    raise ValueError(f"unknown hidden_act {name!r}; expected one of "
                     f"{sorted(BY_NAME)}") from None
