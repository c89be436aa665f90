"""Pretraining an AlbertPretrainer end to end: data, strategy, loop and
checkpoints.

`run_pretraining(run)` is what `python -m tools.run_pretraining` calls, with
the settings it built and prepared (albert_tf.training.pretraining.params).

Layout of `output_dir`:
  ckpt-<step>.*        checkpoints (model + optimizer: weights, slots, step)
  train/, eval/        TensorBoard summaries
  albert_config.json   the config the run used
  eval_results.json    the last evaluation's metrics
  data_stream.json     the training stream's seed (without --seed)
  input_record_counts.json  a cache of the input files' record counts
  data_settings.json, continued_from.json  see pretraining.continuation
Under `--strategy=multi_worker` only the chief writes there; the other
workers write to `output_dir/.worker_<type>_<index>/`, removed at the end
(output_dir.process_output_dir).
"""

import dataclasses
import json
import re
from typing import Dict, Optional, Union
import zlib

from absl import logging
import orbit
import tensorflow as tf
import tf_keras

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf import memory_plan
from albert_tf import optimization
from albert_tf.config import AlbertConfig
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.networks.albert_encoder import AlbertEncoder
from albert_tf.training import dataset_options
from albert_tf.training import mixed_precision
from albert_tf.training import output_dir
from albert_tf.training import runtime_params
from albert_tf.training import seeds
from albert_tf.training.pretraining import continuation
from albert_tf.training.pretraining.params import PreparedPretraining
from albert_tf.training.pretraining.params import PretrainingParams
from albert_tf.training.pretraining.params import prepared
from albert_tf.training.pretraining.runner import PretrainingRunner
from albert_tf.training.strategy import create_strategy
from data_pipeline.pretraining import reader as pretraining_input
from data_pipeline.tasks import length_buckets

DATA_STREAM_FILE = "data_stream.json"
RECORD_COUNTS_FILE = "input_record_counts.json"


def _distributed_dataset(strategy, params: PretrainingParams, file_pattern,
                         batch_size, is_training, vocab_size=None,
                         seed=None, start_step=0, record_count_cache=None,
                         buckets=()):
  def dataset_fn(input_context):
    return pretraining_input.pretraining_dataset(
        file_pattern, batch_size=batch_size,
        max_seq_length=params.max_seq_length,
        max_predictions_per_seq=params.max_predictions_per_seq,
        is_training=is_training, input_context=input_context,
        seed=seed, shuffle_buffer_size=params.shuffle_buffer_size,
        vocab_size=vocab_size, start_step=start_step,
        record_count_cache=record_count_cache, length_buckets=buckets)

  def eval_dataset_fn(input_context):
    # A new iterator each evaluation: see dataset_options.
    return dataset_options.without_autotune_thread(dataset_fn(input_context))

  if batch_size % strategy.num_replicas_in_sync:
    raise UserInputError(
        f"batch size {batch_size} is not divisible by the "
        f"{strategy.num_replicas_in_sync} replicas")
  return strategy.distribute_datasets_from_function(
      dataset_fn if is_training else eval_dataset_fn)


def _data_seed(params: PretrainingParams, chief: bool) -> int:
  """The training stream's seed: --seed, else one fixed at the run's first
  start (derived from output_dir, kept in data_stream.json) so that every
  worker and every resumed run reads the same stream."""
  if params.runtime.seed is not None:
    return params.runtime.seed
  path = file_io.join(params.runtime.output_dir, DATA_STREAM_FILE)
  if file_io.exists(path):
    return int(json.loads(file_io.read_text(path))["seed"])
  seed = zlib.crc32(params.runtime.output_dir.rstrip("/").encode())
  if chief:
    file_io.write_json_atomic(path, {"seed": seed})
  return seed


@dataclasses.dataclass
class PretrainingSetup:
  """Everything a run builds; `controller` resumes from output_dir."""

  params: PretrainingParams
  config: AlbertConfig
  strategy: tf.distribute.Strategy
  model: AlbertPretrainer
  optimizer: tf_keras.optimizers.legacy.Optimizer
  runner: PretrainingRunner
  manager: tf.train.CheckpointManager
  controller: orbit.Controller
  write_dir: str
  source: Optional[continuation.Source] = None


def build_pretraining(run: Union[PretrainingParams, PreparedPretraining]
                     ) -> PretrainingSetup:
  """Builds strategy, data, model and optimizer, and restores the latest
  checkpoint of `output_dir` (or warm-starts from `init_checkpoint`).

  Args:
    run: the prepared settings (pretraining_params.prepare), trusted as
      they are; plain PretrainingParams are prepared here.
  """
  run = prepared(run)
  params, config = run.params, run.config
  _check_input_files(params)
  # Read and checked before anything is written.
  source = continuation.read_source(params, config)
  output_dir.prepare_output_dir(params.runtime.output_dir)
  if params.runtime.seed is not None:
    seeds.set_global_seeds(params.runtime.seed)
  strategy = create_strategy(params.runtime.strategy, params.runtime.tpu)
  resolver = getattr(strategy, "cluster_resolver", None)
  write_dir = output_dir.process_output_dir(params.runtime.output_dir,
                                             resolver)
  chief = write_dir == params.runtime.output_dir
  # A worker starts from the chief's checkpoint when its scratch has none.
  chief_latest = output_dir.chief_latest_checkpoint(write_dir)
  _log_memory_plan(params, config, strategy.num_replicas_in_sync)
  with strategy.scope():
    model, optimizer = _build_model_and_optimizer(params, config)
    manager = _checkpoint_manager(params, model, optimizer, write_dir,
                                  chief_latest, source)
  if chief and manager.latest_checkpoint is None:
    continuation.record_start(params, source)
  # The data stream starts where the checkpoint to be restored stopped (a
  # continued run's stream at its own first step).
  start_step = (continuation.saved_optimizer_step(
      manager.latest_checkpoint or chief_latest) -
                continuation.first_step(params.runtime.output_dir)
                if params.resume_data_stream and (
                    manager.latest_checkpoint or chief_latest) else 0)
  train_dataset, eval_dataset = _datasets(params, strategy, config, chief,
                                          write_dir, start_step)
  masked_tokens = params.train_batch_size * params.max_predictions_per_seq
  runtime_params.log_update(
      params.runtime, params.train_batch_size, strategy.num_replicas_in_sync,
      unit=f"sequences of {params.max_seq_length} tokens",
      detail=f", at most {masked_tokens} masked tokens "
      "(--max_predictions_per_seq x batch)")
  with strategy.scope():
    runner = PretrainingRunner(
        strategy, model, optimizer, train_dataset, eval_dataset,
        global_batch_size=params.train_batch_size,
        jit_compile=params.runtime.jit_compile,
        gradient_accumulation_steps=params.runtime.gradient_accumulation_steps)
  if chief:
    config.to_json_file(
        file_io.join(params.runtime.output_dir, "albert_config.json"))
  controller = _controller(params, strategy, runner, manager, write_dir)
  if manager.latest_checkpoint is None:
    # A fresh run: checkpoint the initial (or warm-started) weights, which
    # also makes later saves fall on multiples of save_checkpoints_steps.
    manager.save(checkpoint_number=int(optimizer.iterations.numpy()))
  return PretrainingSetup(params, config, strategy, model, optimizer, runner,
                          manager, controller, write_dir, source)


def _check_input_files(params: PretrainingParams) -> None:
  """Unmatched input globs named before anything is built."""
  pretraining_input.resolve_files(params.input_file)
  if params.eval_file:
    pretraining_input.resolve_files(params.eval_file)


def _log_memory_plan(params: PretrainingParams, config: AlbertConfig,
                     num_replicas: int) -> None:
  """The memory plan's line; a warning when --device_memory is too small."""
  # A RuntimeParams field once accumulation (#41) is merged; 1 before.
  steps = getattr(params.runtime, "gradient_accumulation_steps", 1)
  if params.train_batch_size % (num_replicas * steps):
    return  # the batch checks of the run say so
  figures = memory_plan.plan(
      config, params.train_batch_size, params.max_seq_length,
      params.max_predictions_per_seq, params.runtime.dtype, params.optimizer,
      params.runtime.recompute_layers, steps, num_replicas)
  logging.info("%s", memory_plan.format_line(figures))
  if not params.device_memory:
    return
  device_memory = memory_plan.parse_bytes(params.device_memory)
  if figures.peak_bytes > memory_plan.USABLE_FRACTION * device_memory:
    logging.warning(
        "the memory plan says a step will not fit: %s per replica > %.0f%% "
        "of --device_memory=%s; %s", memory_plan.format_bytes(
            figures.peak_bytes), 100 * memory_plan.USABLE_FRACTION,
        params.device_memory, memory_plan.format_fit(
            device_memory, memory_plan.fitting_steps(
                device_memory, config=config,
                train_batch_size=params.train_batch_size,
                max_seq_length=params.max_seq_length,
                max_predictions_per_seq=params.max_predictions_per_seq,
                dtype=params.runtime.dtype, optimizer=params.optimizer,
                num_replicas=num_replicas)))


def _build_model_and_optimizer(params: PretrainingParams,
                               config: AlbertConfig):
  """(AlbertPretrainer in the run's dtype, its optimizer). In the strategy's
  scope."""
  encoder = AlbertEncoder(config,
                          dtype=mixed_precision.DTYPE_POLICIES[params.runtime.dtype],
                          recompute_layers=params.runtime.recompute_layers)
  model = AlbertPretrainer(encoder)
  optimizer = mixed_precision.with_loss_scaling(
      optimization.create_optimizer(
          params.optimizer, params.learning_rate, params.num_train_steps,
          params.num_warmup_steps, params.poly_power,
          params.weight_decay_rate),
      params.runtime.dtype)
  return model, optimizer


def _checkpoint_manager(params: PretrainingParams, model, optimizer,
                        write_dir: str, chief_latest: Optional[str],
                        source: Optional[continuation.Source]
                       ) -> tf.train.CheckpointManager:
  """Checkpoints of model + optimizer in `write_dir` every
  save_checkpoints_steps. When `write_dir` holds none, the run starts from
  `chief_latest` (a worker's scratch), else from `source` (the
  init_checkpoint: continuation.start_from), else from the initial
  weights. In the strategy's scope."""
  checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
  initialized = []

  def init_fn():
    """Runs when write_dir holds no checkpoint; once (the preemption
    handler's restore_or_initialize calls it before the controller's)."""
    if initialized:
      return
    initialized.append(True)
    if chief_latest:
      checkpoint.restore(chief_latest)
    elif source is not None:
      continuation.start_from(source, params, model, checkpoint)

  return tf.train.CheckpointManager(
      checkpoint, write_dir, max_to_keep=params.keep_checkpoint_max,
      checkpoint_interval=params.save_checkpoints_steps,
      step_counter=optimizer.iterations, init_fn=init_fn)


def _datasets(params: PretrainingParams, strategy, config: AlbertConfig,
              chief: bool, write_dir: str, start_step: int):
  """(training stream from `start_step`, eval data or None), distributed."""
  train_dataset = _distributed_dataset(
      strategy, params, params.input_file, params.train_batch_size, True,
      config.vocab_size, seed=_data_seed(params, chief),
      start_step=start_step,
      record_count_cache=file_io.join(write_dir, RECORD_COUNTS_FILE),
      buckets=length_buckets.parse_length_buckets(params.length_buckets,
                                                  params.max_seq_length))
  eval_dataset = None
  if params.eval_file:
    eval_dataset = _distributed_dataset(strategy, params, params.eval_file,
                                        params.eval_batch_size, False,
                                        config.vocab_size)
  return train_dataset, eval_dataset


def _controller(params: PretrainingParams, strategy, runner, manager,
                write_dir: str) -> orbit.Controller:
  """The Orbit loop: steps_per_loop steps per call, checkpoints through
  `manager`, summaries under write_dir/train and write_dir/eval."""
  step = runner.optimizer.iterations
  # On SIGTERM (a preemption notice) TensorFlow's PreemptionCheckpointHandler
  # saves a checkpoint after the current loop and exits; a rerun resumes.
  train_actions = [orbit.actions.SaveCheckpointIfPreempted(
      getattr(strategy, "cluster_resolver", None), manager, step)]
  return orbit.Controller(
      strategy=strategy, trainer=runner,
      evaluator=runner if runner.has_eval else None,
      global_step=step,
      steps_per_loop=params.iterations_per_loop,
      checkpoint_manager=manager,
      summary_dir=file_io.join(write_dir, "train"),
      eval_summary_dir=file_io.join(write_dir, "eval"),
      train_actions=train_actions)


def _first_line(error: tf.errors.OpError) -> str:
  """The informative line of a TF error (not "Graph execution error")."""
  lines = [line.strip() for line in error.message.split("\n")]
  lines = [line for line in lines if line and not line.startswith(
      ("Graph execution error", "Detected at node", "File ", "[["))]
  return re.sub(r"\{\{function_node.*?\}\}\s*|\s*\[Op:\w+\]", "",
                (lines or [error.message])[0]).rstrip(" .:")


def _corrupt_input_error(params: PretrainingParams,
                         error: tf.errors.DataLossError) -> UserInputError:
  """A truncated / corrupt record met while training or evaluating (the
  first record of each file was checked at start): finds the file by
  checking every record of every input file, and names it."""
  for flag, pattern in (("input_file", params.input_file),
                        ("eval_file", params.eval_file)):
    if not pattern:
      continue
    for path in pretraining_input.resolve_files(pattern):
      try:
        pretraining_input.validate_tfrecord_file(
            path, params.max_seq_length, params.max_predictions_per_seq,
            max_records=None)
      except UserInputError as bad:
        return UserInputError(f"--{flag}: {bad}. The last checkpoint in "
                              "--output_dir is intact.")
  return UserInputError(
      f"corrupt TFRecord data in --input_file={params.input_file} or "
      f"--eval_file={params.eval_file}: {_first_line(error)}")


def finished_results(params: PretrainingParams) -> Optional[Dict[str, float]]:
  """The results of a run in `output_dir` that already reached
  num_train_steps ({} without an eval_file), or None when there is training
  (or its final evaluation) left to do."""
  latest = tf.train.latest_checkpoint(params.runtime.output_dir)
  if continuation.saved_optimizer_step(latest) < params.num_train_steps:
    return None
  path = file_io.join(params.runtime.output_dir, "eval_results.json")
  if not file_io.exists(path):
    return None if params.eval_file else {}
  results = file_io.read_json_object(path, "the run's eval results")
  return {k: float(v) for k, v in results.items() if k != "step"}


def run_pretraining(run: Union[PretrainingParams, PreparedPretraining]
                   ) -> Dict[str, float]:
  """Trains to `num_train_steps` (resuming from `output_dir` if it holds a
  checkpoint), evaluating at each checkpoint; returns the last eval metrics
  (empty without an eval_file). A run already finished is not rebuilt: its
  saved results are returned. `run`: as build_pretraining's."""
  run = prepared(run)
  done = finished_results(run.params)
  if done is not None:
    logging.info("--output_dir=%s holds the finished run (--num_train_steps="
                 "%d); nothing to train. Its results: %s",
                 run.params.runtime.output_dir, run.params.num_train_steps,
                 done)
    return done
  setup = build_pretraining(run)
  params = setup.params
  if setup.source is not None and setup.runner.has_eval:
    # A continued run evaluates its start, before any update: the source's
    # own evaluation (docs/continued-pretraining.md).
    _write_results(setup, _float_results(setup.controller.evaluate(
        steps=params.max_eval_steps)))
  results = _train_and_evaluate(setup)
  step = int(setup.optimizer.iterations.numpy())
  _write_results(setup, results)
  if setup.write_dir != params.runtime.output_dir:
    file_io.rmtree(setup.write_dir)
  logging.info("finished at step %d: %s", step, results)
  return results


def _write_results(setup: PretrainingSetup, results: Dict[str, float]
                  ) -> None:
  """eval_results.json: the last evaluation's metrics and step (chief)."""
  output = setup.params.runtime.output_dir
  if results and setup.write_dir == output:
    output_dir.write_results(
        file_io.join(output, "eval_results.json"),
        dict(results, step=int(setup.optimizer.iterations.numpy())))


def _float_results(results) -> Dict[str, float]:
  return {k: float(v) for k, v in (results or {}).items()}


def _train_and_evaluate(setup: PretrainingSetup) -> Dict[str, float]:
  """Runs the controller to num_train_steps; returns the last evaluation's
  metrics ({} without an eval_file). Bad records met on the way are a
  UserInputError naming the file."""
  params = setup.params
  try:
    if setup.runner.has_eval:
      results = setup.controller.train_and_evaluate(
          train_steps=params.num_train_steps,
          eval_steps=params.max_eval_steps,
          eval_interval=params.save_checkpoints_steps)
    else:
      setup.controller.train(steps=params.num_train_steps)
      results = None
  except tf.errors.DataLossError as e:
    raise _corrupt_input_error(params, e) from None
  except tf.errors.InvalidArgumentError as e:
    if "is not in [0, " not in e.message:  # not an out-of-vocabulary id
      raise
    raise UserInputError(
        f"a token id in --input_file/--eval_file is outside the model's "
        f"vocabulary (vocab_size={setup.config.vocab_size} in "
        f"{params.albert_config_file}): {_first_line(e)}. The records were "
        "written with a larger SentencePiece vocabulary.") from None
  return {k: float(v) for k, v in (results or {}).items()}
