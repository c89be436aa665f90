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

With compaction an application where a row may exit (its streak is one
short of the patience, or the last one) computes [CLS] first and the rest
of the layer only for the rows that go on: an exit costs what the
full-depth classifier's last layer costs (its last block at [CLS] only),
not a whole layer. The other applications run the whole layer with no
exit bookkeeping (a tf.cond between the two). `branches=False` runs every
application whole and decides the exits after it, with no tf.cond: the
same exits, the form LiteRT runs fastest (the export's
token_ids_unbranched signature).

The loop needs every layer to apply the same blocks (share_parameters="all"
with one group: the released ALBERT models); it creates no variables. Each
application is the shared block's arithmetic (layers/shared_block.py) on
the encoder's sublayers, split where an exit needs it (keys and values,
then the attention at [CLS] or at the rows that go on); the full-depth
outputs come from the one loop (networks/layer_loop.py), with its dropout
seeds and recomputation.

Functions:
  check_loopable(config): ValueError unless the layers share one block set.
  per_layer_pooled(encoder, inputs, training, cls_positions): the pooled
    [CLS] of every application, computed in full (training, evaluation).
  early_exit(...): the loop; per example its logits and exit layer.
"""

from typing import Dict, Optional

import tensorflow as tf

from albert_common.encoder_inputs import INPUT_MASK
from albert_common.encoder_inputs import INPUT_TYPE_IDS
from albert_common.encoder_inputs import INPUT_WORD_IDS
from albert_common.run_constants import EXIT_THRESHOLD
from albert_tf.config import AlbertConfig
from albert_tf.layers import shared_block
from albert_tf.networks import layer_loop


def check_loopable(config: AlbertConfig) -> None:
  """Raises ValueError unless every layer applies the same sublayers (the
  loop body is one layer's blocks): AlbertConfig.check_loopable."""
  config.check_loopable()


def per_layer_pooled(encoder, inputs: Dict[str, tf.Tensor], training=None,
                     cls_positions: Optional[tf.Tensor] = None) -> tf.Tensor:
  """The pooler on every application's [CLS], each application in full.

  Args:
    encoder: an AlbertEncoder.
    inputs: int32 [batch, seq] input_word_ids, input_type_ids, input_mask
      (or a packed [batch, seq, seq] attention mask with input_positions).
    training: enables dropout, and recomputation if the encoder has
      recompute_layers (networks/layer_loop.py runs every application).
    cls_positions: optional int32 [batch, K]: read these positions instead
      of position 0 (the [CLS] of each example slot of packed rows).

  Returns:
    float32 [batch, L, H], or [batch, K, L, H] with cls_positions.
  """
  pooler = encoder.get_layer("pooler")
  layers = layer_loop.run(encoder, inputs, training)["encoder_outputs"]
  pooled = [pooler(x[:, 0, :] if cls_positions is None else  # (B, H)
                   tf.gather(x, cls_positions, batch_dims=1))  # (B, K, H)
            for x in layers]
  return tf.stack([tf.cast(p, tf.float32) for p in pooled], axis=-2)


class _Layer:
  """One application of the shared layer (shared_block's arithmetic), in
  two parts, so that an example's exit application costs what the
  full-depth classifier's last one does (its last block at [CLS] only):

    at_cls(x, mask_bias) -> the application's [CLS] [b, H], and a carry;
    rest(carry, mask_bias, keep) -> the whole application [b', seq, H] for
      the rows `keep` that go on (the last block's keys and values reused).

  x [b, seq, H]; mask_bias [b, 1, 1, seq]."""

  def __init__(self, encoder):
    self.blocks = layer_loop.blocks(encoder)[:encoder.config.inner_group_num]
    self.hidden = encoder.config.hidden_size

  def _rows(self, x):
    """x [b, seq, H] -> rows [b * seq, H], b, seq."""
    shape = tf.shape(x)
    rows = tf.reshape(x, [-1, self.hidden])  # (b*S, H)
    return rows, shape[0], shape[1]

  def at_cls(self, x, mask_bias):
    rows, batch, seq = self._rows(x)
    call = layer_loop.Call(batch, seq, mask_bias, serving=True)
    for block in self.blocks[:-1]:
      rows, _ = layer_loop.apply_block(block, rows, call)
    attention = shared_block.Attention(self.blocks[-1][0])
    key, value = attention.keys_values(rows, batch, seq)  # (b, S, H)
    first = tf.reshape(rows, [batch, seq, self.hidden])[:, 0, :]  # (b, H)
    cls = attention.attend(first, key, value, mask_bias, batch, 1)
    cls = shared_block.FeedForward(self.blocks[-1][1], serving=True)(
        cls, batch, 1)
    return cls, (rows, key, value)

  def __call__(self, x, mask_bias):
    """The whole application [b, seq, H]."""
    rows, batch, seq = self._rows(x)
    call = layer_loop.Call(batch, seq, mask_bias, serving=True)
    for block in self.blocks:
      rows, _ = layer_loop.apply_block(block, rows, call)
    return tf.reshape(rows, [batch, seq, self.hidden])

  def rest(self, carry, mask_bias, keep):
    rows, key, value = carry
    seq = tf.shape(key)[1]
    rows = tf.reshape(tf.gather(
        tf.reshape(rows, [-1, seq, self.hidden]), keep), [-1, self.hidden])
    key, value, mask_bias = (tf.gather(t, keep)
                             for t in (key, value, mask_bias))
    batch = tf.shape(keep)[0]
    attention, ffn = self.blocks[-1]
    rows = shared_block.Attention(attention).attend(
        rows, key, value, mask_bias, batch, seq)
    rows = shared_block.FeedForward(ffn, serving=True)(rows, batch, seq)
    return tf.reshape(rows, [batch, seq, self.hidden]), mask_bias


def early_exit(encoder, head_kernel: tf.Tensor, head_bias: tf.Tensor,
               inputs: Dict[str, tf.Tensor], patience,
               threshold=EXIT_THRESHOLD,
               regression: bool = False, max_layers=None,
               compact: bool = True, branches: bool = True,
               count_rows: bool = False) -> Dict[str, tf.Tensor]:
  """Runs the shared layer until each example exits (module docstring).

  Args:
    encoder: an AlbertEncoder whose layers share one block set
      (check_loopable), float32.
    head_kernel: float32 [L, H, C], application j's classifier kernel.
    head_bias: float32 [L, C].
    inputs: int32 [batch, seq] input_word_ids, input_mask, input_type_ids.
    patience: int32 scalar (tensor or int) >= 0; 0 = full depth.
    threshold: float scalar, regression only: a change below it counts as
      "the same prediction" (the default is --exit_threshold's).
    regression: C == 1 and the prediction is logits[:, 0].
    max_layers: optional int32 scalar: stop every example after this many
      applications (a static-depth cut; None = L).
    compact: drop exited rows from the batch (else mask them).
    branches: with compact, the tf.cond between an application where rows
      may exit ([CLS] first) and one where none can (module docstring);
      False: every application whole, the exits decided after it, no
      branch (LiteRT runs that faster: it prepares an IF's branch again
      on each call).
    count_rows: also return rows_computed (for tests and benchmarks: the
      proof that exited rows leave the batch).

  Returns:
    logits: float32 [batch, C], those of each example's exit application.
    exit_layer: int32 [batch], that application, 1..L.
    rows_computed (with count_rows): int32 [L], the rows application j
      ran on at [j - 1] (with compact, those not exited before it; 0
      after the loop stopped).
  """
  num_layers = encoder.config.num_hidden_layers
  depth = tf.constant(num_layers, tf.int32)
  if max_layers is not None:
    depth = tf.clip_by_value(tf.cast(max_layers, tf.int32), 1, depth)
  rule = _Rule(encoder, head_kernel, head_bias, patience, threshold,
               regression, depth)
  state = _initial_state(encoder, inputs, rule.kernel.shape[-1])
  if compact:
    del state["running"]  # the rows left say which run
    step = rule.compacting_step if branches else rule.unbranched_step
  else:
    step = rule.masking_step

  def more(index, state):
    left = (tf.size(state["rows"]) > 0 if compact
            else tf.reduce_any(state["running"]))
    return tf.logical_and(index < depth, left)

  if count_rows:
    state["rows_computed"] = tf.zeros([num_layers], tf.int32)

  def body(index, state):
    new = step(index, state)
    if count_rows:  # the rows the application's input holds
      new["rows_computed"] = tf.tensor_scatter_nd_update(
          state["rows_computed"], [[index]], tf.shape(state["x"])[:1])
    return index + 1, new

  invariants = {key: tf.TensorShape([None] + list(value.shape[1:]))
                for key, value in state.items()}
  invariants["x"] = tf.TensorShape([None, None, state["x"].shape[-1]])
  invariants["mask_bias"] = tf.TensorShape([None, 1, 1, None])
  _, state = tf.while_loop(
      more, body,
      (tf.constant(0), state),
      shape_invariants=(tf.TensorShape([]), invariants),
      maximum_iterations=num_layers)
  outputs = dict(logits=state["logits"], exit_layer=state["exit_layer"])
  if count_rows:
    outputs["rows_computed"] = state["rows_computed"]
  return outputs


class _Rule:
  """One loop iteration: application `index` (0-based) of the shared
  layer, its head's prediction, and the exit rule, on the loop's state
  (see _initial_state); `depth` is the last application (int32 scalar)."""

  def __init__(self, encoder, head_kernel, head_bias, patience, threshold,
               regression: bool, depth):
    self.layer = _Layer(encoder)
    self.pooler = encoder.get_layer("pooler")
    self.kernel = tf.convert_to_tensor(head_kernel)  # (L, H, C)
    self.bias = tf.convert_to_tensor(head_bias)  # (L, C)
    self.patience = tf.cast(patience, tf.int32)
    self.threshold = tf.cast(threshold, tf.float32)
    self.regression = regression
    self.depth = depth

  def predict(self, index, cls):
    """[CLS] [b, H] -> logits [b, C], prediction [b] (float32)."""
    logits = tf.matmul(self.pooler(cls), self.kernel[index]
                       ) + self.bias[index]
    prediction = (logits[:, 0] if self.regression else tf.cast(
        tf.argmax(logits, axis=-1, output_type=tf.int32), tf.float32))
    return logits, prediction

  def streak(self, index, state, prediction):
    """[b]: consecutive applications with the same prediction."""
    same = (tf.abs(prediction - state["previous"]) < self.threshold
            if self.regression else tf.equal(prediction, state["previous"]))
    same = tf.logical_and(same, index > 0)
    return tf.where(same, state["streak"] + 1, 0)

  def done(self, index, streak):
    return tf.logical_or(
        tf.logical_and(self.patience > 0, streak >= self.patience),
        index + 1 >= self.depth)

  def compacting_step(self, index, state):
    # A row exits when its streak reaches the patience, so none can
    # before then or before its streak is one short of it.
    may_exit = tf.logical_or(index + 1 >= self.depth, tf.logical_and(
        tf.logical_and(self.patience > 0, index >= self.patience),
        tf.reduce_any(state["streak"] >= self.patience - 1)))
    return tf.cond(may_exit, lambda: self._step_exits(index, state),
                   lambda: self._step_on(index, state))

  def _step_on(self, index, state):
    """An application where no row can exit: the whole layer, no
    bookkeeping of exits."""
    x = self.layer(state["x"], state["mask_bias"])
    _, prediction = self.predict(index, x[:, 0, :])
    return dict(state, x=x, previous=prediction,
                streak=self.streak(index, state, prediction))

  def _step_exits(self, index, state):
    """An application where rows may exit: [CLS] first, then the rest of
    the layer only for the rows that go on (the others leave the batch)."""
    cls, carry = self.layer.at_cls(state["x"], state["mask_bias"])
    logits, prediction = self.predict(index, cls)
    new, keep = self._exits(index, state, logits, prediction)
    # (Not on zero rows: LiteRT's XNNPack cannot reshape to them.)
    new["x"], new["mask_bias"] = tf.cond(
        tf.size(keep) > 0,
        lambda: self.layer.rest(carry, state["mask_bias"], keep),
        lambda: (tf.gather(state["x"], keep),
                 tf.gather(state["mask_bias"], keep)))
    return new

  def unbranched_step(self, index, state):
    """The whole application, then the exits: the rows that exit leave."""
    x = self.layer(state["x"], state["mask_bias"])
    logits, prediction = self.predict(index, x[:, 0, :])
    new, keep = self._exits(index, state, logits, prediction)
    new["x"], new["mask_bias"] = (tf.gather(x, keep),
                                  tf.gather(state["mask_bias"], keep))
    return new

  def _exits(self, index, state, logits, prediction):
    """The state after application `index` but x and mask_bias (those of
    the rows that go on are the caller's): exited rows' logits and exit
    layer written, the rows left; and `keep` int64 [b'], their indices."""
    streak = self.streak(index, state, prediction)
    new = dict(state, previous=prediction, streak=streak)
    where = state["rows"][:, tf.newaxis]  # (b, 1)
    new["logits"] = tf.tensor_scatter_nd_update(state["logits"], where,
                                                logits)
    new["exit_layer"] = tf.tensor_scatter_nd_update(
        state["exit_layer"], where,
        tf.fill(tf.shape(state["rows"]), index + 1))
    keep = tf.reshape(tf.where(tf.logical_not(self.done(index, streak))),
                      [-1])  # (b',)
    for key in ("rows", "previous", "streak"):
      new[key] = tf.gather(new[key], keep)
    return new, keep

  def masking_step(self, index, state):
    """The whole batch to the end; finished rows' results are kept."""
    x = self.layer(state["x"], state["mask_bias"])
    logits, prediction = self.predict(index, x[:, 0, :])
    streak = self.streak(index, state, prediction)
    running = state["running"]
    return dict(
        state, x=x, previous=prediction, streak=streak,
        logits=tf.where(running[:, tf.newaxis], logits, state["logits"]),
        exit_layer=tf.where(running, index + 1, state["exit_layer"]),
        running=tf.logical_and(running, tf.logical_not(
            self.done(index, streak))))


def _initial_state(encoder, inputs, num_classes: int) -> Dict:
  """The loop's variables before the first application: the embeddings
  x [B, S, H], the mask's additive bias [B, 1, 1, S], and per row its index
  in the batch, whether it runs, its last prediction and streak; per
  example the logits [B, C] and exit layer [B] written so far."""
  x = tf.cast(encoder.embedding_layer(
      inputs[INPUT_WORD_IDS], inputs[INPUT_TYPE_IDS], training=False),
      tf.float32)  # (B, S, H)
  batch = tf.shape(x)[0]
  mask_bias = shared_block.mask_bias(inputs[INPUT_MASK])  # (B, 1, 1, S)
  return dict(
      x=x, mask_bias=mask_bias, rows=tf.range(batch),
      running=tf.ones([batch], tf.bool),
      previous=tf.zeros([batch], tf.float32),
      streak=tf.zeros([batch], tf.int32),
      logits=tf.zeros([batch, num_classes], tf.float32),
      exit_layer=tf.zeros([batch], tf.int32))
