"""The shared block's arithmetic, written once.

ALBERT is one post-LN transformer block applied L times. Its arithmetic
lives here and nowhere else: the AttentionSublayer and FeedForwardSublayer
Keras layers run it in their `call` (they own the variables, their names
and `get_config`), and every way to run the layer (the Keras graph, the
training path with seeded dropout and recomputation, the serving path, the
early-exit loop: albert_tf/networks/layer_loop.py and
early_exit_encoder.py) calls it on those layers' variables.

One form serves all of them: activations are 2-D rows [batch * seq, H]
inside a sublayer, so each projection is one MatMul + BiasAdd (which
oneDNN fuses; a Dense on [batch, seq, H] puts tensordot's reshapes between
the two), the query, key and value projections are three MatMuls on the
variables reshaped to 2-D (a concatenated [H, 3H] kernel costs a copy of
the weights per call), and the attention runs as two batched MatMuls on
[batch, heads, seq, head size] with one additive mask bias. The Keras
layers reshape [batch, seq, H] to rows on the way in and back on the way
out (free: reshapes of a contiguous tensor).

Numerics as the official model: the scale on the query, softmax and
LayerNorm (epsilon 1e-12) in float32, tanh GELU (serving: as
`tf.nn.gelu(approximate=True)`, the form grappler fuses into the MatMul;
else as activations.gelu_tanh, which keeps less for the backward pass).
Under mixed precision a sublayer casts its input and its variables to its
compute dtype, as tf_keras does for a layer's first argument and its
AutoCastVariables, and the residual is added in that dtype before the
float32 LayerNorm.

Dropout (training only) calls the sublayers' CheckpointedDropout layers in
a fixed order per block (attention probabilities, attention output,
feed-forward output), the order `layers.checkpointed_dropout.seeded`
counts, so a recomputed block draws the masks of its first forward pass.
Each dropout sees the tensor shape the Keras layers gave it ([batch, seq,
H] for the outputs), so its per-example masks are those of before.
"""

import math
import types

import numpy as np
import tensorflow as tf

from albert_tf.layers import activations

# tf_keras's Softmax adds this to masked scores (float32).
MASKED_SCORE = -1e9


def mask_bias(input_mask) -> tf.Tensor:
  """The additive attention bias of a mask, float32.

  Args:
    input_mask: int or bool [batch, seq] (1 = token, 0 = padding), or an
      attention mask [batch, T, seq] (1: query t may attend to key s), e.g.
      block-diagonal for packed rows.

  Returns:
    float32 [batch, 1, 1, seq], or [batch, 1, T, seq]: 0 where attended,
    MASKED_SCORE elsewhere; broadcast over heads (and queries).
  """
  bias = (1.0 - tf.cast(input_mask, tf.float32)) * MASKED_SCORE
  if bias.shape.rank == 2:
    return bias[:, tf.newaxis, tf.newaxis, :]  # (B, 1, 1, S)
  return bias[:, tf.newaxis]  # (B, 1, T, S)


def layer_norm(layer, x) -> tf.Tensor:
  """tf_keras LayerNormalization's float32 arithmetic on `layer`'s gamma
  and beta, over the last axis: its non-fused path, which an epsilon of
  1e-12 selects.

  Not the textbook (x - mean) / sqrt(variance + epsilon) * gamma + beta:
  the LiteRT converter folds that form's gamma into the next MatMul's
  kernel, and ALBERT's shared query-key-value kernel follows two different
  LayerNorms (the first layer reads the embedding projection): it was
  stored twice (ALBERT-base 46.6 -> 53.7 MB)."""
  x = tf.cast(x, tf.float32)
  mean, variance = tf.nn.moments(x, [-1], keepdims=True)
  return tf.nn.batch_normalization(x, mean, variance, layer.beta,
                                   layer.gamma, layer.epsilon)


def read_norm(layer):
  """A LayerNormalization's gamma and beta read now (and its epsilon), for
  `layer_norm` in place of the layer."""
  return types.SimpleNamespace(gamma=tf.convert_to_tensor(layer.gamma),
                               beta=tf.convert_to_tensor(layer.beta),
                               epsilon=layer.epsilon)


def dense(x, kernel, bias) -> tf.Tensor:
  """x [rows, in] @ kernel [in, out] + bias: one fused oneDNN kernel."""
  return tf.nn.bias_add(tf.matmul(x, kernel), bias)


def attention_scores(query, key) -> tf.Tensor:
  """The scores before the mask and softmax: query [batch, heads, T, size]
  (already scaled) times key [batch, heads, S, size] -> [batch, heads, T,
  S]."""
  return tf.matmul(query, key, transpose_b=True)


def attention_context(query, key, value, bias, dropout=None, training=None):
  """Scaled dot-product attention over heads: the one place its scores are
  computed.

  Args:
    query: [batch, heads, T, size], already scaled by 1 / sqrt(size).
    key, value: [batch, heads, S, size].
    bias: float32, broadcastable to [batch, heads, T, S] (mask_bias).
    dropout: optional dropout layer on the probabilities.
    training: enables dropout.

  Returns:
    context [batch, heads, T, size] and the probabilities [batch, heads, T,
    S] before dropout, in query's dtype (the softmax runs in float32).
  """
  scores = attention_scores(query, key)  # (B, N, T, S)
  probs = tf.cast(tf.nn.softmax(tf.cast(scores, tf.float32) + bias),
                  query.dtype)
  dropped = probs
  if dropout is not None and is_training(training):
    dropped = dropout(probs, training=True)
  return tf.matmul(dropped, value), probs  # (B, N, T, D)


class Attention:
  """An AttentionSublayer's arithmetic: LayerNorm(x + Dropout(MHA(x))).

  Reads the sublayer's variables reshaped to 2-D (no copy): on every call
  (so tf.recompute_grad sees them), or with `read_once` once, when the
  object is made.

  Args:
    sublayer: a built AttentionSublayer.
    read_once: read the variables in the constructor, for a loop that
      applies the sublayer many times in one call (about 24 ops per
      application fewer: 1.2 ms of a 20-token ALBERT-base request).
  """

  def __init__(self, sublayer, read_once: bool = False):
    self.sublayer = sublayer
    self.dtype = tf.as_dtype(sublayer.compute_dtype)
    self.hidden = sublayer.hidden_size
    self.heads = sublayer.num_attention_heads
    self.size = self.hidden // self.heads
    self.scale = 1.0 / math.sqrt(float(self.size))
    self.read = None
    if read_once:
      self.read = ([self._projection(i) for i in range(4)],
                   read_norm(sublayer.layer_norm))

  def _projection(self, index):
    """Projection `index` (query, key, value, output) as 2-D kernel
    [H, H] and bias [H], in the compute dtype."""
    if self.read is not None:
      return self.read[0][index]
    layer = self.sublayer.attention.projections[index]
    kernel = tf.reshape(layer.kernel, [self.hidden, self.hidden])
    bias = tf.reshape(layer.bias, [self.hidden])
    return tf.cast(kernel, self.dtype), tf.cast(bias, self.dtype)

  def _norm(self):
    return self.sublayer.layer_norm if self.read is None else self.read[1]

  def __call__(self, rows, batch, seq, bias, query_rows=None,
               training=None, with_probs=False):
    """rows [batch * seq, H] -> [batch * T, H] float32 (T = seq, or the
    number of query_rows: int32 [batch, T] positions to compute the output
    at; `bias` then holds the queries' rows). With `with_probs` also
    `attend`'s internals (probabilities, values, scores)."""
    rows = tf.cast(rows, self.dtype)
    key, value = self.keys_values(rows, batch, seq)
    length = seq
    if query_rows is not None:
      rows = tf.reshape(tf.gather(
          tf.reshape(rows, [batch, seq, self.hidden]), query_rows,
          batch_dims=1), [-1, self.hidden])  # (B*T, H)
      length = tf.shape(query_rows)[1]
    return self.attend(rows, key, value, bias, batch, length, training,
                       with_probs)

  def keys_values(self, rows, batch, seq):
    """rows [batch * seq, H] -> key, value [batch, seq, H] (split into heads
    by `attend`: rows of a batch can be gathered before it)."""
    rows = tf.cast(rows, self.dtype)
    return [tf.reshape(dense(rows, *self._projection(i)),
                       [batch, seq, self.hidden]) for i in (1, 2)]

  def attend(self, rows, key, value, bias, batch, length, training=None,
             with_probs=False):
    """The output at the query rows [batch * length, H] (the input there:
    the residual) over key, value [batch, seq, H]: [batch * length, H]
    float32. With `with_probs` also the internals distillation reads, a
    tuple: the probabilities [batch, heads, length, seq] (before dropout),
    the values [batch, heads, seq, size] and the scores [batch, heads,
    length, seq] (before the mask and softmax), in the compute dtype."""
    rows = tf.cast(rows, self.dtype)
    seq = tf.shape(key)[1]
    # 4-D transposes: with one 5-D transpose of [B, S, 3, N, D] and its
    # slices, LiteRT ran ALBERT-base's dynamic-int8 file 1.7x slower.
    query = self._heads(dense(rows, *self._projection(0)), batch, length)
    key, value = (self._heads(t, batch, seq) for t in (key, value))
    query = query * tf.cast(self.scale, self.dtype)
    context, probs = attention_context(
        query, key, value, bias, self.sublayer.attention.probs_dropout,
        training)  # (B, N, T, D)
    context = tf.reshape(tf.transpose(context, [0, 2, 1, 3]),
                         [-1, self.hidden])  # (B*T, H)
    y = dense(context, *self._projection(3))
    y = dropout_rows(self.sublayer.dropout, y, batch, length, self.hidden,
                     training)
    output = layer_norm(self._norm(), rows + y)
    if not with_probs:
      return output
    # The same MatMul as attention_context's (a graph computes it once).
    return output, (probs, value, attention_scores(query, key))

  def _heads(self, projected, batch, length):
    """[batch * length, H] or [batch, length, H] -> [batch, heads, length,
    size]."""
    return tf.transpose(tf.reshape(
        projected, [batch, length, self.heads, self.size]), [0, 2, 1, 3])


class FeedForward:
  """A FeedForwardSublayer's arithmetic: LayerNorm(x + Dropout(W2 act(W1
  x))).

  Args:
    sublayer: a built FeedForwardSublayer.
    serving: the serving form's tanh GELU, `tf.nn.gelu(approximate=True)`
      (grappler fuses it into the MatMul); else the activation's own form
      (activations.gelu_tanh, x * sigmoid(...): a gradient through it keeps
      one [rows, I] tensor less per block than through tf.nn.gelu's, which
      tests/albert_tf/models/test_memory_plan_tensors.py measures). The
      same function (equal to float32 rounding).
    read_once: read the variables once, in the constructor (Attention's).
  """

  def __init__(self, sublayer, serving: bool = False,
               read_once: bool = False):
    self.sublayer = sublayer
    self.dtype = tf.as_dtype(sublayer.compute_dtype)
    activation = activations.get_activation(sublayer.hidden_act)
    self.activation = (
        (lambda h: tf.nn.gelu(h, approximate=True))
        if serving and activation is activations.gelu_tanh else activation)
    self.read = (self._weights(), read_norm(sublayer.layer_norm)) if (
        read_once) else None

  def _weights(self):
    """The intermediate kernel [H, I] and bias [I], the output kernel
    [I, H] and bias [H], in the compute dtype."""
    layers = self.sublayer
    # convert_to_tensor: a read now (tf.cast of a variable to its own dtype
    # returns the variable, which each MatMul would read again).
    return [tf.cast(tf.convert_to_tensor(w), self.dtype) for w in (
        layers.intermediate.kernel, layers.intermediate.bias,
        layers.output_dense.kernel, layers.output_dense.bias)]

  def __call__(self, rows, batch, length, training=None):
    """rows [batch * length, H] -> [batch * length, H] float32."""
    layers = self.sublayer
    rows = tf.cast(rows, self.dtype)
    weights, norm = self.read or (self._weights(), layers.layer_norm)
    h = self.activation(dense(rows, *weights[:2]))  # (rows, I)
    y = dense(h, *weights[2:])  # (rows, H)
    y = dropout_rows(layers.dropout, y, batch, length,
                     layers.hidden_size, training)
    return layer_norm(norm, rows + y)


def is_training(training) -> bool:
  """The one reading of a call's training flag (this block, the embeddings
  and networks/layer_loop.py): None or a Python / NumPy false value is
  inference, a true one training.

  The flag decides at trace time what the call builds (dropout, each
  block's seed, recomputation), so a tensor is refused rather than read as
  one or the other: the trainers and Keras' fit, evaluate and predict pass
  Python booleans.

  Raises:
    TypeError: `training` is a tensor (or anything not bool-like).
  """
  if training is None:
    return False
  if isinstance(training, (bool, int, np.bool_, np.integer)):
    return bool(training)
  raise TypeError("training must be None or a Python bool (it decides what "
                  "the call builds: dropout, seeds, recomputation), received "
                  f"{training!r}")


def dropout_rows(layer, y, batch, length, width, training):
  """A CheckpointedDropout on rows y [batch * length, width], seen as
  [batch, length, width] (the Keras layers' shape: the same per-example
  masks); y itself when not training or at rate 0."""
  if layer.rate <= 0 or not is_training(training):
    return y
  y = layer(tf.reshape(y, [batch, length, width]), training=True)
  return tf.reshape(y, [-1, width])
