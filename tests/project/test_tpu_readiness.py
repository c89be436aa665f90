"""What a TPU run needs, checked on the CPU: the whole training step
compiles with XLA in bfloat16, the input has fully static shapes, and
--strategy=tpu without a TPU is one clear error line."""

import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from albert_tf import optimization
from albert_tf.config import AlbertConfig
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.networks.albert_encoder import AlbertEncoder
from albert_tf.training.pretraining.runner import PretrainingRunner
from data_pipeline.pretraining import reader as pretraining_input

# Minutes of multi-process or whole-pipeline runs: `make test-all` only.
pytestmark = pytest.mark.slow

ROOT = os.path.abspath(os.path.join(__file__, "../../.."))
CONFIG = AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
                      num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=32,
                      hidden_dropout_prob=0.1,
                      attention_probs_dropout_prob=0.1)


def _batch(records, batch_size=8):
  dataset = pretraining_input.pretraining_dataset(
      records["path"], batch_size, records["max_seq_length"],
      records["max_predictions_per_seq"], seed=1)
  return next(iter(dataset))


def test_whole_training_step_compiles_with_xla_in_bfloat16(
    pretraining_records):
  """Forward, both losses, gradients, all-reduce, clipping, the LAMB update
  and the metric updates: one XLA cluster, as a TPU runs it."""
  model = AlbertPretrainer(AlbertEncoder(CONFIG, dtype="mixed_bfloat16"))
  optimizer = optimization.create_optimizer("lamb", 1e-2, 100, 10)
  runner = PretrainingRunner(tf.distribute.get_strategy(), model, optimizer,
                             global_batch_size=8)
  batch = _batch(pretraining_records)
  step = tf.function(runner.replica_train_step, jit_compile=True)
  hlo = step.experimental_get_compiler_ir(batch)(stage="hlo")
  assert "bf16" in hlo and "dot(" in hlo
  before = [v.numpy() for v in model.trainable_variables]
  for _ in range(3):
    step(batch)
  assert int(optimizer.iterations.numpy()) == 3
  results = {k: float(v) for k, v in runner.train_metrics.result().items()}
  assert np.isfinite(results["mlm_loss"]) and results["mlm_loss"] > 0
  # A fraction of the 24 sentence-order predictions (3 steps of 8).
  assert runner.train_metrics.metrics["sop_accuracy"].count.numpy() == 24
  correct = results["sop_accuracy"] * 24
  assert correct == pytest.approx(round(correct), abs=1e-4)
  assert float(runner.gradient_norm.result()) > 0
  moved = [np.abs(v.numpy() - b).max()
           for v, b in zip(model.trainable_variables, before)]
  assert min(moved) > 0  # LAMB updated every variable
  assert all(v.dtype == tf.float32 for v in model.trainable_variables)
  tf_keras.backend.clear_session()


@pytest.mark.parametrize(
    "pipelines, replicas, global_batch",
    [(1, 8, 4096),     # a TPU v3-8 / v4-8 host
     (4, 32, 4096),    # a v3-32 pod slice: 4 hosts
     (2, 2, 16)])
def test_the_input_has_fully_static_shapes(pretraining_records, pipelines,
                                           replicas, global_batch):
  for start_step in (0, 3):
    context = tf.distribute.InputContext(
        num_input_pipelines=pipelines, input_pipeline_id=pipelines - 1,
        num_replicas_in_sync=replicas)
    dataset = pretraining_input.pretraining_dataset(
        pretraining_records["path"], global_batch, 32, 5,
        input_context=context, seed=3, start_step=start_step)
    per_replica = global_batch // replicas
    for name, spec in dataset.element_spec.items():
      assert spec.shape.is_fully_defined(), (name, spec.shape)
      assert spec.shape[0] == per_replica
  distributed = tf.distribute.get_strategy().distribute_datasets_from_function(
      lambda ctx: pretraining_input.pretraining_dataset(
          pretraining_records["path"], 16, 32, 5, input_context=ctx, seed=3))
  shapes = [s.shape for s in tf.nest.flatten(distributed.element_spec)]
  assert all(s.is_fully_defined() for s in shapes), shapes


def test_strategy_tpu_without_a_tpu_is_one_error_line(tmp_path,
                                                      pretraining_records):
  config = str(tmp_path / "albert_config.json")
  CONFIG.to_json_file(config)
  result = subprocess.run(
      [sys.executable, "-m", "tools.run_pretraining", "--strategy=tpu",
       f"--input_file={pretraining_records['path']}",
       f"--output_dir={tmp_path / 'run'}", f"--albert_config_file={config}",
       "--max_seq_length=32", "--max_predictions_per_seq=5"],
      cwd=ROOT, capture_output=True, text=True, timeout=300)
  assert result.returncode == 1
  errors = [line for line in result.stderr.splitlines()
            if line.startswith("error:")]
  assert len(errors) == 1, result.stderr[-2000:]
  assert errors[0].startswith("error: --strategy=tpu found no TPU at --tpu=''")
  assert "Traceback" not in result.stderr
