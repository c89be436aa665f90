"""Training and prediction steps for length-bucketed batches.

Keras' `fit` traces its train function once, on the dataset's element_spec,
in which a bucketed batch's sequence length is unknown ([batch, None]): one
graph with dynamic shapes, which XLA and TPUs cannot compile once. Here the
batch is taken from the iterator first and then passed to a `tf.function`,
which traces once per concrete input shape: one static-shape graph per
bucket, each compiled once (with --jit_compile, by XLA), reused for every
later batch of that bucket. `model.train_traces` counts the traces and
`model.train_shapes` the batch shapes seen, so a test (and the log) shows
they are equal: no retracing per batch.

The cost: `steps_per_execution` steps are a Python loop of step calls (one
host call each) rather than one in-graph loop; consecutive batches come from
different buckets, so they could not share one graph anyway.

Prediction over a bucketed evaluation dataset (feature dicts that carry
data_pipeline.tasks.length_buckets.EXAMPLE_INDEX) runs the model per batch and
puts the outputs back in input order; sequence outputs ([batch, bucket,
...]) are padded to the longest bucket's length with PAD_OUTPUT (floats:
below any logit or log-probability, so the positions a bucket never computed
never rank among the best; they are padding, which no answer uses) or 0.
"""

from typing import Dict

import numpy as np
import tensorflow as tf
from tf_keras.src.engine import training as keras_training

from data_pipeline.tasks.length_buckets import EXAMPLE_INDEX

# Sequence outputs beyond a batch's bucket (float outputs; int ones get 0).
PAD_OUTPUT = -1e30


def _shape_key(data) -> tuple:
  """The shapes of a (possibly per-replica) batch, as a hashable key."""
  return tuple(tuple(x.shape) for x in tf.nest.flatten(
      data, expand_composites=True) if hasattr(x, "shape"))


def per_shape_train_function(model):
  """A train function for `model.fit` (see module docstring) that runs
  `model.train_step` in a tf.function traced once per batch shape.

  Args:
    model: a compiled tf_keras.Model with `train_traces` (int) and
      `train_shapes` (set) attributes, updated here.

  Returns:
    train_function(iterator) -> logs of the last step, as Keras' own.
  """
  strategy = model.distribute_strategy

  def run_step(data):
    outputs = model.train_step(data)
    with tf.control_dependencies(
        keras_training._minimum_control_deps(outputs)):  # noqa: SLF001
      model._train_counter.assign_add(1)  # noqa: SLF001
    return outputs

  if model.jit_compile:
    run_step = tf.function(run_step, jit_compile=True)

  def step(data):
    # Python: runs once per trace, i.e. per new input shape.
    model.train_traces += 1
    outputs = strategy.run(run_step, args=(data,))
    return keras_training.reduce_per_replica(
        outputs, strategy, reduction=model.distribute_reduction_method)

  step = tf.function(step)

  def train_function(iterator):
    logs = None
    if not model.optimizer_weights_built:
      build_optimizer_weights(model)
    steps = int(model._steps_per_execution.numpy())  # noqa: SLF001
    for _ in range(steps):
      data = next(iterator)
      model.train_shapes.add(_shape_key(data))
      logs = step(data)
    return logs

  return train_function


def build_optimizer_weights(model) -> None:
  """Creates the optimizer's slots before the first step, so that the step's
  first call does not trace twice (tf.function traces a function that
  creates variables once more without them). Zero slots, as the first step
  would make them; a resumed run's are restored as they are created."""
  optimizer = getattr(model.optimizer, "inner_optimizer", model.optimizer)
  create = getattr(optimizer, "_create_all_weights", None)  # Keras legacy
  if create is not None:
    with model.distribute_strategy.scope():
      create(model.trainable_variables)
  model.optimizer_weights_built = True


class InputOrderPredictor:
  """Model outputs over bucketed evaluation datasets, in input order.

  One tf.function per predictor (kept across evaluations), traced once per
  batch shape: a full batch and at most one remainder per bucket.

  Args:
    model: the task model (feature dict -> dict of outputs or a tensor).
    strategy: the tf.distribute strategy the model was built under.
  """

  def __init__(self, model, strategy):
    self.strategy = strategy

    def body(features):
      features = dict(features)
      index = features.pop(EXAMPLE_INDEX)
      outputs = model(features, training=False)
      if not isinstance(outputs, dict):
        outputs = {"outputs": outputs}
      return outputs, index

    self._predict_batch = tf.function(
        lambda features: strategy.run(body, args=(features,)))

  def __call__(self, dataset: tf.data.Dataset) -> Dict[str, np.ndarray]:
    """Outputs for `dataset`: finite, batched feature dicts, each with
    EXAMPLE_INDEX (int64 [batch]: the example's position in the unbatched
    input).

    Returns:
      {output name: numpy array [N, ...]} ordered by EXAMPLE_INDEX (a bare
      tensor output is named "outputs"); an output whose second dimension
      differs between batches (a sequence output) is padded to the
      largest with PAD_OUTPUT (ints: 0).
    """
    strategy = self.strategy
    # Every worker predicts every example (a multi-worker strategy would
    # shard the batches between workers, and each would score its share
    # only; gathering them would hang where workers hold unequal counts).
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = (
        tf.data.experimental.AutoShardPolicy.OFF)
    dataset = dataset.with_options(options)
    chunks, indices = {}, []
    for features in strategy.experimental_distribute_dataset(dataset):
      outputs, index = self._predict_batch(features)
      indices.extend(_local(strategy, index))
      for key, value in outputs.items():
        chunks.setdefault(key, []).extend(_local(strategy, value))
    order = np.argsort(np.concatenate(indices), kind="stable")
    return {key: _concatenate(parts)[order] for key, parts in chunks.items()}


def _local(strategy, value):
  return [np.asarray(v) for v in strategy.experimental_local_results(value)]


def _concatenate(parts):
  """Concatenates along axis 0, padding axis 1 to the largest."""
  if parts[0].ndim >= 2:
    width = max(p.shape[1] for p in parts)
    fill = PAD_OUTPUT if np.issubdtype(parts[0].dtype, np.floating) else 0
    parts = [np.pad(p, [(0, 0), (0, width - p.shape[1])] +
                    [(0, 0)] * (p.ndim - 2), constant_values=fill)
             for p in parts]
  return np.concatenate(parts, axis=0)
