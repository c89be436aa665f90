"""AlbertEncoder: factorized embeddings, shared transformer layers, pooler."""

from typing import Dict, Optional, Union

import tensorflow as tf
import tf_keras

from albert_common.encoder_inputs import ENCODER_INPUT_NAMES
from albert_common.encoder_inputs import EXAMPLE_SLOT_IDS
from albert_common.encoder_inputs import EXAMPLE_STARTS
from albert_common.encoder_inputs import INPUT_MASK
from albert_common.encoder_inputs import INPUT_POSITIONS
from albert_common.encoder_inputs import INPUT_TYPE_IDS
from albert_common.encoder_inputs import INPUT_WORD_IDS
from albert_tf.config import AlbertConfig
from albert_tf.layers.albert_embeddings import AlbertEmbeddings
from albert_tf.layers.attention_sublayer import AttentionSublayer
from albert_tf.layers.feed_forward_sublayer import FeedForwardSublayer
from albert_tf.networks import layer_loop


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class AlbertEncoder(tf_keras.Model):
  """The ALBERT encoder with the TF Hub BERT/ALBERT encoder interface.

  Layer l (0 <= l < L) applies `inner_group_num` blocks, each an attention
  sublayer then a feed-forward sublayer (post-LN). Which weights a layer uses
  follows `share_parameters`:
    "all": both sublayers come from group int(l * G / L), the official ALBERT
      (G = num_hidden_groups; G = 1 shares one block across all layers);
    "attention": attention from the group, feed-forward owned by layer l;
    "ffn": feed-forward from the group, attention owned by layer l;
    "none": every layer owns both (BERT).
  Each shared sublayer is built once and called as many times as it is used.

  Args:
    config: AlbertConfig (or its dict form, as stored by `get_config`).
    dtype: optional Keras dtype policy for every layer, e.g. "mixed_bfloat16";
      None uses the global policy. Softmax and LayerNorm always run in
      float32.
    fused_inference: bool, run the inference graph when not training (see
      below); False: the layers' ops always.
    recompute_layers: bool, when training, keep only each block's input for
      the backward pass and recompute the rest (networks/layer_loop.py):
      the same gradients for less memory and about one more forward pass.
      Not a key of albert_config.json.

  Inputs (dict, int32 [batch, seq]):
    input_word_ids, input_mask (1 = token, 0 = padding), input_type_ids.

  Outputs (dict):
    sequence_output: float32 [batch, seq, H], the last layer.
    pooled_output: float32 [batch, H], tanh dense on the first token.
    encoder_outputs: list of L float32 [batch, seq, H], one per layer.

  Called with `output_positions` (int32 [batch, P]), the encoder computes
  the last block only where pretraining reads it, [CLS] and those positions
  (every earlier block still runs over the whole sequence, being the keys
  and values of the next), and returns instead:
    pooled_output: float32 [batch, H], as above;
    sequence_output_at_positions: float32 [batch, P, H], equal to
      sequence_output gathered at output_positions.
  This skips most of a layer's work: for ALBERT-base at sequence 128 with
  20 predictions, about 70% of one of the 12 layers.

  Every path runs one block arithmetic (layers/shared_block.py): the
  Keras graph's sublayers call it, and `call` runs the one loop over the
  applications (networks/layer_loop.py) when not training in float32
  (serving signatures, `predict`, a reloaded SavedModel called with
  training=False: no Keras graph, one mask bias, 2-D rows throughout),
  when training with dropout or recomputation, and with
  `output_positions`. `fused_inference=False` keeps the Keras graph when
  not training (the outputs agree to 1e-5).

  Packed rows (several examples a row, data_pipeline.tasks.packing) run on
  the same path: `input_mask` may then be an attention mask int32
  [batch, seq, seq] (block-diagonal: each example attends to itself only)
  and `inputs` may hold `input_positions` int32 [batch, seq] (restarting at
  each example); `packed_pooled_output` builds both and reads every
  example's [CLS].

  Example:

  >>> import numpy as np
  >>> import tensorflow as tf
  >>> from albert_tf import AlbertConfig, AlbertEncoder
  >>> config = AlbertConfig(vocab_size=100, embedding_size=16, hidden_size=32,
  ...                       num_hidden_layers=2, num_attention_heads=2,
  ...                       intermediate_size=64, max_position_embeddings=8)
  >>> encoder = AlbertEncoder(config)
  >>> inputs = dict(input_word_ids=np.array([[2, 15, 16, 17, 3, 0, 0, 0]]),
  ...               input_mask=np.array([[1, 1, 1, 1, 1, 0, 0, 0]]),
  ...               input_type_ids=np.zeros((1, 8), np.int32))
  >>> outputs = encoder(inputs)
  >>> outputs["sequence_output"].shape, outputs["pooled_output"].shape
  (TensorShape([1, 8, 32]), TensorShape([1, 32]))
  >>> len(outputs["encoder_outputs"])  # one per layer
  2

  With `output_positions`, the last block only where pretraining reads:

  >>> at = encoder(inputs, output_positions=np.array([[1, 3]]))
  >>> at["sequence_output_at_positions"].shape
  TensorShape([1, 2, 32])
  >>> expected = tf.gather(outputs["sequence_output"], [1, 3], axis=1)
  >>> np.allclose(at["sequence_output_at_positions"], expected, atol=1e-5)
  True

  One block shared by every layer (share_parameters="all", one group): the
  trainable variables do not grow with the number of layers.

  >>> deeper = AlbertEncoder(AlbertConfig.from_dict(
  ...     dict(config.to_dict(), num_hidden_layers=4)))
  >>> len(deeper.trainable_variables) == len(encoder.trainable_variables)
  True
  """

  def __init__(self, config: Union[AlbertConfig, Dict],
               dtype: Optional[str] = None, fused_inference: bool = True,
               recompute_layers: bool = False, **kwargs):
    if not isinstance(config, AlbertConfig):
      config = AlbertConfig.from_dict(config)
    inputs = {
        name: tf_keras.Input(shape=(None,), dtype=tf.int32, name=name)
        for name in ENCODER_INPUT_NAMES
    }
    embedding_layer = AlbertEmbeddings(
        vocab_size=config.vocab_size,
        embedding_size=config.embedding_size,
        hidden_size=config.hidden_size,
        max_position_embeddings=config.max_position_embeddings,
        type_vocab_size=config.type_vocab_size,
        initializer_range=config.initializer_range,
        dropout_rate=config.hidden_dropout_prob,
        dtype=dtype,
        name="embeddings")
    sublayers = _build_sublayers(
        config, "attention", lambda name: AttentionSublayer(
            hidden_size=config.hidden_size,
            num_attention_heads=config.num_attention_heads,
            initializer_range=config.initializer_range,
            dropout_rate=config.hidden_dropout_prob,
            attention_dropout_rate=config.attention_probs_dropout_prob,
            dtype=dtype, name=name))
    sublayers.update(_build_sublayers(
        config, "ffn", lambda name: FeedForwardSublayer(
            hidden_size=config.hidden_size,
            intermediate_size=config.intermediate_size,
            hidden_act=config.hidden_act,
            initializer_range=config.initializer_range,
            dropout_rate=config.hidden_dropout_prob,
            dtype=dtype, name=name)))

    x = embedding_layer(inputs[INPUT_WORD_IDS], inputs[INPUT_TYPE_IDS])
    encoder_outputs = []
    for layer in layer_loop.blocks_by_layer(config, sublayers.__getitem__):
      for attention, ffn in layer:
        x = attention(x, inputs[INPUT_MASK])
        x = ffn(x)
      encoder_outputs.append(x)
    pooled_output = tf_keras.layers.Dense(
        config.hidden_size, activation="tanh",
        kernel_initializer=tf_keras.initializers.TruncatedNormal(
            stddev=config.initializer_range),
        dtype="float32", name="pooler")(x[:, 0, :])
    outputs = dict(sequence_output=x, pooled_output=pooled_output,
                   encoder_outputs=encoder_outputs)
    super().__init__(inputs=inputs, outputs=outputs, **kwargs)

    self.config = config
    self.embedding_layer = embedding_layer
    self._dtype_arg = dtype
    self.fused_inference = fused_inference
    self.recompute_layers = recompute_layers

  def call(self, inputs, training=None, mask=None, output_positions=None):
    if output_positions is None and not layer_loop.replaces_keras_graph(
        self, training, inputs):
      return super().call(inputs, training=training, mask=mask)
    # Serving, dropout seeds per block, recomputation, or the last block
    # at output_positions only: the one loop over the shared block.
    return layer_loop.run(self, inputs, training, output_positions)

  def get_embedding_table(self) -> tf.Variable:
    """The word-embedding table [V, E]."""
    return self.embedding_layer.embedding_table

  def get_config(self):
    return dict(config=self.config.to_dict(), dtype=self._dtype_arg,
                fused_inference=self.fused_inference,
                recompute_layers=self.recompute_layers, name=self.name)

  @classmethod
  def from_config(cls, config, custom_objects=None):
    return cls(**config)


def pooled_output(encoder, inputs: Dict[str, tf.Tensor], training=None):
  """The pooled [CLS] output [batch, H] of any TF Hub-interface encoder.

  An AlbertEncoder computes its last block at [CLS] only (see
  `output_positions`), which is all a sentence-level head reads.
  """
  if isinstance(encoder, AlbertEncoder):
    no_positions = tf.zeros_like(inputs[INPUT_WORD_IDS][:, :0])  # (B, 0)
    outputs = encoder(inputs, output_positions=no_positions,
                      training=training)
  else:
    outputs = encoder(inputs, training=training)
  return outputs["pooled_output"]


def packed_pooled_output(encoder, features: Dict[str, tf.Tensor],
                         training=None) -> tf.Tensor:
  """The pooled [CLS] output of every example slot of packed rows.

  Args:
    encoder: an AlbertEncoder.
    features: a packed batch (data_pipeline.tasks.packing): int32
      [rows, seq] input_word_ids, input_type_ids, input_positions and
      example_slot_ids (1 + the token's slot, 0 for padding), and
      example_starts int32 [rows, slots] (each slot's [CLS] position).
    training: enables dropout.

  Returns:
    float32 [rows, slots, H]: the pooler on each slot's [CLS] (an empty
    slot reads position 0, a real token: finite, to be weighted 0).
  """
  if not isinstance(encoder, AlbertEncoder):
    raise ValueError("packed rows need an AlbertEncoder (its attention takes "
                     f"a [batch, seq, seq] mask), got {type(encoder).__name__}")
  slots = features[EXAMPLE_SLOT_IDS]  # (R, S)
  # Query t may attend to key s iff both belong to the same example.
  same = tf.equal(slots[:, :, tf.newaxis], slots[:, tf.newaxis, :])
  mask = tf.logical_and(same, slots[:, tf.newaxis, :] > 0)  # (R, S, S)
  inputs = {INPUT_WORD_IDS: features[INPUT_WORD_IDS],
            INPUT_TYPE_IDS: features[INPUT_TYPE_IDS],
            INPUT_POSITIONS: features[INPUT_POSITIONS],
            INPUT_MASK: tf.cast(mask, tf.int32)}
  outputs = encoder(inputs, output_positions=features[EXAMPLE_STARTS],
                    training=training)
  cls = outputs["sequence_output_at_positions"]  # (R, K, H)
  return encoder.get_layer("pooler")(cls)


def _build_sublayers(config: AlbertConfig, kind: str,
                     make) -> Dict[str, tf_keras.layers.Layer]:
  """The sublayers of `kind` by name (`config.sublayer_names`: a shared
  sublayer once per group, an unshared one per layer), `make(name)` called
  once per name in order of first use."""
  return {name: make(name) for name in dict.fromkeys(
      name for names in config.sublayer_names(kind) for name in names)}
