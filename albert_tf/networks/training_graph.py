"""The AlbertEncoder's training path: a dropout seed per block, recomputation.

`AlbertEncoder.call` runs this when training with dropout or with
`recompute_layers=True`, and for every call with `output_positions` (the
last block at [CLS] and those positions only). Same layers, same variables
as the Keras graph (tests: equal outputs and gradients).

Dropout: before each block (an attention sublayer then a feed-forward
sublayer) the encoder takes one seed, outside any recomputed function:
inside a trainer's update scope (albert_tf.training.update_dropout) the
scope's next seed, so every mask is a function of the update's seed and
each example's position in the update (the same whatever the replicas
and micro-batches); else a draw from the block's first checkpointed
dropout generator. Inside the block every dropout is stateless under that
seed (layers.checkpointed_dropout.`seeded`). Recomputing the block
therefore draws the masks of the first forward pass, and a resumed run
(the generator's state is checkpointed) draws those of an uninterrupted
one.

Recomputation (`recompute_layers`): each block is wrapped in
`tf.recompute_grad`, so the backward pass keeps only the block's input
[batch, seq, H] and recomputes its activations: memory of one block
instead of L, for about one more forward pass. The wrapped function
takes only float tensors positionally (tf.recompute_grad rejects keyword
arguments in graph mode, and integer inputs have no gradient): the mask,
the seed and `training` are closed over. The layers are called through
`Layer.__call__`, where tf_keras casts variables under mixed precision;
they are built with the encoder, so no variable is created inside.
"""

from typing import Dict, Optional

import tensorflow as tf

from albert_common.encoder_inputs import INPUT_MASK
from albert_common.encoder_inputs import INPUT_POSITIONS
from albert_common.encoder_inputs import INPUT_TYPE_IDS
from albert_common.encoder_inputs import INPUT_WORD_IDS
from albert_tf.layers.checkpointed_dropout import CheckpointedDropout
from albert_tf.layers.checkpointed_dropout import next_seed
from albert_tf.layers.checkpointed_dropout import seeded


def is_training(training) -> bool:
  """Whether `training` is a Python-true training flag."""
  return isinstance(training, (bool, int)) and bool(training)


def applies(encoder, training) -> bool:
  """Whether a call without `output_positions` takes this path rather
  than the Keras graph: training with dropout or with recomputation."""
  config = encoder.config
  dropout = (config.hidden_dropout_prob > 0
             or config.attention_probs_dropout_prob > 0)
  return is_training(training) and (dropout or encoder.recompute_layers)


def outputs(encoder, blocks, inputs: Dict[str, tf.Tensor],
            output_positions: Optional[tf.Tensor], training):
  """The encoder's outputs (see AlbertEncoder), from its layers.

  Args:
    encoder: the AlbertEncoder.
    blocks: its (AttentionSublayer, FeedForwardSublayer) per block, in order.
    inputs: the encoder's input dict.
    output_positions: None (every output) or int [batch, P].
    training: the call's training flag.
  """
  input_mask = inputs[INPUT_MASK]  # (B, S), or (B, S, S) for packed rows
  recompute = encoder.recompute_layers and is_training(training)
  x = encoder.embedding_layer(inputs[INPUT_WORD_IDS], inputs[INPUT_TYPE_IDS],
                              inputs.get(INPUT_POSITIONS), training=training)
  pooler = encoder.get_layer("pooler")
  if output_positions is None:
    per_layer = len(blocks) // encoder.config.num_hidden_layers
    encoder_outputs = []
    for index, block in enumerate(blocks):
      x = _block(block, x, input_mask, training, recompute)
      if (index + 1) % per_layer == 0:
        encoder_outputs.append(x)
    return dict(sequence_output=x, pooled_output=pooler(x[:, 0, :]),
                encoder_outputs=encoder_outputs)
  for block in blocks[:-1]:
    x = _block(block, x, input_mask, training, recompute)
  positions = tf.cast(output_positions, tf.int32)
  cls = tf.zeros([tf.shape(positions)[0], 1], tf.int32)
  rows = tf.concat([cls, positions], axis=1)
  query = tf.gather(x, rows, batch_dims=1)  # (B, 1 + P, H)
  if input_mask.shape.rank == 3:  # the queries' rows of the mask
    input_mask = tf.gather(input_mask, rows, batch_dims=1)  # (B, 1 + P, S)
  y = _block(blocks[-1], x, input_mask, training, recompute, query=query)
  return dict(pooled_output=pooler(y[:, 0, :]),
              sequence_output_at_positions=y[:, 1:, :])


def _block(block, x, input_mask, training, recompute, query=None):
  """One attention + feed-forward block on x [B, S, H] -> [B, T, H]."""
  attention, ffn = block
  rng = _dropout_generator(block) if is_training(training) else None
  seed = None if rng is None else next_seed()  # the update's, else drawn
  if rng is not None and seed is None:
    seed = rng.make_seeds(1)[:, 0]  # int64 (2,)

  def run(x, *query):
    with seeded(seed):
      y = attention(x, input_mask, query=query[0] if query else None,
                    training=training)
      return ffn(y, training=training)

  if recompute:
    run = tf.recompute_grad(run)
  return run(x) if query is None else run(x, query)


def _dropout_generator(block) -> Optional[tf.random.Generator]:
  """The generator of the block's first dropout with rate > 0, if any."""
  for sublayer in block:
    for layer in sublayer._flatten_layers():  # pylint: disable=protected-access
      if isinstance(layer, CheckpointedDropout) and layer.rate > 0:
        return layer.rng
  return None
