"""Keras 3 (`import keras`) code: loading our exports and keras-hub presets.

Everything else in albert_tf is Keras 2 (`tf_keras`); the two Keras
libraries are kept in separate modules and no tf_keras module imports these.

Importing this package registers `OfficialAlbertTokenizer` with Keras, which
our keras-hub presets name: `import albert_tf.keras3` before `from_preset`.

May import: data_pipeline.tokenization, albert_common (Keras 3 and
keras-hub; never tf_keras code of albert_tf).
"""

from albert_tf.keras3.official_albert_tokenizer import OfficialAlbertTokenizer

__all__ = ["OfficialAlbertTokenizer"]
