"""Pretraining an AlbertPretrainer end to end: data, strategy, loop, checkpoints.

`run_pretraining(params)` is what `python -m tools.run_pretraining` calls.
Layout of `output_dir`:
  ckpt-<step>.*        checkpoints (model + optimizer: weights, slots, step)
  train/, eval/        TensorBoard summaries
  albert_config.json   the config the run used
  eval_results.json    the last evaluation's metrics
"""

import dataclasses
import json
import re
import zlib
from typing import Dict, Optional

import orbit
import tensorflow as tf
import tf_keras
from absl import logging

from data_pipeline import file_io
from albert_tf import optimization
from albert_tf.config import AlbertConfig
from data_pipeline.shared import UserInputError
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.networks.albert_encoder import AlbertEncoder
from albert_tf.training.warm_start import warm_start
from albert_tf.training.pretraining_runner import PretrainingRunner
from albert_tf.training import strategy as strategy_lib
from albert_tf.training.strategy import create_strategy
from data_pipeline import pretraining_input

DATA_STREAM_FILE = "data_stream.json"
RECORD_COUNTS_FILE = "input_record_counts.json"
DTYPE_POLICIES = {"float32": None, "bfloat16": "mixed_bfloat16",
                  "float16": "mixed_float16"}


@dataclasses.dataclass(frozen=True)
class PretrainingParams:
  """Settings of a pretraining run; names as the official flags."""

  input_file: str
  output_dir: str
  albert_config_file: str
  eval_file: str = ""
  init_checkpoint: str = ""
  train_batch_size: int = 4096
  eval_batch_size: int = 64
  max_seq_length: int = 512
  max_predictions_per_seq: int = 20
  optimizer: str = "lamb"
  learning_rate: float = 0.00176
  poly_power: float = 1.0
  weight_decay_rate: float = 0.01
  num_train_steps: int = 125000
  num_warmup_steps: int = 3125
  save_checkpoints_steps: int = 5000
  keep_checkpoint_max: int = 5
  iterations_per_loop: int = 1000
  max_eval_steps: int = 100
  strategy: str = "default"
  tpu: str = ""
  dtype: str = "float32"
  jit_compile: bool = False
  seed: Optional[int] = None
  shuffle_buffer_size: int = 10000
  # Resume the data stream where the restored step left it (see
  # data_pipeline.record_stream); False restarts it from its beginning.
  resume_data_stream: bool = True


def _validate(params: PretrainingParams, config: AlbertConfig) -> None:
  if params.max_seq_length > config.max_position_embeddings:
    raise UserInputError(
        f"--max_seq_length={params.max_seq_length} exceeds "
        f"max_position_embeddings={config.max_position_embeddings} in "
        f"{params.albert_config_file}")
  if params.dtype not in DTYPE_POLICIES:
    raise UserInputError(f"--dtype must be one of {sorted(DTYPE_POLICIES)}, "
                         f"got {params.dtype!r}")
  for name in ("train_batch_size", "eval_batch_size", "num_train_steps",
               "save_checkpoints_steps", "keep_checkpoint_max",
               "iterations_per_loop", "max_seq_length",
               "max_predictions_per_seq"):
    if getattr(params, name) <= 0:
      raise UserInputError(f"--{name} must be positive, got "
                           f"{getattr(params, name)}")
  if params.save_checkpoints_steps % params.iterations_per_loop:
    raise UserInputError(
        f"--save_checkpoints_steps ({params.save_checkpoints_steps}) must be "
        f"a multiple of --iterations_per_loop ({params.iterations_per_loop})")


def _distributed_dataset(strategy, params: PretrainingParams, file_pattern,
                         batch_size, is_training, vocab_size=None,
                         seed=None, start_step=0, record_count_cache=None):
  def dataset_fn(input_context):
    return pretraining_input.pretraining_dataset(
        file_pattern, batch_size=batch_size,
        max_seq_length=params.max_seq_length,
        max_predictions_per_seq=params.max_predictions_per_seq,
        is_training=is_training, input_context=input_context,
        seed=seed, shuffle_buffer_size=params.shuffle_buffer_size,
        vocab_size=vocab_size, start_step=start_step,
        record_count_cache=record_count_cache)

  if batch_size % strategy.num_replicas_in_sync:
    raise UserInputError(
        f"batch size {batch_size} is not divisible by the "
        f"{strategy.num_replicas_in_sync} replicas")
  return strategy.distribute_datasets_from_function(dataset_fn)


def _data_seed(params: PretrainingParams, chief: bool) -> int:
  """The training stream's seed: --seed, else one fixed at the run's first
  start (derived from output_dir, kept in data_stream.json) so that every
  worker and every resumed run reads the same stream."""
  if params.seed is not None:
    return params.seed
  path = file_io.join(params.output_dir, DATA_STREAM_FILE)
  if file_io.exists(path):
    return int(json.loads(file_io.read_text(path))["seed"])
  seed = zlib.crc32(params.output_dir.rstrip("/").encode())
  if chief:
    file_io.write_json_atomic(path, {"seed": seed})
  return seed


def _checkpoint_step(path: Optional[str]) -> int:
  """The optimizer step saved in checkpoint `path` (0 for None)."""
  if not path:
    return 0
  # A reader on the prefix: tf.train.load_checkpoint would first ask whether
  # the prefix is a folder, which ram:// answers wrongly.
  reader = tf.compat.v1.train.NewCheckpointReader(path)
  names = [name for name in reader.get_variable_to_shape_map()
           if re.fullmatch(r"optimizer/(.*/)?iter/\.ATTRIBUTES/VARIABLE_VALUE",
                           name)]
  if not names:
    raise UserInputError(f"checkpoint {path} holds no optimizer step")
  return int(reader.get_tensor(min(names, key=len)))


def _prepare_output_dir(path: str) -> None:
  try:
    tf.io.gfile.makedirs(path)
    probe = file_io.join(path, ".write_test")
    with tf.io.gfile.GFile(probe, "w") as f:
      f.write("ok")
    tf.io.gfile.remove(probe)
  except (tf.errors.OpError, OSError) as e:
    raise UserInputError(f"--output_dir={path} is not writable: {e}") from e


def _is_chief(strategy: tf.distribute.Strategy) -> bool:
  """Whether this process writes checkpoints and summaries (multi-worker)."""
  resolver = getattr(strategy, "cluster_resolver", None)
  return resolver is None or strategy_lib.is_chief(resolver)


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


def build_pretraining(params: PretrainingParams) -> PretrainingSetup:
  """Builds strategy, data, model and optimizer, and restores the latest
  checkpoint of `output_dir` (or warm-starts from `init_checkpoint`)."""
  config = AlbertConfig.from_json_file(params.albert_config_file)
  _validate(params, config)
  # Unmatched input globs are named before anything is built.
  pretraining_input.resolve_files(params.input_file)
  if params.eval_file:
    pretraining_input.resolve_files(params.eval_file)
  _prepare_output_dir(params.output_dir)
  if params.seed is not None:
    tf_keras.utils.set_random_seed(params.seed)

  strategy = create_strategy(params.strategy, params.tpu)
  # In a multi-worker run every worker saves (saving is collective), but only
  # the chief into output_dir; the others into a scratch directory.
  chief = _is_chief(strategy)
  write_dir = params.output_dir if chief else file_io.join(
      params.output_dir, f".worker_{strategy.cluster_resolver.task_id}")

  with strategy.scope():
    encoder = AlbertEncoder(config, dtype=DTYPE_POLICIES[params.dtype])
    model = AlbertPretrainer(encoder)
    optimizer = optimization.create_optimizer(
        params.optimizer, params.learning_rate, params.num_train_steps,
        params.num_warmup_steps, params.poly_power, params.weight_decay_rate)
    if params.dtype == "float16":
      optimizer = tf_keras.mixed_precision.LossScaleOptimizer(optimizer)
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
    chief_latest = (None if chief else
                    tf.train.latest_checkpoint(params.output_dir))

    def init_fn():
      """Runs when write_dir holds no checkpoint."""
      if chief_latest:
        checkpoint.restore(chief_latest)
      elif params.init_checkpoint:
        warm_start(model, params.init_checkpoint)

    manager = tf.train.CheckpointManager(
        checkpoint, write_dir, max_to_keep=params.keep_checkpoint_max,
        checkpoint_interval=params.save_checkpoints_steps,
        step_counter=optimizer.iterations, init_fn=init_fn)

  # The data stream starts where the checkpoint to be restored stopped.
  start_step = (_checkpoint_step(manager.latest_checkpoint or chief_latest)
                if params.resume_data_stream else 0)
  train_dataset = _distributed_dataset(
      strategy, params, params.input_file, params.train_batch_size, True,
      config.vocab_size, seed=_data_seed(params, chief),
      start_step=start_step,
      record_count_cache=file_io.join(write_dir, RECORD_COUNTS_FILE))
  eval_dataset = None
  if params.eval_file:
    eval_dataset = _distributed_dataset(strategy, params, params.eval_file,
                                        params.eval_batch_size, False,
                                        config.vocab_size)
  with strategy.scope():
    runner = PretrainingRunner(
        strategy, model, optimizer, train_dataset, eval_dataset,
        global_batch_size=params.train_batch_size,
        jit_compile=params.jit_compile)

  if chief:
    config.to_json_file(file_io.join(params.output_dir, "albert_config.json"))
  # On SIGTERM (a preemption notice) TensorFlow's PreemptionCheckpointHandler
  # saves a checkpoint after the current loop and exits; a rerun resumes.
  train_actions = [orbit.actions.SaveCheckpointIfPreempted(
      getattr(strategy, "cluster_resolver", None), manager,
      optimizer.iterations)]
  controller = orbit.Controller(
      strategy=strategy, trainer=runner,
      evaluator=runner if eval_dataset is not None else None,
      global_step=optimizer.iterations,
      steps_per_loop=params.iterations_per_loop,
      checkpoint_manager=manager,
      summary_dir=file_io.join(write_dir, "train"),
      eval_summary_dir=file_io.join(write_dir, "eval"),
      train_actions=train_actions)
  if manager.latest_checkpoint is None:
    # A fresh run: checkpoint the initial (or warm-started) weights, which
    # also makes later saves fall on multiples of save_checkpoints_steps.
    manager.save(checkpoint_number=int(optimizer.iterations.numpy()))
  return PretrainingSetup(params, config, strategy, model, optimizer, runner,
                          manager, controller, write_dir)


def _first_line(error: tf.errors.OpError) -> str:
  """The informative line of a TF error (not "Graph execution error")."""
  lines = [l.strip() for l in error.message.split("\n")]
  lines = [l for l in lines if l and not l.startswith(
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


def run_pretraining(params: PretrainingParams) -> Dict[str, float]:
  """Trains to `num_train_steps` (resuming from `output_dir` if it holds a
  checkpoint), evaluating at each checkpoint; returns the last eval metrics
  (empty without an eval_file)."""
  setup = build_pretraining(params)
  step = setup.optimizer.iterations
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
  results = {k: float(v) for k, v in (results or {}).items()}
  if results and setup.write_dir == params.output_dir:
    file_io.write_json_atomic(
        file_io.join(params.output_dir, "eval_results.json"),
        dict(results, step=int(step.numpy())))
  if setup.write_dir != params.output_dir:
    file_io.rmtree(setup.write_dir)
  logging.info("finished at step %d: %s", int(step.numpy()), results)
  return results
