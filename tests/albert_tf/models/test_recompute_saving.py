"""--recompute_layers saves what it says: the gradient graph runs every
block's forward pass again and keeps only each block's input.

The other recomputation tests compare outputs and gradients, which are
equal whether or not anything is recomputed; these fail when nothing is
(checked by disabling the tf.recompute_grad wrap in
networks/layer_loop.py).
"""

import dataclasses

import tensorflow as tf

from albert_tf.models import albert_early_exit_classifier
from albert_tf.networks.albert_encoder import AlbertEncoder
from tests.albert_tf.models import graph_census

BATCH, SEQ = 2, 8
SPECS = {name: tf.TensorSpec([BATCH, SEQ], tf.int32)
         for name in ("input_word_ids", "input_mask", "input_type_ids")}
# One block application's forward matrix products, by hand: the query,
# key, value and output projections and the feed-forward's two denses
# (MatMul), the attention scores and the context (BatchMatMul).
PRODUCTS_PER_APPLICATION = 4 + 2 + 2


def _built(model):
  model({name: tf.ones(spec.shape, spec.dtype)
         for name, spec in SPECS.items()})
  return model


def _encoder_graph(config, layers: int, recompute: bool):
  encoder = _built(AlbertEncoder(
      dataclasses.replace(config, num_hidden_layers=layers),
      recompute_layers=recompute))

  def loss(data):
    outputs = encoder(data, training=True)
    return (tf.reduce_sum(tf.square(outputs["sequence_output"]))
            + tf.reduce_sum(outputs["pooled_output"]))

  return graph_census.trace_gradient(loss, encoder.trainable_variables,
                                     SPECS)


def test_the_gradient_graph_runs_each_block_forward_again(tiny_config):
  layers = 3
  plain, _ = _encoder_graph(tiny_config, layers, recompute=False)
  recomputed, _ = _encoder_graph(tiny_config, layers, recompute=True)
  extra = graph_census.products(recomputed) - graph_census.products(plain)
  assert extra == layers * PRODUCTS_PER_APPLICATION  # 24


def test_each_recomputed_application_keeps_only_its_input(tiny_config):
  """An application more (3 layers against 2) keeps one float32
  [batch, seq, H] with recomputation, all its activations without."""
  def kept(layers, recompute):
    return graph_census.kept_bytes(
        *_encoder_graph(tiny_config, layers, recompute))

  block_input = 4 * BATCH * SEQ * tiny_config.hidden_size  # 2,048 bytes
  assert kept(3, True) - kept(2, True) == block_input
  without = kept(3, False) - kept(2, False)
  assert without > 15 * block_input  # 39,168 bytes measured


def test_the_early_exit_training_graph_recomputes(tiny_config):
  layers = 3
  config = dataclasses.replace(tiny_config, num_hidden_layers=layers)

  def graph(recompute):
    model = _built(albert_early_exit_classifier.AlbertEarlyExitClassifier(
        AlbertEncoder(config, recompute_layers=recompute), num_classes=2))

    def loss(data):
      return tf.reduce_sum(tf.square(model(data, training=True)[
          "all_logits"]))

    return graph_census.trace_gradient(loss, model.trainable_variables,
                                       SPECS)[0]

  extra = (graph_census.products(graph(True))
           - graph_census.products(graph(False)))
  assert extra == layers * PRODUCTS_PER_APPLICATION
