"""get_config / from_config shared by the models that wrap an encoder."""

import tf_keras


class EncoderModelConfig:
  """Keras config for a model built as `cls(encoder, **hyperparameters)`.

  A subclass names the constructor arguments it stores as attributes of the
  same name in `CONFIG_KEYS`; the encoder is serialized with its own config.
  Put this class before `tf_keras.Model` in the bases.
  """

  CONFIG_KEYS = ()

  def get_config(self):
    config = dict(encoder=tf_keras.layers.serialize(self.encoder),
                  name=self.name)
    config.update({key: getattr(self, key) for key in self.CONFIG_KEYS})
    return config

  @classmethod
  def from_config(cls, config, custom_objects=None):
    config = dict(config)
    config["encoder"] = tf_keras.layers.deserialize(
        config["encoder"], custom_objects=custom_objects)
    return cls(**config)
