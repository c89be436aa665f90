"""The one loop over the shared layer's applications.

`AlbertEncoder.call` runs this instead of its Keras graph when the Keras
graph is not what the call needs: serving (not training, float32), training
with dropout or recomputation, and every call with `output_positions`;
the early-exit classifier runs it for its per-application outputs. Each
block application is layers/shared_block.py's arithmetic on the encoder's
sublayers (the Keras graph's sublayers run the same code), on 2-D rows
[batch * seq, H], with one additive mask bias built once.

What the loop is parameterised by:

- training: dropout. Before each block the loop takes one seed, outside
  any recomputed function: inside a trainer's update scope
  (albert_tf.training.update_dropout) the scope's next seed, so every mask
  is a function of the update's seed and each example's position in the
  update (the same whatever the replicas and micro-batches); else a draw
  from the block's first checkpointed dropout generator. Inside the block
  every dropout is stateless under that seed (checkpointed_dropout.seeded):
  a recomputed block draws the masks of its first forward pass, and a
  resumed run (the generator's state is checkpointed) those of an
  uninterrupted one.
- recompute: each block application is wrapped in `tf.recompute_grad`,
  so the backward pass keeps only the block's input and recomputes its
  activations (memory of one block instead of L, for about one more
  forward pass). The wrapped function takes only float tensors
  positionally (tf.recompute_grad rejects keyword arguments in graph mode,
  and integer inputs have no gradient): mask bias, seed, query rows and
  `training` are closed over; it reads the variables inside, so their
  gradients flow.
- output_positions: the last block only at [CLS] and those positions
  (keys and values at every position: the queries and everything after
  them only there).
- per-application outputs: every layer's hidden states (encoder_outputs)
  and, with `attention_probs`, every block's attention probabilities
  [batch, heads, seq, seq]; with `block_internals`, every block's values
  and raw scores and the embedding output the first block read
  (distillation's intermediate losses read them from the pass that
  computes the logits: the same dropout masks, every inner block).

Every call runs the embedding layer (AlbertEmbeddings: three gathers, then
a LayerNorm and a MatMul on 2-D rows).

A new way to run the layer composes `blocks` and `run` in its own module
(as early_exit_encoder.py does with its while loop); it does not restate
the block.
"""

import dataclasses
from typing import Callable, Dict, List, Optional, Tuple

import tensorflow as tf

from albert_common.encoder_inputs import INPUT_MASK
from albert_common.encoder_inputs import INPUT_POSITIONS
from albert_common.encoder_inputs import INPUT_TYPE_IDS
from albert_common.encoder_inputs import INPUT_WORD_IDS
from albert_tf.layers import shared_block
from albert_tf.layers.checkpointed_dropout import next_seed
from albert_tf.layers.checkpointed_dropout import scope_rows
from albert_tf.layers.checkpointed_dropout import seeded

# The one reading of a training flag (a tensor is refused).
is_training = shared_block.is_training


@dataclasses.dataclass(frozen=True)
class Call:
  """What every block application of one call shares.

  Attributes:
    batch, seq: int32 scalars, the rows' [batch, seq] (before any
      query_rows).
    bias: float32 [batch, 1, 1|T, seq], shared_block.mask_bias of the
      call's mask.
    training: the call's training flag (is_training: dropout, seeds).
    recompute: wrap each block in tf.recompute_grad.
    serving: the serving form's GELU (shared_block.FeedForward).
  """
  batch: tf.Tensor
  seq: tf.Tensor
  bias: tf.Tensor
  training: Optional[bool] = None
  recompute: bool = False
  serving: bool = False


def is_packed(inputs) -> bool:
  """Packed rows: positions given, or a [batch, seq, seq] attention mask."""
  return isinstance(inputs, dict) and (
      INPUT_POSITIONS in inputs or len(inputs[INPUT_MASK].shape) == 3)


def serves(encoder, training, inputs) -> bool:
  """Whether the call runs the serving form: not training, float32,
  unpacked, and the encoder built with `fused_inference`."""
  return (encoder.fused_inference and not is_training(training)
          and not is_packed(inputs)
          and encoder.embedding_layer.compute_dtype == "float32")


def replaces_keras_graph(encoder, training, inputs) -> bool:
  """Whether a call without output_positions runs this loop: serving, or
  training with dropout or recomputation."""
  config = encoder.config
  dropout = (config.hidden_dropout_prob > 0
             or config.attention_probs_dropout_prob > 0)
  return serves(encoder, training, inputs) or (
      is_training(training) and (dropout or encoder.recompute_layers))


def blocks_by_layer(config, sublayer: Callable) -> List[List[Tuple]]:
  """The one statement of the block order: per layer, its
  `inner_group_num` (attention, feed-forward) sublayer pairs in order, by
  the config's names (AlbertConfig.sublayer_names: shared sublayers appear
  in several layers). `sublayer(name)` gives the layer of a name (the
  encoder's constructor builds them; `blocks` looks them up)."""
  return [list(zip(map(sublayer, attention), map(sublayer, ffn)))
          for attention, ffn in zip(config.sublayer_names("attention"),
                                    config.sublayer_names("ffn"))]


def blocks(encoder) -> List[Tuple]:
  """Per block application in order, its (AttentionSublayer,
  FeedForwardSublayer) (shared ones once per use)."""
  return [block for layer in blocks_by_layer(encoder.config,
                                             encoder.get_layer)
          for block in layer]


def run(encoder, inputs: Dict[str, tf.Tensor], training=None,
        output_positions: Optional[tf.Tensor] = None,
        attention_probs: bool = False,
        block_internals: bool = False) -> Dict:
  """The encoder's outputs (see AlbertEncoder) by the shared block.

  Args:
    encoder: an AlbertEncoder (its layers' variables are read).
    inputs: its input dict: int32 [batch, seq], input_mask possibly an
      attention mask [batch, seq, seq] with input_positions (packed rows).
    training: the call's training flag (dropout; recomputation if the
      encoder has `recompute_layers`).
    output_positions: None, or int [batch, P]: the last block only at
      [CLS] and these.
    attention_probs: also return attention_probs, a list of one [batch,
      heads, T, seq] per block application.
    block_internals: also return, per block application, attention_values
      [batch, heads, seq, head size] and attention_scores [batch, heads, T,
      seq] (before the mask and softmax), and embedding_output [batch, seq,
      H] (the first block's input), in the compute dtype.

  Returns:
    sequence_output [batch, seq, H], pooled_output [batch, H] and
    encoder_outputs (L x [batch, seq, H]); with output_positions instead
    pooled_output and sequence_output_at_positions [batch, P, H].
  """
  word_ids = inputs[INPUT_WORD_IDS]
  shape = tf.shape(word_ids)
  batch, seq = shape[0], shape[1]
  hidden = encoder.config.hidden_size
  x = tf.reshape(encoder.embedding_layer(
      word_ids, inputs[INPUT_TYPE_IDS], inputs.get(INPUT_POSITIONS),
      training=training), [-1, hidden])  # (B*S, H)
  call = Call(batch, seq, shared_block.mask_bias(inputs[INPUT_MASK]),
              training, encoder.recompute_layers and is_training(training),
              serves(encoder, training, inputs))  # bias (B, 1, 1|S, S)
  all_blocks = blocks(encoder)
  per_layer = encoder.config.inner_group_num
  embedding_output = x
  encoder_outputs, internals = [], []
  query_rows = None
  # Each distinct sublayer's variables read once per call (a recomputed
  # block must read them inside its function).
  prepared = {}
  for index, block in enumerate(all_blocks):
    key = tuple(map(id, block))
    if not call.recompute and key not in prepared:
      prepared[key] = arithmetic(block, call.serving, read_once=True)
    if index == len(all_blocks) - 1 and output_positions is not None:
      query_rows = tf.concat([tf.zeros([batch, 1], tf.int32), tf.cast(
          output_positions, tf.int32)], axis=1)  # (B, 1+P)
      if call.bias.shape[2] != 1:  # the queries' rows of a packed mask
        call = dataclasses.replace(call, bias=tf.gather(
            call.bias, query_rows, axis=2, batch_dims=1))
    x, p = apply_block(block, x, call, query_rows,
                       attention_probs or block_internals,
                       prepared.get(key))
    internals.append(p)
    if (index + 1) % per_layer == 0 and query_rows is None:
      encoder_outputs.append(tf.reshape(x, [batch, seq, hidden]))
  pooler = encoder.get_layer("pooler")
  if query_rows is not None:
    rows = tf.reshape(x, [batch, -1, hidden])  # (B, 1+P, H)
    outputs = dict(pooled_output=pooler(rows[:, 0, :]),
                   sequence_output_at_positions=rows[:, 1:, :])
  else:
    outputs = dict(sequence_output=encoder_outputs[-1],
                   pooled_output=pooler(encoder_outputs[-1][:, 0, :]),
                   encoder_outputs=encoder_outputs)
  if attention_probs:
    outputs["attention_probs"] = [p[0] for p in internals]
  if block_internals:
    outputs["attention_values"] = [p[1] for p in internals]
    outputs["attention_scores"] = [p[2] for p in internals]
    outputs["embedding_output"] = tf.reshape(embedding_output,
                                             [batch, seq, hidden])
  return outputs


def arithmetic(block, serving=False, read_once=False) -> Tuple:
  """A block's (shared_block.Attention, shared_block.FeedForward).
  `serving`: the serving form's GELU; `read_once`: their variables read
  now, not on every application."""
  return (shared_block.Attention(block[0], read_once),
          shared_block.FeedForward(block[1], serving, read_once))


def apply_block(block, x, call: Call, query_rows=None, with_probs=False,
                prepared=None):
  """One block (attention then feed-forward) on rows x [batch * seq, H]:
  rows [batch * T, H] float32 (T = seq or query_rows' [batch, T]), and the
  attention's (probabilities, values, scores) (shared_block.Attention's;
  None unless `with_probs`). `call`: what the call's applications share
  (Call); `prepared`: the block's `arithmetic` with its variables already
  read (not under recompute)."""
  attention, ffn = prepared or arithmetic(block, call.serving)
  batch, seq, bias, training = call.batch, call.seq, call.bias, call.training
  seed = _block_seed(block) if is_training(training) else None
  # The update scope's rows, read now: a recomputed forward runs inside
  # tape.gradient, after the trainer has left that scope.
  first_row, num_rows = scope_rows()

  def forward(x):
    with seeded(seed, first_row, num_rows):
      y = attention(x, batch, seq, bias, query_rows, training, with_probs)
      y, probs = y if with_probs else (y, None)
      length = seq if query_rows is None else tf.shape(query_rows)[1]
      y = ffn(y, batch, length, training)
      return (y, probs) if with_probs else y

  if call.recompute:
    forward = tf.recompute_grad(forward)
  y = forward(x)
  return y if with_probs else (y, None)


def _block_seed(block) -> Optional[tf.Tensor]:
  """The block's dropout seed int64 [2]: the update scope's next, else a
  draw from its first dropout generator; None without dropout."""
  attention, ffn = block
  layers = (attention.attention.probs_dropout, attention.dropout,
            ffn.dropout)
  rngs = [layer.rng for layer in layers if layer.rate > 0]
  if not rngs:
    return None
  seed = next_seed()
  return rngs[0].make_seeds(1)[:, 0] if seed is None else seed
