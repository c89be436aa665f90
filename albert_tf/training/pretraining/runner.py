"""Orbit trainer + evaluator for ALBERT pretraining.

Why Orbit rather than Keras `fit`: Orbit (Model Garden's loop library) runs
`iterations_per_loop` steps inside one `tf.function` `while` loop (the host
loop TPUs need), and its Controller already does what pretraining wants:
checkpoints every N steps through a CheckpointManager with restore-on-start,
train and eval summaries in separate directories, progress lines and
preemption actions. The step itself stays ours: explicit all-reduce of the
gradients, clipping to global norm 1.0 after the all-reduce, and an optional
XLA-compiled forward/backward. With gradient accumulation
(albert_tf.training.accumulation) the replica step loops over K slices of
its batch, each loss normalised by the whole update's mask weights and
sequence count, and applies the summed gradient once. Dropout draws each
sequence's masks from the update's seed and its position in the update
(albert_tf.training.update_dropout): the same with any replicas and K.
"""

import math
from typing import Dict

import numpy as np
import orbit
import tensorflow as tf
import tf_keras

from albert_common.encoder_inputs import ENCODER_INPUT_NAMES
from albert_tf.training import accumulation
from albert_tf.training import gradient_update
from albert_tf.training import mixed_precision
from albert_tf.training import update_dropout
from albert_tf.training.gradient_update import NonFiniteLossError
from albert_tf.training.pretraining.objective import PretrainingMetrics
from albert_tf.training.pretraining.objective import replica_loss

MODEL_INPUTS = ENCODER_INPUT_NAMES + ("masked_lm_positions",)


class PretrainingRunner(orbit.StandardTrainer, orbit.StandardEvaluator):
  """Train and eval steps for an AlbertPretrainer under a strategy.

  Args:
    strategy: the tf.distribute strategy the model was built under.
    model: AlbertPretrainer, built in `strategy.scope()`.
    optimizer: from `albert_tf.optimization.create_optimizer`, built in scope;
      a LossScaleOptimizer wrapping it for float16.
    train_dataset: a distributed dataset of batches (see
      data_pipeline.pretraining.reader), or None for eval only.
    eval_dataset: a distributed dataset, or None.
    global_batch_size: sequences per step over all replicas.
    jit_compile: compile the forward/backward pass with XLA.
    clip_norm: global gradient norm after the all-reduce.
    gradient_accumulation_steps: K; each replica computes its batch in K
      equal slices (a multiple of K sequences per replica).
  """

  def __init__(self, strategy: tf.distribute.Strategy, model: tf_keras.Model,
               optimizer, train_dataset=None, eval_dataset=None,
               global_batch_size: int = 1, jit_compile: bool = False,
               clip_norm: float = 1.0, gradient_accumulation_steps: int = 1):
    self.strategy = strategy
    self.accumulation_steps = gradient_accumulation_steps
    self.model = model
    self.optimizer = optimizer
    self.global_batch_size = global_batch_size
    self.clip_norm = clip_norm
    self.has_eval = eval_dataset is not None
    with strategy.scope():
      # The dropout seed reads the step in the replica step: made here, not
      # lazily inside the first traced step (a variable made in a replica
      # context of MirroredStrategy broke that trace's initialising copy).
      _ = optimizer.iterations
      self.train_metrics = PretrainingMetrics()
      self.eval_metrics = PretrainingMetrics()
      self.gradient_norm = tf_keras.metrics.Mean("gradient_norm")
    self.forward_backward = tf.function(self._forward_backward_fn,
                                         jit_compile=jit_compile)
    self._forward = tf.function(self._forward_fn, jit_compile=jit_compile)
    if train_dataset is not None:
      orbit.StandardTrainer.__init__(
          self, train_dataset,
          options=orbit.StandardTrainerOptions(use_tf_while_loop=True))
    if eval_dataset is not None:
      orbit.StandardEvaluator.__init__(
          self, eval_dataset,
          options=orbit.StandardEvaluatorOptions(use_tf_function=True))

  # --- the step ---------------------------------------------------------

  def _model_inputs(self, batch):
    return {k: batch[k] for k in MODEL_INPUTS}

  def _forward_backward_fn(self, batch, global_mlm_weight, seed=None,
                           first_row=0):
    """Loss share, gradients and outputs for this replica's batch (or a
    micro-batch of it), its dropout that of rows `first_row`... of the
    update whose dropout seed is `seed` (None: no dropout seed)."""
    rows = tf.shape(batch["input_word_ids"])[0]
    with tf.GradientTape() as tape, update_dropout.update_scope(
        seed, first_row, rows):
      outputs = self.model(self._model_inputs(batch), training=True)
      loss, per_token = replica_loss(batch, outputs, global_mlm_weight,
                                     self.global_batch_size)
      scaled = mixed_precision.scaled_loss(self.optimizer, loss)
    grads = tape.gradient(scaled, self.model.trainable_variables)
    return grads, outputs, per_token

  def _forward_fn(self, batch, global_mlm_weight):
    outputs = self.model(self._model_inputs(batch), training=False)
    _, per_token = replica_loss(batch, outputs, global_mlm_weight,
                                self.global_batch_size)
    return outputs, per_token

  def replica_train_step(self, batch):
    """One replica's whole step: forward, both losses, gradients, all-reduce,
    clipping, optimizer update, metrics. What a TPU compiles (XLA)."""
    seed = update_dropout.update_seed(
        update_dropout.seed_generator(self.model), self.optimizer.iterations)
    first_row = update_dropout.replica_first_row(
        tf.shape(batch["input_word_ids"])[0])
    if self.accumulation_steps > 1:
      grads = self._accumulated_gradients(batch, _global_mlm_weight(batch),
                                          seed, first_row)
    else:
      grads, outputs, per_token = self.forward_backward(
          batch, _global_mlm_weight(batch), seed, first_row)
    norm = gradient_update.apply_clipped_gradients(
        self.optimizer, grads, self.model.trainable_variables,
        self.clip_norm)
    if self.accumulation_steps == 1:
      self.train_metrics.update(batch, outputs, per_token)
    self.gradient_norm.update_state(norm)

  def _accumulated_gradients(self, batch, global_mlm_weight, seed=None,
                             first_row=0):
    """The summed float32 gradients of this replica's K slices (each loss
    its share of the whole update's: the normalisers are the whole
    update's), the metrics updated per slice."""
    if not self.model.built:  # variables are not created inside a loop
      self.model(self._model_inputs(batch), training=False)

    def micro_step(micro, micro_first_row):
      grads, outputs, per_token = self.forward_backward(
          micro, global_mlm_weight, seed, first_row + micro_first_row)
      self.train_metrics.update(micro, outputs, per_token)
      return grads, ()

    grads, _ = accumulation.accumulate(batch, self.accumulation_steps,
                                       micro_step,
                                       self.model.trainable_variables)
    return grads

  def train_step(self, iterator):
    self.strategy.run(self.replica_train_step, args=(next(iterator),))

  def eval_step(self, iterator):
    def step_fn(batch):
      outputs, per_token = self._forward(batch, _global_mlm_weight(batch))
      self.eval_metrics.update(batch, outputs, per_token)

    self.strategy.run(step_fn, args=(next(iterator),))

  # --- loop hooks (eager) -------------------------------------------------

  def train_loop_begin(self):
    self.train_metrics.reset()
    self.gradient_norm.reset_state()

  def train_loop_end(self) -> Dict[str, np.ndarray]:
    results = {k: v.numpy() for k, v in self.train_metrics.result().items()}
    results["loss"] = results["mlm_loss"] + results["sop_loss"]
    results["gradient_norm"] = self.gradient_norm.result().numpy()
    results["learning_rate"] = self.learning_rate()
    if not math.isfinite(float(results["loss"])):
      raise NonFiniteLossError(
          f"training loss is {results['loss']} at step "
          f"{int(self.optimizer.iterations.numpy())} (learning rate "
          f"{results['learning_rate']:.3g}); stopping without saving. The "
          f"last checkpoint in --output_dir is the last good one; lower "
          f"--learning_rate or raise --num_warmup_steps.")
    return results

  def eval_begin(self):
    self.eval_metrics.reset()

  def eval_end(self) -> Dict[str, np.ndarray]:
    results = {k: v.numpy() for k, v in self.eval_metrics.result().items()}
    results["loss"] = results["mlm_loss"] + results["sop_loss"]
    return results

  def learning_rate(self) -> float:
    return float(gradient_update.current_learning_rate(self.optimizer))

  @property
  def global_step(self) -> tf.Variable:
    return self.optimizer.iterations


def _global_mlm_weight(batch) -> tf.Tensor:
  """The sum of masked_lm_weights over all replicas (replica context): the
  MLM loss's denominator."""
  return tf.distribute.get_replica_context().all_reduce(
      tf.distribute.ReduceOp.SUM,
      tf.reduce_sum(tf.cast(batch["masked_lm_weights"], tf.float32)))
