"""What pretraining and fine-tuning share: albert_tf.training's
mixed_precision, gradient_update, seeds and output_dir modules."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_common.run_constants import DTYPES
from albert_tf.training import gradient_update
from albert_tf.training import mixed_precision
from albert_tf.training import output_dir
from albert_tf.training import seeds


def _resolver(cluster, task_type, task_id):
  return tf.distribute.cluster_resolver.SimpleClusterResolver(
      tf.train.ClusterSpec(cluster), task_type=task_type, task_id=task_id)


def test_every_dtype_has_a_policy():
  assert tuple(mixed_precision.DTYPE_POLICIES) == DTYPES
  assert mixed_precision.DTYPE_POLICIES["float32"] is None


def test_only_float16_is_loss_scaled():
  for dtype in DTYPES:
    optimizer = mixed_precision.with_loss_scaling(
        tf_keras.optimizers.legacy.SGD(1.0), dtype)
    assert mixed_precision.is_loss_scaled(optimizer) == (dtype == "float16")


def test_each_non_chief_task_writes_its_own_scratch_directory():
  out = "/runs/x"
  assert output_dir.process_output_dir(out, None) == out
  with_chief = {"chief": ["c:1"], "worker": ["w:1", "w:2"],
                "evaluator": ["e:1"]}
  dirs = {(task_type, task_id): output_dir.process_output_dir(
      out, _resolver(with_chief, task_type, task_id))
          for task_type, task_id in (("chief", 0), ("worker", 0),
                                     ("worker", 1), ("evaluator", 0))}
  assert dirs[("chief", 0)] == out
  assert dirs[("worker", 0)] == os.path.join(out, ".worker_worker_0")
  assert dirs[("evaluator", 0)] == os.path.join(out, ".worker_evaluator_0")
  assert len(set(dirs.values())) == 4  # unique in the cluster
  workers_only = {"worker": ["w:1", "w:2"]}
  assert output_dir.process_output_dir(
      out, _resolver(workers_only, "worker", 0)) == out
  assert output_dir.process_output_dir(
      out, _resolver(workers_only, "worker", 1)) == os.path.join(
          out, ".worker_worker_1")


def test_a_worker_starts_from_the_chiefs_latest_checkpoint(tmp_path):
  out = str(tmp_path / "out")
  variable = tf.Variable(1.0)
  manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=variable), out,
                                       max_to_keep=2)
  manager.save(checkpoint_number=3)
  manager.save(checkpoint_number=7)
  scratch = os.path.join(out, ".worker_worker_1")
  assert output_dir.chief_latest_checkpoint(scratch) == os.path.join(
      out, "ckpt-7")
  assert output_dir.chief_latest_checkpoint(scratch + "/") == os.path.join(
      out, "ckpt-7")
  assert output_dir.chief_latest_checkpoint(out) is None


@pytest.mark.parametrize("root", ["local", "ram://run_support"])
def test_results_are_written_whole_with_sorted_keys(tmp_path, root):
  directory = str(tmp_path) if root == "local" else root
  path = file_io.join(directory, "sub", "eval_results.json")
  output_dir.write_results(path, {"loss": 0.5, "accuracy": 0.75, "step": 4})
  text = file_io.read_text(path)
  assert json.loads(text) == {"accuracy": 0.75, "loss": 0.5, "step": 4}
  assert list(json.loads(text)) == ["accuracy", "loss", "step"]
  assert file_io.glob(file_io.join(directory, "sub", "*")) == [path]


def test_an_unwritable_output_dir_is_named(tmp_path):
  in_the_way = tmp_path / "a_file"
  in_the_way.write_text("x")
  with pytest.raises(UserInputError, match=r"--output_dir=.*a_file/out is "
                     "not writable"):
    output_dir.prepare_output_dir(str(in_the_way / "out"))
  output_dir.prepare_output_dir(str(tmp_path / "new" / "out"))
  assert os.listdir(tmp_path / "new" / "out") == []  # the probe is gone


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_the_clipped_update(dtype):
  """Gradient (3, 4): norm 5, clipped to norm 1 -> (0.6, 0.8); float16's
  loss scale (2**15) is taken out before clipping."""
  variable = tf.Variable([0.0, 0.0])
  optimizer = mixed_precision.with_loss_scaling(
      tf_keras.optimizers.legacy.SGD(learning_rate=0.5), dtype)
  with tf.GradientTape() as tape:
    loss = tf.reduce_sum(variable * tf.constant([3.0, 4.0]))
    scaled = mixed_precision.scaled_loss(optimizer, loss)
  grads = tape.gradient(scaled, [variable])
  if dtype == "float16":
    np.testing.assert_allclose(grads[0], [3 * 2.0**15, 4 * 2.0**15])
  norm = gradient_update.apply_clipped_gradients(optimizer, grads, [variable],
                                             clip_norm=1.0)
  assert float(norm) == pytest.approx(5.0)
  np.testing.assert_allclose(variable.numpy(), [-0.3, -0.4], rtol=1e-6)
  assert int(optimizer.iterations.numpy()) == 1
  assert float(gradient_update.current_learning_rate(optimizer)) == 0.5


def test_the_clip_norm_of_an_embedding_lookup_gradient_is_the_dense_one():
  """Row 0 gathered twice, gradient rows 3 and 4: the summed gradient is
  (7, 0), norm 7. tf.clip_by_global_norm alone counts the IndexedSlices'
  rows apart, norm 5."""
  table = tf.Variable([[0.0], [0.0]])
  with tf.GradientTape() as tape:
    rows = tf.gather(table, [0, 0])[:, 0]
    loss = tf.reduce_sum(rows * tf.constant([3.0, 4.0]))
  grads = tape.gradient(loss, [table])
  assert isinstance(grads[0], tf.IndexedSlices)
  assert float(tf.linalg.global_norm(grads)) == pytest.approx(5.0)
  norm = gradient_update.apply_clipped_gradients(
      tf_keras.optimizers.legacy.SGD(learning_rate=1.0), grads, [table],
      clip_norm=1.0)
  assert float(norm) == pytest.approx(7.0)
  np.testing.assert_allclose(table.numpy(), [[-1.0], [0.0]], rtol=1e-6)


def test_seeds_outside_int64_are_one_clear_error():
  from albert_common.run_constants import check_seed
  for seed in (None, 0, 1, 2**63 - 1):
    check_seed(seed)
  for seed in (-1, 2**63):
    with pytest.raises(UserInputError, match=rf"--seed .*got {seed}$"):
      check_seed(seed)


def test_the_seeds_do_not_depend_on_what_the_process_did_before():
  """A run seeded after tf_keras.utils.set_random_seed (a notebook, an
  earlier test) and more draws draws the same dropout masks and initial
  weights as one seeded in a fresh state."""
  def seeded_draws(seed):
    seeds.set_global_seeds(seed)
    dropout = tf_keras.layers.Dropout(0.5, force_generator=True)
    dense = tf_keras.layers.Dense(4)
    ones = tf.ones([2, 8])
    return dropout(ones, training=True).numpy(), dense(ones).numpy()

  try:
    fresh = seeded_draws(3)
    tf_keras.utils.set_random_seed(0)
    seeded_draws(7)  # The generators move on.
    again = seeded_draws(3)
    for a, b in zip(fresh, again):
      np.testing.assert_array_equal(a, b)
    assert not np.array_equal(fresh[0], seeded_draws(4)[0])
    # Seeds past NumPy's 2**32 and TensorFlow's 0 class work.
    for seed in (0, 2**31 - 1, 2**63 - 1):
      np.testing.assert_array_equal(seeded_draws(seed)[0],
                                    seeded_draws(seed)[0])
  finally:
    tf.random.set_seed(None)
