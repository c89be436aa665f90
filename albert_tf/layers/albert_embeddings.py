"""Factorized embeddings: a V x E word table projected up to hidden width H."""

import tensorflow as tf
import tf_keras

from albert_tf.layers import shared_block
from albert_tf.layers.checkpointed_dropout import CheckpointedDropout


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class AlbertEmbeddings(tf_keras.layers.Layer):
  """Word + position + token-type embeddings, LayerNorm, dropout, E -> H.

  As the official model: the three E-wide embeddings are summed, normalised
  (epsilon 1e-12, in float32) and dropped out, then projected to H (the
  `embedding_hidden_mapping_in` dense) when E != H. The one form of this
  arithmetic: three gathers, then 2-D rows [batch * seq, E] through
  layers/shared_block.py's LayerNorm and MatMul (every way to run the
  encoder calls this layer). Dropout only with a Python-true `training`
  (shared_block.is_training).

  Args:
    vocab_size: int, rows V of the word table.
    embedding_size: int, embedding width E.
    hidden_size: int, output width H.
    max_position_embeddings: int, rows of the position table.
    type_vocab_size: int, rows of the token-type table.
    initializer_range: float, stddev of the truncated-normal initializers.
    dropout_rate: float, dropout after the LayerNorm.

  Call args:
    word_ids: int32 [batch, seq].
    type_ids: int32 [batch, seq].
    position_ids: optional int32 [batch, seq], each token's position (packed
      rows restart it at every example); default 0..seq-1 in every row.
    training: bool, enables dropout.

  Returns:
    float [batch, seq, H] in the layer's compute dtype.
  """

  def __init__(self, vocab_size, embedding_size, hidden_size,
               max_position_embeddings, type_vocab_size, initializer_range,
               dropout_rate=0.0, **kwargs):
    super().__init__(**kwargs)
    self.vocab_size = vocab_size
    self.embedding_size = embedding_size
    self.hidden_size = hidden_size
    self.max_position_embeddings = max_position_embeddings
    self.type_vocab_size = type_vocab_size
    self.initializer_range = initializer_range
    self.dropout_rate = dropout_rate

    def init():
      return tf_keras.initializers.TruncatedNormal(stddev=initializer_range)

    self.word_embeddings = tf_keras.layers.Embedding(
        vocab_size, embedding_size, embeddings_initializer=init(),
        dtype=self.dtype_policy, name="word_embeddings")
    self.token_type_embeddings = tf_keras.layers.Embedding(
        type_vocab_size, embedding_size, embeddings_initializer=init(),
        dtype=self.dtype_policy, name="token_type_embeddings")
    self.layer_norm = tf_keras.layers.LayerNormalization(
        epsilon=1e-12, dtype="float32", name="layer_norm")
    self.dropout = CheckpointedDropout(dropout_rate, dtype=self.dtype_policy)
    self.projection = None
    if embedding_size != hidden_size:
      self.projection = tf_keras.layers.Dense(
          hidden_size, kernel_initializer=init(), dtype=self.dtype_policy,
          name="embedding_projection")

  def build(self, input_shape):
    """Creates the position table, then the variables the word and type
    Embeddings, the LayerNormalization and the projection create on a
    first call, under the same names: `call` reads them, it does not call
    those layers."""
    self.position_embeddings = self.add_weight(
        "position_embeddings",
        shape=[self.max_position_embeddings, self.embedding_size],
        initializer=tf_keras.initializers.TruncatedNormal(
            stddev=self.initializer_range))
    rows = [None, self.embedding_size]
    for layer, shape in ((self.word_embeddings, [None, None]),
                         (self.token_type_embeddings, [None, None]),
                         (self.layer_norm, rows), (self.projection, rows)):
      if layer is not None and not layer.built:
        with tf.name_scope(layer.name):
          layer.build(shape)
    super().build(input_shape)

  @property
  def embedding_table(self):
    """The word table [V, E]; the masked-LM decoder is tied to it."""
    return self.word_embeddings.embeddings

  def check_length(self, word_ids) -> None:
    """ValueError if word_ids' static sequence length exceeds the position
    table."""
    seq_length = word_ids.shape[1]
    if seq_length is not None and seq_length > self.max_position_embeddings:
      raise ValueError(
          f"sequence length {seq_length} exceeds max_position_embeddings "
          f"({self.max_position_embeddings})")

  def call(self, word_ids, type_ids, position_ids=None, training=None):
    self.check_length(word_ids)
    dtype = self.compute_dtype
    shape = tf.shape(word_ids)
    batch, seq = shape[0], shape[1]
    if position_ids is None:
      positions = self.position_embeddings[:seq][tf.newaxis]  # (1, S, E)
    else:
      positions = tf.gather(self.position_embeddings, position_ids)
    x = (tf.cast(tf.gather(self.word_embeddings.embeddings, word_ids), dtype)
         + tf.cast(tf.gather(self.token_type_embeddings.embeddings,
                             type_ids), dtype)
         + tf.cast(positions, dtype))  # (B, S, E)
    # 2-D rows from here: the LayerNorm and the projection's one MatMul +
    # BiasAdd (layers/shared_block.py).
    x = tf.reshape(x, [-1, self.embedding_size])  # (B*S, E)
    x = tf.cast(shared_block.layer_norm(self.layer_norm, x), dtype)
    x = shared_block.dropout_rows(self.dropout, x, batch, seq,
                                  self.embedding_size, training)
    if self.projection is not None:
      x = shared_block.dense(x, tf.cast(self.projection.kernel, dtype),
                             tf.cast(self.projection.bias, dtype))
    return tf.reshape(x, [batch, seq, self.hidden_size])  # (B, S, H)

  def get_config(self):
    config = super().get_config()
    config.update(
        vocab_size=self.vocab_size,
        embedding_size=self.embedding_size,
        hidden_size=self.hidden_size,
        max_position_embeddings=self.max_position_embeddings,
        type_vocab_size=self.type_vocab_size,
        initializer_range=self.initializer_range,
        dropout_rate=self.dropout_rate)
    return config
