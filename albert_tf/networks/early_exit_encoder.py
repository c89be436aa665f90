"""Patience-based early exit (PABEE) over the AlbertEncoder's shared layer.

A second way to run the encoder's layers, beside `AlbertEncoder.call` (which
is unchanged): the same variables, one application of the shared layer per
step of a `tf.while_loop`, and after each application a classifier reads
that application's [CLS] through the shared pooler. Each example of a batch
stops at its own exit (Zhou et al., "BERT Loses Patience", NeurIPS 2020):

  classification  stop when the predicted class has been the same for
                  `patience` consecutive applications (after application
                  patience + 1 at the earliest);
  regression      the same with "the same" meaning "changed by less than
                  `threshold`";
  patience 0      full depth.

An example's prediction and exit do not depend on its batch-mates. With
`compact=True` (the default) the rows that exited leave the batch
(tf.gather of the still-running rows), so they stop costing compute;
`compact=False` keeps the whole batch to the end and masks the finished
rows' results (the reference the measurements compare against).

The loop needs every layer to apply the same blocks (share_parameters="all"
with one group: the released ALBERT models); it creates no variables.

Functions:
  check_loopable(config): ValueError unless the layers share one block set.
  per_layer_pooled(encoder, inputs, training, cls_positions): the pooled
    [CLS] of every application, computed in full (training, evaluation).
  early_exit(...): the loop; per example its logits and exit layer.
"""

from typing import Dict, Optional

import tensorflow as tf

from albert_common.encoder_inputs import INPUT_MASK
from albert_common.encoder_inputs import INPUT_POSITIONS
from albert_common.encoder_inputs import INPUT_TYPE_IDS
from albert_common.encoder_inputs import INPUT_WORD_IDS
from albert_tf.config import AlbertConfig
from albert_tf.networks import inference_graph


def check_loopable(config: AlbertConfig) -> None:
  """Raises ValueError unless every layer applies the same sublayers (the
  loop body is one layer's blocks)."""
  for kind in ("attention", "ffn"):
    names = config.sublayer_names(kind)
    if any(layer != names[0] for layer in names):
      raise ValueError(
          "early exit loops over one shared layer: it needs "
          "share_parameters='all' and num_hidden_groups=1, received "
          f"share_parameters={config.share_parameters!r} and "
          f"num_hidden_groups={config.num_hidden_groups}")


def encoder_blocks(encoder):
  """Per block in order, its (AttentionSublayer, FeedForwardSublayer) of
  an AlbertEncoder (shared sublayers once per use), by the config's names."""
  return [block for attention, ffn in zip(
      encoder.config.sublayer_names("attention"),
      encoder.config.sublayer_names("ffn"))
          for block in zip(map(encoder.get_layer, attention),
                           map(encoder.get_layer, ffn))]


def per_layer_pooled(encoder, inputs: Dict[str, tf.Tensor], training=None,
                     cls_positions: Optional[tf.Tensor] = None) -> tf.Tensor:
  """The pooler on every application's [CLS], each application in full.

  Args:
    encoder: an AlbertEncoder.
    inputs: int32 [batch, seq] input_word_ids, input_type_ids, input_mask
      (or a packed [batch, seq, seq] attention mask with input_positions).
    training: enables dropout (the layers' path); not training in float32
      runs the fused inference graph.
    cls_positions: optional int32 [batch, K]: read these positions instead
      of position 0 (the [CLS] of each example slot of packed rows).

  Returns:
    float32 [batch, L, H], or [batch, K, L, H] with cls_positions.
  """
  pooler = encoder.get_layer("pooler")
  packed = INPUT_POSITIONS in inputs or len(inputs[INPUT_MASK].shape) == 3
  if (inference_graph.applies(encoder, training) and not packed
      and cls_positions is None):
    layers = inference_graph.outputs(encoder, encoder_blocks(encoder),
                                     inputs)["encoder_outputs"]
    return tf.stack([pooler(x[:, 0, :]) for x in layers], axis=1)
  x = encoder.embedding_layer(inputs[INPUT_WORD_IDS], inputs[INPUT_TYPE_IDS],
                              inputs.get(INPUT_POSITIONS), training=training)
  per_layer = encoder.config.inner_group_num
  pooled = []
  for index, (attention, ffn) in enumerate(encoder_blocks(encoder)):
    x = ffn(attention(x, inputs[INPUT_MASK], training=training),
            training=training)
    if (index + 1) % per_layer == 0:
      cls = (x[:, 0, :] if cls_positions is None else  # (B, H)
             tf.gather(x, cls_positions, batch_dims=1))  # (B, K, H)
      pooled.append(tf.cast(pooler(cls), tf.float32))
  return tf.stack(pooled, axis=-2)


class _Layer:
  """One application of the shared layer by the fused inference graph:
  rows [batch, seq, H] -> [batch, seq, H] under a mask bias [b, 1, 1, s]."""

  def __init__(self, encoder):
    blocks = encoder_blocks(encoder)[:encoder.config.inner_group_num]
    self.blocks = [(inference_graph.FusedAttention(attention),
                    inference_graph.FusedFeedForward(ffn))
                   for attention, ffn in blocks]
    self.hidden = encoder.config.hidden_size

  def __call__(self, x, mask_bias):
    shape = tf.shape(x)
    batch, seq = shape[0], shape[1]
    rows = tf.reshape(x, [-1, self.hidden])  # (B*S, H)
    for attention, ffn in self.blocks:
      rows = ffn(attention(rows, batch, seq, mask_bias))
    return tf.reshape(rows, [batch, seq, self.hidden])


def early_exit(encoder, head_kernel: tf.Tensor, head_bias: tf.Tensor,
               inputs: Dict[str, tf.Tensor], patience, threshold=0.0,
               regression: bool = False, max_layers=None,
               compact: bool = True) -> Dict[str, tf.Tensor]:
  """Runs the shared layer until each example exits (module docstring).

  Args:
    encoder: an AlbertEncoder whose layers share one block set
      (check_loopable), float32.
    head_kernel: float32 [L, H, C], application j's classifier kernel.
    head_bias: float32 [L, C].
    inputs: int32 [batch, seq] input_word_ids, input_mask, input_type_ids.
    patience: int32 scalar (tensor or int) >= 0; 0 = full depth.
    threshold: float scalar, regression only: a change below it counts as
      "the same prediction".
    regression: C == 1 and the prediction is logits[:, 0].
    max_layers: optional int32 scalar: stop every example after this many
      applications (a static-depth cut; None = L).
    compact: drop exited rows from the batch (else mask them).

  Returns:
    logits: float32 [batch, C], those of each example's exit application.
    exit_layer: int32 [batch], that application, 1..L.
  """
  layer = _Layer(encoder)
  pooler = encoder.get_layer("pooler")
  num_layers = encoder.config.num_hidden_layers
  depth = tf.constant(num_layers, tf.int32)
  if max_layers is not None:
    depth = tf.clip_by_value(tf.cast(max_layers, tf.int32), 1, depth)
  patience = tf.cast(patience, tf.int32)
  threshold = tf.cast(threshold, tf.float32)
  kernel = tf.convert_to_tensor(head_kernel)  # (L, H, C)
  bias = tf.convert_to_tensor(head_bias)  # (L, C)
  state = _initial_state(encoder, inputs, kernel.shape[-1])

  def step(index, state):
    x = layer(state["x"], state["mask_bias"])
    pooled = pooler(x[:, 0, :])  # (b, H)
    logits = tf.matmul(pooled, kernel[index]) + bias[index]  # (b, C)
    prediction = (logits[:, 0] if regression else tf.cast(
        tf.argmax(logits, axis=-1, output_type=tf.int32), tf.float32))
    same = (tf.abs(prediction - state["previous"]) < threshold
            if regression else tf.equal(prediction, state["previous"]))
    same = tf.logical_and(same, index > 0)
    streak = tf.where(same, state["streak"] + 1, 0)
    done = tf.logical_or(tf.logical_and(patience > 0, streak >= patience),
                         index + 1 >= depth)
    new = dict(state, x=x, previous=prediction, streak=streak)
    if compact:
      where = state["rows"][:, tf.newaxis]  # (b, 1)
      new["logits"] = tf.tensor_scatter_nd_update(state["logits"], where,
                                                  logits)
      new["exit_layer"] = tf.tensor_scatter_nd_update(
          state["exit_layer"], where,
          tf.fill(tf.shape(state["rows"]), index + 1))
      keep = tf.reshape(tf.where(tf.logical_not(done)), [-1])  # (b',)
      for key in ("x", "mask_bias", "rows", "previous", "streak"):
        new[key] = tf.gather(new[key], keep)
    else:
      running = state["running"]
      new["logits"] = tf.where(running[:, tf.newaxis], logits,
                               state["logits"])
      new["exit_layer"] = tf.where(running, index + 1, state["exit_layer"])
      new["running"] = tf.logical_and(running, tf.logical_not(done))
    return index + 1, new

  def more(index, state):
    left = (tf.size(state["rows"]) > 0 if compact
            else tf.reduce_any(state["running"]))
    return tf.logical_and(index < depth, left)

  invariants = {key: tf.TensorShape([None] + list(value.shape[1:]))
                for key, value in state.items()}
  invariants["x"] = tf.TensorShape([None, None, state["x"].shape[-1]])
  invariants["mask_bias"] = tf.TensorShape([None, 1, 1, None])
  _, state = tf.while_loop(
      more, step, (tf.constant(0), state),
      shape_invariants=(tf.TensorShape([]), invariants),
      maximum_iterations=num_layers)
  return dict(logits=state["logits"], exit_layer=state["exit_layer"])


def _initial_state(encoder, inputs, num_classes: int) -> Dict:
  """The loop's variables before the first application: the embeddings
  x [B, S, H], the mask's additive bias [B, 1, 1, S], and per row its index
  in the batch, whether it runs, its last prediction and streak; per
  example the logits [B, C] and exit layer [B] written so far."""
  x = tf.cast(encoder.embedding_layer(
      inputs[INPUT_WORD_IDS], inputs[INPUT_TYPE_IDS], training=False),
      tf.float32)  # (B, S, H)
  batch = tf.shape(x)[0]
  mask = tf.cast(inputs[INPUT_MASK], tf.float32)
  mask_bias = ((1.0 - mask) *
               inference_graph.MASKED_SCORE)[:, tf.newaxis, tf.newaxis, :]
  return dict(
      x=x, mask_bias=mask_bias, rows=tf.range(batch),
      running=tf.ones([batch], tf.bool),
      previous=tf.zeros([batch], tf.float32),
      streak=tf.zeros([batch], tf.int32),
      logits=tf.zeros([batch, num_classes], tf.float32),
      exit_layer=tf.zeros([batch], tf.int32))
