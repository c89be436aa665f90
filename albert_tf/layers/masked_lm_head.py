"""Masked-LM head with the decoder tied to the word-embedding table."""

import tensorflow as tf
import tf_keras

from albert_tf.layers.activations import get_activation


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class MaskedLMHead(tf_keras.layers.Layer):
  """Scores the vocabulary at the masked positions only.

  As the official `cls/predictions`: dense H -> E with `hidden_act`,
  LayerNorm, then logits = x @ word_embeddings^T + output_bias. Gathering the
  P masked positions first keeps the V-wide matmul at [B*P, V] instead of
  [B*S, V].

  Args:
    embedding_layer: the encoder's AlbertEmbeddings; its word table [V, E] is
      the (tied) decoder.
    hidden_act: str, AlbertConfig activation name of the transform.
    initializer_range: float, stddev of the truncated-normal kernel.

  Call args:
    sequence_output: float [batch, seq, H].
    masked_lm_positions: int32 [batch, P]; None when `sequence_output` is
      already the [batch, P, H] rows at those positions.

  Returns:
    float32 logits [batch, P, V].
  """

  def __init__(self, embedding_layer, hidden_act="gelu",
               initializer_range=0.02, **kwargs):
    super().__init__(**kwargs)
    self.embedding_layer = embedding_layer
    self.hidden_act = hidden_act
    self.initializer_range = initializer_range
    self.transform = tf_keras.layers.Dense(
        embedding_layer.embedding_size,
        activation=get_activation(hidden_act),
        kernel_initializer=tf_keras.initializers.TruncatedNormal(
            stddev=initializer_range),
        dtype=self.dtype_policy, name="transform")
    self.layer_norm = tf_keras.layers.LayerNormalization(
        epsilon=1e-12, dtype="float32", name="layer_norm")

  def build(self, input_shape):
    self.output_bias = self.add_weight(
        "output_bias", shape=[self.embedding_layer.vocab_size],
        initializer="zeros")
    super().build(input_shape)

  def call(self, sequence_output, masked_lm_positions=None):
    x = sequence_output
    if masked_lm_positions is not None:
      x = tf.gather(x, tf.cast(masked_lm_positions, tf.int32),
                    batch_dims=1)  # (B, P, H)
    x = self.layer_norm(self.transform(x))  # (B, P, E)
    x = tf.cast(x, self.compute_dtype)
    table = tf.cast(self.embedding_layer.embedding_table, self.compute_dtype)
    logits = tf.einsum("bpe,ve->bpv", x, table)  # (B, P, V)
    return tf.cast(logits, tf.float32) + tf.cast(self.output_bias, tf.float32)

  def get_config(self):
    config = super().get_config()
    config.update(
        embedding_layer=tf_keras.layers.serialize(self.embedding_layer),
        hidden_act=self.hidden_act,
        initializer_range=self.initializer_range)
    return config

  @classmethod
  def from_config(cls, config):
    config = dict(config)
    config["embedding_layer"] = tf_keras.layers.deserialize(
        config["embedding_layer"])
    return cls(**config)
