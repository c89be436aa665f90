"""Activation functions named as in albert_config.json `hidden_act`."""

import tensorflow as tf
import tf_keras


@tf_keras.utils.register_keras_serializable(package="albert_tf")
def gelu_tanh(x):
  """GELU, tanh approximation: the official ALBERT `gelu`."""
  return tf_keras.activations.gelu(x, approximate=True)


@tf_keras.utils.register_keras_serializable(package="albert_tf")
def gelu_exact(x):
  """GELU with the exact erf (Hugging Face's `gelu`)."""
  return tf_keras.activations.gelu(x, approximate=False)


_BY_NAME = {
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
    return _BY_NAME[name]
  except KeyError:
    raise ValueError(f"unknown hidden_act {name!r}; expected one of "
                     f"{sorted(_BY_NAME)}") from None
