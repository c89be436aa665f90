"""Generic fine-tuning: any task model on an ALBERT encoder, under a strategy.

A task (GLUE, SQuAD, RACE, ...) describes itself with a `FinetuningTask`
(albert_tf.training.finetuning.task). `FinetuningRunner` does the rest, the
same for every task:

  - strategy (`--strategy`), mixed precision (`--dtype`), seed;
  - the encoder: a fresh AlbertEncoder, warm-started from `init_checkpoint`
    (ours, a released TF1 checkpoint, Hugging Face safetensors or Model
    Garden; see albert_tf.training.warm_start), or an exported encoder
    SavedModel (`init_savedmodel`, loaded as a trainable hub.KerasLayer);
  - the optimizer from albert_tf.optimization (AdamW by default, as the
    official ALBERT GLUE/SQuAD/RACE recipes), warmup + linear decay, gradients
    all-reduced and clipped to global norm 1.0 as the official optimizer does;
  - checkpoints every `save_checkpoints_steps` (resumed when `output_dir`
    already holds one: weights, optimizer slots, step and dropout RNG state;
    the data stream continues after the batches already trained on, so with
    --seed a killed and rerun run ends with the same weights as an
    uninterrupted one), each followed by a dev evaluation; the checkpoint with
    the best `task.main_metric` is kept under `output_dir/best/`;
  - TensorBoard summaries (`output_dir/train`, `output_dir/eval`);
  - `eval_results.json` (metric -> value, plus `step`) in `output_dir`;
  - a NaN/Inf training loss stops the run with a NonFiniteLossError.

Why Keras `fit` here and Orbit for pretraining: fine-tuning runs are short
(hundreds to tens of thousands of steps) on small in-memory data sets, and
what they need beyond a plain training loop (evaluation with non-streaming
metrics such as Matthews correlation or SQuAD F1 after each checkpoint,
keeping the best one, stopping on NaN) fits in one callback. `fit` already
distributes the batches under any strategy (including TPU) and runs
`steps_per_execution` steps per host call. The step itself is ours
(`finetuning_model.FinetuningTrainer.train_step`): the same all-reduce,
clip and apply as the pretraining runner (albert_tf.training's
gradient_update, mixed_precision and output_dir modules hold what both
share).

Layout of `output_dir`:
  ckpt-<step>.*              model + optimizer, for resuming
  best/ckpt-<step>.*         the best dev checkpoint (model weights)
  best/best_eval_results.json  its metrics and step
  train/, eval/              TensorBoard summaries
  albert_config.json         the encoder config the run used
  length_buckets.json        the run's length buckets (--length_buckets=auto
                             fitted once; reruns, evaluation, export reuse)
  eval_results.json          written by `evaluate(..., write=True)`
Under `--strategy=multi_worker` only the chief writes there; the other
workers write to `output_dir/.worker_<type>_<index>/`, removed at the end
(albert_tf.training.finetuning.multi_worker).
"""


import json
import math
from typing import Dict, List, Optional, Tuple

from absl import logging
import numpy as np
import tensorflow as tf
import tf_keras

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf import optimization
from albert_tf.config import AlbertConfig
from albert_tf.training import dataset_options
from albert_tf.training import mixed_precision
from albert_tf.training import output_dir
from albert_tf.training import runtime_params
from albert_tf.training import seeds
from albert_tf.training import warm_start as warm_starting
from albert_tf.training.finetuning import bucketed_steps
from albert_tf.training.finetuning import params as finetuning_params
from albert_tf.training.finetuning.model import FinetuningTrainer
from albert_tf.training.finetuning.params import FinetuningParams
from albert_tf.training.finetuning.task import FinetuningTask
from albert_tf.training.gradient_update import NonFiniteLossError
from albert_tf.training.strategy import create_strategy
from data_pipeline.tasks.length_buckets import EXAMPLE_INDEX

BEST_DIR = "best"
EVAL_RESULTS = "eval_results.json"
BEST_RESULTS = "best_eval_results.json"


def build_encoder(params: FinetuningParams, config: AlbertConfig):
  """An AlbertEncoder in the run's dtype, or the exported encoder as a
  trainable hub.KerasLayer. Call inside the strategy's scope."""
  if params.init_savedmodel:
    from albert_tf.exports.saved_model_loading import hub_layer
    layer = hub_layer(params.init_savedmodel, trainable=True, name="encoder")
    logging.info("loaded %d variables (%d trainable) from the exported "
                 "encoder %s", len(layer.variables),
                 len(layer.trainable_variables), params.init_savedmodel)
    return layer
  from albert_tf.networks.albert_encoder import AlbertEncoder
  return AlbertEncoder(config,
                       dtype=mixed_precision.DTYPE_POLICIES[params.runtime.dtype],
                       recompute_layers=params.runtime.recompute_layers,
                       name="encoder")


def _is_better(value: float, best: Optional[float], higher: bool) -> bool:
  if best is None:
    return True
  return value > best if higher else value < best


class _CheckpointEvalCallback(tf_keras.callbacks.Callback):
  """At each `fit` epoch end (= save_checkpoints_steps): checkpoint, evaluate,
  keep the best; on every batch: NaN check, summaries, stop at train_step."""

  def __init__(self, runner: "FinetuningRunner"):
    super().__init__()
    self.runner = runner
    self._last_saved = None

  def on_train_batch_end(self, batch, logs=None):
    runner = self.runner
    step = int(runner.optimizer.iterations.numpy())
    step_loss = float(logs["step_loss"])
    if not math.isfinite(step_loss):
      raise NonFiniteLossError(
          f"{runner.task.name}: training loss is {step_loss} at step {step} "
          f"(learning rate {float(logs['learning_rate']):.3g}); stopping. "
          f"The last checkpoint in {runner.params.runtime.output_dir} is the "
          "last good one; lower --learning_rate or raise --warmup_step.")
    if step % runner.params.log_steps < runner.steps_per_execution or \
        step >= runner.params.train_step:
      with runner.train_writer.as_default(step=step):
        for key in ("loss", "learning_rate", "gradient_norm"):
          tf.summary.scalar(key, float(logs[key]))
      logging.info("%s step %d: loss %.4f lr %.3g", runner.task.name, step,
                   float(logs["loss"]), float(logs["learning_rate"]))
    if step >= runner.params.train_step:
      self.model.stop_training = True

  def on_epoch_end(self, epoch, logs=None):
    step = int(self.runner.optimizer.iterations.numpy())
    if step != self._last_saved:
      self._last_saved = step
      self.runner.save_and_evaluate()


class FinetuningRunner:
  """Builds everything for one task and runs train / evaluate / predict.

  Args:
    run: the prepared settings (finetuning_params.prepare), trusted as
      they are; plain FinetuningParams are prepared here.
    task: FinetuningTask.

  Attributes:
    model: the task model (holds `.encoder`).
    config: the encoder's AlbertConfig.
    strategy, optimizer, manager (resume checkpoints), best_manager.
  """

  def __init__(self, run: finetuning_params.PreparedOrParams,
               task: FinetuningTask):
    run = finetuning_params.prepared(run)
    params = self.params = run.params
    self.task = task
    self.config = run.config
    output_dir.prepare_output_dir(params.runtime.output_dir)
    if params.runtime.seed is not None:
      seeds.set_global_seeds(params.runtime.seed)
    self.strategy = create_strategy(params.runtime.strategy, params.runtime.tpu)
    runtime_params.log_update(params.runtime, params.train_batch_size,
                              self.strategy.num_replicas_in_sync,
                              log=params.do_train)
    self.steps_per_execution = min(params.iterations_per_loop,
                                   params.save_checkpoints_steps)
    self._bucketed_predictor = None
    with self.strategy.scope():
      self._build_model_and_optimizer()
      self._build_checkpoint_managers()
    self.warm_start_summary = self._resume_or_warm_start(run.source)
    self._open_outputs()

  # --- building -------------------------------------------------------------

  def _build_model_and_optimizer(self) -> None:
    """The encoder, the task model on it, the optimizer and the compiled
    `fit` wrapper. In the strategy's scope."""
    params = self.params
    self.encoder = build_encoder(params, self.config)
    self.model = self.task.build_model(self.encoder, self.config)
    train_steps = max(params.train_step, params.warmup_step + 1)
    self.optimizer = mixed_precision.with_loss_scaling(
        optimization.create_optimizer(
            params.optimizer, params.learning_rate, train_steps,
            params.warmup_step, params.poly_power, params.weight_decay_rate),
        params.runtime.dtype)
    self.trainer = FinetuningTrainer(
        self.model, self.task.loss_fn, params.clip_norm,
        per_shape_steps=(len(self.task.length_buckets) > 1 and
                         not self.task.packed_training),
        accumulation_steps=params.runtime.gradient_accumulation_steps)
    self.trainer.compile(optimizer=self.optimizer,
                         steps_per_execution=self.steps_per_execution,
                         jit_compile=params.runtime.jit_compile)

  def _build_checkpoint_managers(self) -> None:
    """The resume checkpoints (model + optimizer) in output_dir and the best
    dev checkpoint (model) in output_dir/best. In the strategy's scope."""
    params = self.params
    self.checkpoint = tf.train.Checkpoint(model=self.model,
                                          optimizer=self.optimizer)
    self.manager = tf.train.CheckpointManager(
        self.checkpoint, params.runtime.output_dir,
        max_to_keep=params.keep_checkpoint_max,
        step_counter=self.optimizer.iterations)
    self.best_checkpoint = tf.train.Checkpoint(model=self.model)
    self.best_manager = tf.train.CheckpointManager(
        self.best_checkpoint, file_io.join(params.runtime.output_dir, BEST_DIR),
        max_to_keep=1, step_counter=self.optimizer.iterations)

  def _open_outputs(self) -> None:
    """The summary writers, and the config the run uses."""
    output_dir = self.params.runtime.output_dir
    self.train_writer = tf.summary.create_file_writer(
        file_io.join(output_dir, "train"))
    self.eval_writer = tf.summary.create_file_writer(
        file_io.join(output_dir, "eval"))
    self.config.to_json_file(file_io.join(output_dir, "albert_config.json"))

  def _resume_or_warm_start(self, source=None) -> str:
    """Restores the latest checkpoint of output_dir (a worker: the chief's)
    or warm-starts from init_checkpoint, before anything is written (a misfit
    stops the run there); returns the warm start's summary ("" if none)."""
    latest = (self.manager.latest_checkpoint or
              output_dir.chief_latest_checkpoint(self.params.runtime.output_dir))
    if latest:
      # Optimizer slots are restored when created (deferred); an eval-only
      # run never creates them, which is not an error.
      self.checkpoint.restore(latest).expect_partial()
      logging.info("resumed from %s", latest)
      return ""
    if self.params.init_checkpoint:
      head = warm_starting.head_request(self.params, self.task.head_labels)
      return warm_starting.warm_start(self.model, self.params.init_checkpoint,
                                      head, source)  # source: prepare's
    if self.params.do_train and not (self.params.init_savedmodel or
                                     self.task.initialises_encoder):
      logging.warning(
          "no --init_checkpoint or --init_savedmodel: fine-tuning starts "
          "from random weights, not from a pretrained ALBERT")
    return ""

  # --- training -----------------------------------------------------------

  @property
  def step(self) -> int:
    return int(self.optimizer.iterations.numpy())

  def train(self) -> Optional[Dict[str, float]]:
    """Trains to `train_step`, checkpointing and evaluating every
    `save_checkpoints_steps`; returns the best dev metrics (None without
    `task.evaluate`)."""
    params = self.params
    if self.task.train_dataset is None:
      raise UserInputError(f"{self.task.name}: no training data")
    if self.step < params.train_step:
      dataset = dataset_options.without_autotune_thread(
          self.task.train_dataset(params.train_batch_size,
                                  params.runtime.seed))
      callback = _CheckpointEvalCallback(self)
      for start, steps, epochs in fit_segments(
          self.step, params.train_step, params.save_checkpoints_steps):
        # One `fit` per segment: its epochs end at the checkpoint steps, and
        # Keras shortens the last block of an epoch, so training stops at
        # exactly train_step. The training stream is a seeded, repeated
        # shuffle: skipping the batches already trained on continues it
        # (also on resume; dropout RNG states are in the checkpoint:
        # CheckpointedDropout).
        self.trainer.fit(dataset.skip(start) if start else dataset,
                         epochs=epochs, steps_per_epoch=steps,
                         callbacks=[callback], verbose=0)
      if self.trainer.per_shape_steps:
        logging.info("%s: train step traced %d times for %d batch shapes "
                     "(length buckets %s)", self.task.name,
                     self.trainer.train_traces,
                     len(self.trainer.train_shapes),
                     ",".join(map(str, self.task.length_buckets)))
    latest = self.manager.latest_checkpoint
    if (latest is None or
        output_dir.step_in_checkpoint_name(latest, -1) != self.step):
      self.save_and_evaluate()
    return self.best_results()

  def save_and_evaluate(self) -> Optional[Dict[str, float]]:
    """Checkpoints at the current step; evaluates if the task can, and keeps
    the checkpoint as the best one when its main metric improves."""
    step = self.step
    self.manager.save(checkpoint_number=step)
    if self.task.evaluate is None or not self.params.do_eval:
      return None
    results = self.evaluate(write=False)
    best = self.best_results()
    value = results[self.task.main_metric]
    if best is None or _is_better(value, best[self.task.main_metric],
                                  self.task.higher_is_better):
      self.best_manager.save(checkpoint_number=step)
      output_dir.write_results(
          file_io.join(self.params.runtime.output_dir, BEST_DIR, BEST_RESULTS),
          dict(results, step=step))
      self._write_eval_outputs()
      logging.info("new best %s %.4f at step %d", self.task.main_metric,
                   value, step)
    return results

  def best_results(self) -> Optional[Dict[str, float]]:
    path = file_io.join(self.params.runtime.output_dir, BEST_DIR, BEST_RESULTS)
    if not file_io.exists(path):
      return None
    return json.loads(file_io.read_text(path))

  # --- evaluation and prediction -------------------------------------------

  def predict(self, dataset: tf.data.Dataset) -> Dict[str, np.ndarray]:
    """Task-model outputs over a finite dataset of feature dicts, in order
    (a bucketed one: in the order of its EXAMPLE_INDEX)."""
    dataset = dataset_options.without_autotune_thread(dataset)
    spec = dataset.element_spec
    if isinstance(spec, dict) and EXAMPLE_INDEX in spec:
      if self._bucketed_predictor is None:
        self._bucketed_predictor = bucketed_steps.InputOrderPredictor(
            self.model, self.strategy)
      return self._bucketed_predictor(dataset)
    outputs = self.trainer.predict(dataset, verbose=0)
    if not isinstance(outputs, dict):
      outputs = {"outputs": outputs}
    return {k: np.asarray(v) for k, v in outputs.items()}

  def evaluate(self, write: bool = True, step: Optional[int] = None,
               summary: bool = True) -> Dict[str, float]:
    """Dev metrics of the current weights, logged as of `step` (default:
    the current step), with TensorBoard summaries if `summary`; with
    `write`, also `output_dir/eval_results.json` and the task's evaluation
    files."""
    if self.task.evaluate is None:
      raise UserInputError(f"{self.task.name}: no evaluation data")
    step = self.step if step is None else step
    # Numbers as floats; a table (run_classifier --early_exit's
    # exit_table) kept as it is, out of the summaries.
    results = {k: v if isinstance(v, (list, dict)) else float(v)
               for k, v in self.task.evaluate(self.predict).items()}
    if self.task.main_metric not in results:
      raise ValueError(f"{self.task.name}: evaluate() returned no "
                       f"{self.task.main_metric!r}: {sorted(results)}")
    if summary:
      with self.eval_writer.as_default(step=step):
        for key, value in results.items():
          if isinstance(value, float):
            tf.summary.scalar(key, value)
      self.eval_writer.flush()
    logging.info("%s eval at step %d: %s", self.task.name, step, results)
    if write:
      output_dir.write_results(
          file_io.join(self.params.runtime.output_dir, EVAL_RESULTS),
          dict(results, step=step))
      self._write_eval_outputs()
    return results

  def _write_eval_outputs(self) -> None:
    if self.task.write_eval_outputs is not None:
      self.task.write_eval_outputs(self.params.runtime.output_dir)

  def restore_best(self) -> str:
    """Loads the best dev checkpoint's weights (else the latest checkpoint's;
    else keeps the initial weights). Returns what was loaded."""
    path = (self.best_manager.latest_checkpoint or
            self.manager.latest_checkpoint)
    if path is None:
      logging.warning("no checkpoint in %s; using the initial weights",
                      self.params.runtime.output_dir)
      return "initial weights"
    if path == self.best_manager.latest_checkpoint:
      self.best_checkpoint.restore(path).expect_partial()
    else:
      self.checkpoint.restore(path).expect_partial()
    logging.info("restored %s", path)
    return path

  def evaluate_best(self) -> Dict[str, float]:
    """Writes eval_results.json (metric -> value, plus `step`) of the best
    dev checkpoint and returns it.

    After training, every checkpoint has been evaluated once, and the best
    one's results (and evaluation files) were kept then: nothing is
    evaluated again. An evaluation-only run (no --do_train) restores the
    best checkpoint (else the latest) and evaluates it, without a
    TensorBoard point (the training run wrote one for that step).
    """
    best = self.best_results()
    if self.params.do_train and best is not None:
      results = best
      logging.info("%s best dev checkpoint: step %d, %s %.4f",
                   self.task.name, results["step"], self.task.main_metric,
                   results[self.task.main_metric])
    else:
      path = self.restore_best()
      step = output_dir.step_in_checkpoint_name(path, self.step)
      results = dict(self.evaluate(write=False, step=step, summary=False),
                     step=step)
      self._write_eval_outputs()
    output_dir.write_results(
        file_io.join(self.params.runtime.output_dir, EVAL_RESULTS), results)
    return results


def fit_segments(step: int, train_step: int, save_every: int
                ) -> List[Tuple[int, int, int]]:
  """The `fit` calls that train from `step` to exactly `train_step`.

  Returns:
    [(first step, steps_per_epoch, epochs)]: every epoch ends at a multiple
    of `save_every` or at `train_step` (a shorter last epoch), where the
    runner checkpoints and evaluates.
  """
  segments = []
  if step % save_every and step < train_step:  # resumed off the grid
    steps = min(save_every - step % save_every, train_step - step)
    segments.append((step, steps, 1))
    step += steps
  epochs = max(train_step - step, 0) // save_every
  if epochs:
    segments.append((step, save_every, epochs))
    step += epochs * save_every
  if step < train_step:
    segments.append((step, train_step - step, 1))
  return segments


def run_finetuning(params: FinetuningParams, task: FinetuningTask,
                   runner: Optional[FinetuningRunner] = None
                  ) -> Optional[Dict[str, float]]:
  """--do_train then --do_eval (best checkpoint -> eval_results.json).

  Prediction is task-specific: tools call `runner.restore_best()` and
  `runner.predict(...)` afterwards. Returns the eval results (None without
  --do_eval).
  """
  runner = runner or FinetuningRunner(params, task)
  if params.do_train:
    runner.train()
  if params.do_eval:
    return runner.evaluate_best()
  return None
