"""The Keras model `fit` trains in fine-tuning: our train step, the task's loss.

The step is the pretraining runner's (albert_tf.training.gradient_update): the
loss averaged over the global batch, all-reduced gradients clipped to a
global norm, loss scaling under float16. With length buckets its train
function is traced once per batch shape
(albert_tf.training.finetuning.bucketed_steps).

Packed batches (data_pipeline.tasks.packing: several examples a row, their
number varying from step to step) run through the model's `packed_call`;
the loss is the mean over the real examples of the global batch (the
example slots' weights summed over the replicas), so a step's loss and
gradient are those of the same examples unpacked.

With gradient accumulation (`accumulation_steps` K > 1,
albert_tf.training.accumulation) the step loops over K row slices of the
replica's batch (a packed row's example slots move with it); each slice's
loss is its share of the whole update's (divided by the update's example
count, or the whole batch's normaliser a task's loss declares: NER's tagged
pieces), and the summed gradient is clipped and applied once.

Dropout (encoder and head) draws each example's masks from the update's
seed and the example's position in the update (albert_tf.training.
update_dropout): an update is the same with any number of replicas and
micro-batches.
"""

import tensorflow as tf
import tf_keras

from albert_common.encoder_inputs import EXAMPLE_WEIGHTS
from albert_tf.training import accumulation
from albert_tf.training import gradient_update
from albert_tf.training import mixed_precision
from albert_tf.training import update_dropout
from albert_tf.training.finetuning import bucketed_steps
from albert_tf.training.finetuning.task import LossFn


class FinetuningTrainer(tf_keras.Model):
  """Wraps a task model for `fit`: our train step, the task's loss."""

  def __init__(self, model: tf_keras.Model, loss_fn: LossFn,
               clip_norm: float = 1.0, per_shape_steps: bool = False,
               accumulation_steps: int = 1):
    super().__init__(name="finetuning")
    self.model = model
    self.accumulation_steps = accumulation_steps
    self.loss_fn = loss_fn
    self.clip_norm = clip_norm
    self.loss_tracker = tf_keras.metrics.Mean("loss")
    # Length buckets: one trace of the train step per batch shape.
    self.per_shape_steps = per_shape_steps
    self.train_traces = 0
    self.train_shapes = set()
    self.optimizer_weights_built = False

  def make_train_function(self, force=False):
    if not self.per_shape_steps:
      if not self.optimizer_weights_built:
        # Slots made before the first trace: one trace, not two.
        bucketed_steps.build_optimizer_weights(self)
      return super().make_train_function(force)
    if self.train_function is None or force:
      self.train_function = bucketed_steps.per_shape_train_function(self)
    return self.train_function

  def call(self, inputs, training=None):
    return self.model(inputs, training=training)

  @property
  def metrics(self):
    return [self.loss_tracker]

  def train_step(self, data):
    features, labels = data
    context = tf.distribute.get_replica_context()
    rows = tf.shape(tf.nest.flatten(features)[0])[0]
    seed = update_dropout.update_seed(
        update_dropout.seed_generator(self.model), self.optimizer.iterations)
    first_row = update_dropout.replica_first_row(rows)
    if self.accumulation_steps > 1:
      return self._accumulated_step(features, labels, context, seed,
                                    first_row)
    with tf.GradientTape() as tape, update_dropout.update_scope(
        seed, first_row, rows):
      if EXAMPLE_WEIGHTS in features:
        loss, replica_loss = self._packed_loss(features, labels, context)
      else:
        outputs = self.model(features, training=True)
        loss = tf.reduce_mean(tf.cast(self.loss_fn(labels, outputs),
                                      tf.float32))
        # Each replica's share of the mean over the global batch.
        replica_loss = loss / context.num_replicas_in_sync
      scaled = mixed_precision.scaled_loss(self.optimizer, replica_loss)
    grads = tape.gradient(scaled, self.model.trainable_variables)
    return self._apply(grads, loss)

  def _apply(self, grads, loss):
    """Clips and applies `grads` (one per trainable variable, None for an
    unused one); the step's logs."""
    variables = self.model.trainable_variables
    # A variable the task's outputs do not use (a span model's pooler) has
    # no gradient: it is left out, as the optimizer would (and warn).
    used = [i for i, g in enumerate(grads) if g is not None]
    norm = gradient_update.apply_clipped_gradients(
        self.optimizer, [grads[i] for i in used], [variables[i] for i in used],
        self.clip_norm)
    self.loss_tracker.update_state(loss)
    return {"loss": self.loss_tracker.result(), "step_loss": loss,
            "gradient_norm": norm,
            "learning_rate": gradient_update.current_learning_rate(
                self.optimizer)}

  def _accumulated_step(self, features, labels, context, seed, first_row):
    """The step in K row slices: normalisers of the whole replica batch
    (and update) first, then the loop, then one update. `seed` and
    `first_row`: the update's dropout seed and the replica's first row."""
    rows = tf.shape(tf.nest.flatten(features)[0])[0]
    if EXAMPLE_WEIGHTS in features:
      count = tf.reduce_sum(features[EXAMPLE_WEIGHTS])
      global_count = context.all_reduce(tf.distribute.ReduceOp.SUM, count)
      local, share = tf.maximum(count, 1.0), tf.maximum(global_count, 1.0)
    else:
      local = tf.cast(rows, tf.float32)
      share = local * context.num_replicas_in_sync
    loss_kwargs = {}
    normaliser = getattr(self.loss_fn, "batch_normaliser", None)
    if normaliser is not None:  # a loss normalised over the whole batch
      loss_kwargs["normaliser"] = normaliser(labels)

    if not self.model.built:  # variables are not created inside a loop
      with update_dropout.update_scope(seed, first_row, rows):
        self._summed_loss(features, labels, loss_kwargs)

    def micro_step(micro, micro_first_row):
      micro_features, micro_labels = micro
      micro_rows = tf.shape(tf.nest.flatten(micro_features)[0])[0]
      with tf.GradientTape() as tape, update_dropout.update_scope(
          seed, first_row + micro_first_row, micro_rows):
        total = self._summed_loss(micro_features, micro_labels, loss_kwargs)
        scaled = mixed_precision.scaled_loss(self.optimizer, total / share)
      return tape.gradient(scaled, self.model.trainable_variables), (total,)

    grads, (total,) = accumulation.accumulate(
        (features, labels), self.accumulation_steps, micro_step,
        self.model.trainable_variables, num_sums=1)
    return self._apply(grads, total / local)

  def _summed_loss(self, features, labels, loss_kwargs):
    """The sum of the per-example losses of a (micro-)batch (packed: over
    its real example slots), float32."""
    if EXAMPLE_WEIGHTS in features:
      weights = tf.reshape(features[EXAMPLE_WEIGHTS], [-1])  # (R * K,)
      outputs = self.model.packed_call(features, training=True)
      labels = tf.reshape(labels, tf.concat([[-1], tf.shape(labels)[2:]], 0))
      losses = tf.cast(self.loss_fn(labels, outputs, **loss_kwargs),
                       tf.float32)
      return tf.reduce_sum(losses * weights)
    outputs = self.model(features, training=True)
    return tf.reduce_sum(tf.cast(self.loss_fn(labels, outputs, **loss_kwargs),
                                 tf.float32))

  def _packed_loss(self, features, labels, context):
    """(this replica's mean loss, its share of the global mean) of a
    packed batch: per-example losses of the real example slots."""
    weights = tf.reshape(features[EXAMPLE_WEIGHTS], [-1])  # (R * K,)
    outputs = self.model.packed_call(features, training=True)
    labels = tf.reshape(labels, tf.concat([[-1], tf.shape(labels)[2:]], 0))
    losses = tf.cast(self.loss_fn(labels, outputs), tf.float32)  # (R * K,)
    total = tf.reduce_sum(losses * weights)
    count = tf.reduce_sum(weights)
    global_count = context.all_reduce(tf.distribute.ReduceOp.SUM, count)
    return (total / tf.maximum(count, 1.0),
            total / tf.maximum(global_count, 1.0))

  def predict_step(self, data):
    if isinstance(data, tuple):
      data = data[0]
    return self.model(data, training=False)
