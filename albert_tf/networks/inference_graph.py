"""The AlbertEncoder's inference graph: same variables, fewer and larger ops.

`AlbertEncoder.call` runs this when it is not training (training False or
None) in float32, unless built with `fused_inference=False`: every exported
serving signature, `model.predict` / `evaluate`, and a reloaded SavedModel
called with training=False. It
computes what the Keras layers compute (tests: equal to 1e-5), written for
a batch-1 serving call, where the layers' per-op cost shows:

- activations stay 2-D rows [batch * seq, H] between the sublayers, so each
  projection is one MatMul + BiasAdd that oneDNN runs as one fused kernel
  (the layers' Dense on [batch, seq, H] goes through tensordot's shape ops
  and a Reshape between the MatMul and its BiasAdd, which blocks the
  fusion); the feed-forward's tanh GELU is `tf.nn.gelu(approximate=True)`,
  the form grappler fuses into that kernel too;
- the query, key and value projections are MatMuls on the variables
  reshaped to 2-D (a [H, 3H] kernel concatenated per call cost a copy of
  the weights each call: slower at every shape measured);
- the attention is two batched MatMuls on [batch, heads, seq, head size]
  and an additive mask [batch, 1, 1, seq] built once.

With `output_positions`, the last block runs only at [CLS] and those
positions (keys and values at every position, queries and all after them
only there), as in the layers' path. Not used under a mixed-precision policy
(the layers cast per sublayer) or with dropout (training=True).
"""

import math
from typing import Dict, Optional

import tensorflow as tf

from albert_common.encoder_inputs import INPUT_MASK
from albert_common.encoder_inputs import INPUT_TYPE_IDS
from albert_common.encoder_inputs import INPUT_WORD_IDS
from albert_tf.layers import activations

# tf_keras's Softmax adds this to masked scores (float32).
_MASKED_SCORE = -1e9
_TANH_GELU = activations.gelu_tanh


def applies(encoder, training) -> bool:
  """Whether a call with `training` may run this graph (the encoder's
  `fused_inference` option aside)."""
  inference = training is None or (
      isinstance(training, (bool, int)) and not training)
  # A mixed-precision encoder's layers compute in float16 / bfloat16.
  return inference and encoder.embedding_layer.compute_dtype == "float32"


class _LayerNorm:
  """tf_keras LayerNormalization's computation (its non-fused path, which
  an epsilon of 1e-12 selects) over the last axis of any rank.

  Not the textbook (x - mean) / sqrt(variance + epsilon) * gamma + beta,
  which onnxruntime would fuse into one LayerNormalization (about 3% of a
  batch-1 call, measured): the LiteRT converter folds that form's gamma
  into the next MatMul's kernel, and ALBERT's shared query-key-value
  kernel then follows two different LayerNorms (the first layer reads the
  embedding projection): it was stored twice (ALBERT-base 46.6 -> 53.7
  MB)."""

  def __init__(self, layer):
    self.gamma = tf.convert_to_tensor(layer.gamma)
    self.beta = tf.convert_to_tensor(layer.beta)
    self.epsilon = layer.epsilon

  def __call__(self, x):
    mean, variance = tf.nn.moments(x, [-1], keepdims=True)
    return tf.nn.batch_normalization(x, mean, variance, self.beta,
                                     self.gamma, self.epsilon)


def _dense(x, kernel, bias):
  """x [rows, in] @ kernel [in, out] + bias: one fused oneDNN kernel."""
  return tf.nn.bias_add(tf.matmul(x, kernel), bias)


class _Attention:
  """An AttentionSublayer's weights as the fused graph uses them: the
  variables themselves, reshaped to 2-D (no per-call copy)."""

  def __init__(self, sublayer):
    attention = sublayer.attention
    heads = sublayer.num_attention_heads
    self.hidden = sublayer.hidden_size
    self.heads, self.head_size = heads, self.hidden // heads
    self.scale = 1.0 / math.sqrt(float(self.head_size))
    *projections, output = attention.projections
    self.projections = [
        (tf.reshape(p.kernel, [self.hidden, self.hidden]),
         tf.reshape(p.bias, [self.hidden])) for p in projections]  # q, k, v
    self.output_kernel = tf.reshape(output.kernel, [self.hidden, self.hidden])
    self.output_bias = tf.convert_to_tensor(output.bias)
    self.layer_norm = _LayerNorm(sublayer.layer_norm)

  def __call__(self, x, batch, seq, mask_bias, query_rows=None):
    """x: [batch * seq, H] rows -> [batch * T, H] (T = seq, or the number
    of query_rows: int32 [batch, T] positions of the rows to compute)."""
    key, value = self.keys_values(x, batch, seq)
    if query_rows is None:
      return self.attend(x, key, value, mask_bias, batch, seq)
    rows = tf.reshape(
        tf.gather(tf.reshape(x, [batch, seq, self.hidden]), query_rows,
                  batch_dims=1), [-1, self.hidden])  # (B*T, H)
    return self.attend(rows, key, value, mask_bias, batch,
                       tf.shape(query_rows)[1])

  def keys_values(self, x, batch, seq):
    """x: [batch * seq, H] rows -> key, value [batch, seq, H] (split into
    heads by `attend`: rows of a batch can be gathered before it)."""
    # Three MatMuls on the variables, not one on a [H, 3H] kernel: that
    # concatenation (and the scale folded into it) was a copy of the
    # weights per call, 1.0-1.5 ms of an ALBERT-base call on this machine,
    # 3-6% of a 20-32-token request; the three MatMuls were 3% faster from
    # [1, 20] to [8, 128] (benchmarks.investigations.short_requests).
    return [tf.reshape(_dense(x, kernel, bias), [batch, seq, self.hidden])
            for kernel, bias in self.projections[1:]]

  def attend(self, rows, key, value, mask_bias, batch, length):
    """The sublayer's output at the query rows [batch * length, H] (its
    input there, the residual) over key, value [batch, seq, H]:
    [batch * length, H]."""
    seq = tf.shape(key)[1]
    # 4-D transposes: with one 5-D transpose of [B, S, 3, N, D] and its
    # slices, LiteRT ran ALBERT-base's dynamic-int8 file 1.7x slower.
    query = self._heads(_dense(rows, *self.projections[0]), batch, length)
    key, value = (self._heads(t, batch, seq) for t in (key, value))
    # The scale on the query, as tf_keras's MultiHeadAttention applies it.
    scores = tf.matmul(query * self.scale, key,
                       transpose_b=True) + mask_bias  # (B, N, T, S)
    context = tf.matmul(tf.nn.softmax(scores), value)  # (B, N, T, D)
    context = tf.reshape(tf.transpose(context, [0, 2, 1, 3]),
                         [-1, self.hidden])  # (B*T, H)
    y = _dense(context, self.output_kernel, self.output_bias)
    return self.layer_norm(rows + y)

  def _heads(self, projected, batch, length):
    """[batch * length, H] or [batch, length, H] -> [batch, heads, length,
    size]."""
    return tf.transpose(tf.reshape(
        projected, [batch, length, self.heads, self.head_size]),
                        [0, 2, 1, 3])


class _FeedForward:
  """A FeedForwardSublayer's weights as the fused graph uses them."""

  def __init__(self, sublayer):
    intermediate, output = sublayer.intermediate, sublayer.output_dense
    self.intermediate = [tf.convert_to_tensor(w) for w in (
        intermediate.kernel, intermediate.bias)]
    self.output = [tf.convert_to_tensor(w) for w in (output.kernel,
                                                      output.bias)]
    self.layer_norm = _LayerNorm(sublayer.layer_norm)
    activation = intermediate.activation
    self.activation = (
        (lambda h: tf.nn.gelu(h, approximate=True))
        if activation is _TANH_GELU else activation)

  def __call__(self, x):
    """x: [rows, H] -> [rows, H]."""
    h = self.activation(_dense(x, *self.intermediate))  # (rows, I)
    return self.layer_norm(x + _dense(h, *self.output))


def outputs(encoder, blocks, inputs: Dict[str, tf.Tensor],
                  output_positions: Optional[tf.Tensor] = None) -> Dict:
  """The encoder's outputs (see AlbertEncoder) by the fused graph.

  Args:
    encoder: the AlbertEncoder (its embedding layer and pooler are read).
    blocks: per block in order, its (AttentionSublayer, FeedForwardSublayer);
      shared sublayers appear once per use.
    inputs: the encoder's int32 [batch, seq] inputs.
    output_positions: optional int32 [batch, P]: the last block only at
      [CLS] and these positions.
  """
  word_ids = inputs[INPUT_WORD_IDS]
  shape = tf.shape(word_ids)
  batch, seq = shape[0], shape[1]
  embedding = encoder.embedding_layer
  x = (tf.gather(embedding.word_embeddings.embeddings, word_ids) +
       tf.gather(embedding.token_type_embeddings.embeddings,
                 inputs[INPUT_TYPE_IDS]) +
       embedding.position_embeddings[:seq][tf.newaxis])  # (B, S, E)
  x = tf.reshape(x, [-1, embedding.embedding_size])  # (B*S, E)
  x = _LayerNorm(embedding.layer_norm)(x)
  if embedding.projection is not None:
    x = _dense(x, embedding.projection.kernel, embedding.projection.bias)
  hidden = encoder.config.hidden_size
  mask = tf.cast(inputs[INPUT_MASK], tf.float32)
  mask_bias = ((1.0 - mask) * _MASKED_SCORE)[:, tf.newaxis, tf.newaxis, :]

  # Each distinct sublayer's weights are prepared once per call.
  prepared = {}

  def weights(sublayer, kind):
    if id(sublayer) not in prepared:
      prepared[id(sublayer)] = kind(sublayer)
    return prepared[id(sublayer)]

  per_layer = encoder.config.inner_group_num
  encoder_outputs = []
  query_rows = None
  for index, (attention, ffn) in enumerate(blocks):
    last = index == len(blocks) - 1
    if last and output_positions is not None:
      positions = tf.cast(output_positions, tf.int32)
      query_rows = tf.concat(
          [tf.zeros([batch, 1], tf.int32), positions], axis=1)  # (B, 1+P)
    x = weights(attention, _Attention)(x, batch, seq, mask_bias, query_rows)
    x = weights(ffn, _FeedForward)(x)
    if (index + 1) % per_layer == 0 and query_rows is None:
      encoder_outputs.append(tf.reshape(x, [batch, seq, hidden]))
  pooler = encoder.get_layer("pooler")
  if query_rows is not None:
    rows = tf.reshape(x, [batch, -1, hidden])  # (B, 1+P, H)
    return dict(pooled_output=pooler(rows[:, 0, :]),
                sequence_output_at_positions=rows[:, 1:, :])
  sequence_output = encoder_outputs[-1]
  return dict(sequence_output=sequence_output,
              pooled_output=pooler(sequence_output[:, 0, :]),
              encoder_outputs=encoder_outputs)


# The fused sublayers and the masked score under public names, for the
# early-exit loop (networks/early_exit_encoder.py): it applies the same
# graph one layer per loop iteration.
FusedAttention = _Attention
FusedFeedForward = _FeedForward
MASKED_SCORE = _MASKED_SCORE
