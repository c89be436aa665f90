"""Reloading an export: `tf.saved_model.load` or `hub.KerasLayer`, checked.

Both register the tensorflow-text ops the preprocessor (and every raw-text
serving export) needs, as `import tensorflow_text` would, and name a path
that holds no SavedModel in one clear error instead of a TensorFlow trace.
"""

from typing import Optional

import tensorflow as tf

from albert_common.errors import UserInputError


def _check_saved_model(path: str) -> None:
  """Raises UserInputError unless `path` is a SavedModel; registers the
  tensorflow-text ops the preprocessor needs (as `import tensorflow_text`)."""
  # Registers the ops the preprocessor's graph uses.
  import tensorflow_text  # noqa: F401
  if not tf.saved_model.contains_saved_model(path):
    raise UserInputError(
        f"{path} is not a SavedModel (no saved_model.pb); expected "
        "<export_dir>/encoder or <export_dir>/preprocessor written by "
        "python -m tools.export_savedmodel")


def load_saved_model(path: str):
  """tf.saved_model.load with a clear error for a path that is not one.

  Example: a tiny encoder exported (export_savedmodel), then its
  preprocessor and encoder reloaded; raw text in, the encoder's outputs
  equal the model's.

  >>> import os, tempfile
  >>> import numpy as np
  >>> import tensorflow as tf
  >>> from albert_tf import AlbertConfig, AlbertEncoder
  >>> from albert_tf.exports import export_savedmodel
  >>> config = AlbertConfig(vocab_size=100, embedding_size=16, hidden_size=32,
  ...                       num_hidden_layers=2, num_attention_heads=2,
  ...                       intermediate_size=64, max_position_embeddings=8)
  >>> encoder = AlbertEncoder(config)
  >>> folder = tempfile.mkdtemp()
  >>> prefix = tf.train.Checkpoint(encoder=encoder).write(
  ...     os.path.join(folder, "ckpt"))
  >>> vocab_file = os.path.join(folder, "vocab.txt")  # a WordPiece vocabulary
  >>> with open(vocab_file, "w") as f:
  ...   _ = f.write("\\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
  ...                           "hello", "world", "##s", "!"]))
  >>> export_dir = os.path.join(folder, "export")
  >>> _ = export_savedmodel(config, prefix, None, export_dir,
  ...                       vocab_file=vocab_file, seq_length=8)
  >>> from albert_tf.exports import load_saved_model
  >>> sorted(os.listdir(export_dir))
  ['encoder', 'preprocessor']
  >>> preprocessor = load_saved_model(os.path.join(export_dir, "preprocessor"))
  >>> inputs = preprocessor(tf.constant(["Hello worlds!"]))
  >>> inputs["input_word_ids"].numpy()  # [CLS] hello world ##s ! [SEP]
  array([[2, 5, 6, 7, 8, 3, 0, 0]], dtype=int32)
  >>> reloaded = load_saved_model(os.path.join(export_dir, "encoder"))
  >>> outputs = reloaded(inputs, training=False)
  >>> outputs["sequence_output"].shape
  TensorShape([1, 8, 32])
  >>> np.allclose(outputs["pooled_output"], encoder(inputs)["pooled_output"],
  ...             atol=1e-5)
  True
  >>> load_saved_model(folder)  # doctest: +ELLIPSIS
  Traceback (most recent call last):
  ...
  albert_common.errors.UserInputError: ... is not a SavedModel ...
  """
  _check_saved_model(path)
  return tf.saved_model.load(path)


def hub_layer(path: str, trainable: bool = False,
              signature: Optional[str] = None, **kwargs):
  """hub.KerasLayer for an exported encoder or preprocessor, checked first.

  Example: a tiny encoder exported (export_savedmodel), then fine-tunable
  as a Keras layer.

  >>> import os, tempfile
  >>> import numpy as np
  >>> import tensorflow as tf
  >>> from albert_tf import AlbertConfig, AlbertEncoder
  >>> from albert_tf.exports import export_savedmodel
  >>> config = AlbertConfig(vocab_size=100, embedding_size=16, hidden_size=32,
  ...                       num_hidden_layers=2, num_attention_heads=2,
  ...                       intermediate_size=64, max_position_embeddings=8)
  >>> encoder = AlbertEncoder(config)
  >>> folder = tempfile.mkdtemp()
  >>> prefix = tf.train.Checkpoint(encoder=encoder).write(
  ...     os.path.join(folder, "ckpt"))
  >>> vocab_file = os.path.join(folder, "vocab.txt")  # a WordPiece vocabulary
  >>> with open(vocab_file, "w") as f:
  ...   _ = f.write("\\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
  ...                           "hello", "world", "##s", "!"]))
  >>> export_dir = os.path.join(folder, "export")
  >>> _ = export_savedmodel(config, prefix, None, export_dir,
  ...                       vocab_file=vocab_file, seq_length=8)
  >>> from albert_tf.exports import hub_layer
  >>> preprocess = hub_layer(os.path.join(export_dir, "preprocessor"))
  >>> layer = hub_layer(os.path.join(export_dir, "encoder"), trainable=True)
  >>> outputs = layer(preprocess(tf.constant(["hello world", "worlds"])))
  >>> outputs["pooled_output"].shape
  TensorShape([2, 32])
  >>> len(layer.trainable_variables) == len(encoder.trainable_variables)
  True
  """
  import tensorflow_hub as hub
  _check_saved_model(path)
  if signature:
    kwargs.update(signature=signature, signature_outputs_as_dict=True)
  return hub.KerasLayer(path, trainable=trainable, **kwargs)
