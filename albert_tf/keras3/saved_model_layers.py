"""Our exported encoder and preprocessor as Keras 3 layers (TFSMLayer).

    import keras
    from albert_tf.keras3 import saved_model_layers

    preprocess = saved_model_layers.preprocessor_layer("export/preprocessor")
    encoder = saved_model_layers.encoder_layer("export/encoder")
    text = keras.Input(shape=(), dtype="string")
    pooled = encoder(preprocess(text))["pooled_output"]
    model = keras.Model(text, keras.layers.Dense(2)(pooled))
    model.compile(keras.optimizers.Adam(2e-5), ...)   # fine-tunes the encoder

`encoder_layer` calls the export's `call_inference` endpoint, and
`call_training` (dropout on) when Keras trains (see
albert_tf.exports.endpoints).

Why not plain `keras.layers.TFSMLayer`: a Keras 3 bug (seen in 3.15.1).
TFSMLayer wraps each SavedModel variable in a Keras variable named
`tf_variable.name.replace("/", "_")`, which keeps TensorFlow's ":0" suffix
(e.g. "embeddings_word_embeddings_embeddings:0"). An optimizer with slot
variables names them `f"{variable.path}_momentum"` (BaseOptimizer.
add_variable_from_reference strips ":" only for variables without a
`path`), and creating one opens a name scope, which rejects ":": fit fails
with "'embeddings_word_embeddings_embeddings:0_momentum' is not a valid
scope name". That hits every SavedModel and every optimizer with state
(Adam, AdamW, SGD with momentum, RMSprop, ...); plain SGD works.
`TrainableTFSMLayer` names the Keras variables without the suffix, which is
the whole fix.
"""

import keras


@keras.saving.register_keras_serializable(package="albert_tf")
class TrainableTFSMLayer(keras.layers.TFSMLayer):
  """`keras.layers.TFSMLayer` whose weights any Keras optimizer can train.

  Same arguments as `keras.layers.TFSMLayer` (filepath, call_endpoint,
  call_training_endpoint, trainable, name, dtype).
  """

  def _add_existing_weight(self, weight):
    # As TFSMLayer's, without the ":0" that makes optimizer slot names invalid.
    variable = keras.Variable(
        initializer=weight, trainable=weight.trainable, dtype=weight.dtype,
        shape=weight.shape,
        name=weight.name.split(":")[0].replace("/", "_"))
    self._track_variable(variable)


def encoder_layer(path: str, trainable: bool = True,
                  name: str = "albert_encoder") -> TrainableTFSMLayer:
  """`<export_dir>/encoder` as a Keras 3 layer.

  Call: dict of int32 [batch, seq] `input_word_ids`, `input_mask`,
  `input_type_ids` -> dict `sequence_output` [batch, seq, H], `pooled_output`
  [batch, H], `default`, `encoder_outputs` (list of [batch, seq, H]).
  Dropout acts only when Keras calls it with training=True (in `fit`).
  """
  return TrainableTFSMLayer(path, call_endpoint="call_inference",
                            call_training_endpoint="call_training",
                            trainable=trainable, name=name)


def preprocessor_layer(path: str, two_segments: bool = False,
                       name: str = "albert_preprocessor") -> TrainableTFSMLayer:
  """`<export_dir>/preprocessor` as a Keras 3 layer (no trainable weights).

  Call: tf.string [batch] -> the encoder's input dict; with `two_segments`,
  dict `text_a`, `text_b` (tf.string [batch]) -> the packed pair.
  """
  return TrainableTFSMLayer(
      path, call_endpoint="two_segments" if two_segments else "call_inference",
      trainable=False, name=name)
