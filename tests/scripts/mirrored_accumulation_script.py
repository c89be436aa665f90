"""Run by tests/albert_tf/training/pretraining/test_accumulation_fast.py in
a fresh process (devices must be set before TensorFlow initialises).

  python tests/scripts/mirrored_accumulation_script.py

Splits the CPU into 2 logical devices; one LAMB update of the tiny
pretrainer of tests/albert_tf/training/pretraining/test_accumulation.py on
its 8-sequence batch (masked tokens 12 on replica 0's rows, 9 on replica
1's): on one device with K=1, and under MirroredStrategy with K=2 (each
replica's 4 sequences in 2 slices). Prints, as JSON, the mirrored run's
largest weight difference from the one-device run and the gradient norm
of each run (clipping off: the norms show a gradient's scale, which
LAMB's update would hide).
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir, os.pardir))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def main():
  cpu = tf.config.list_physical_devices("CPU")[0]
  tf.config.set_logical_device_configuration(
      cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
  from albert_tf import optimization
  from albert_tf.training.pretraining.runner import PretrainingRunner
  from tests.albert_tf.training.pretraining import test_accumulation as case
  devices = [d.name for d in tf.config.list_logical_devices("CPU")]

  def update(strategy, steps):
    with strategy.scope():
      model = case.make_model()
      optimizer = optimization.create_optimizer("lamb", 1e-2, 10, 0)
    runner = PretrainingRunner(strategy, model, optimizer,
                               global_batch_size=case.BATCH,
                               clip_norm=1e9,
                               gradient_accumulation_steps=steps)
    data = strategy.experimental_distribute_dataset(
        tf.data.Dataset.from_tensor_slices(case.make_batch()).batch(
            case.BATCH))
    iterator = iter(data)
    tf.function(runner.train_step)(iterator)
    return ([v.numpy() for v in model.trainable_variables],
            float(runner.gradient_norm.result()))

  one, one_norm = update(tf.distribute.OneDeviceStrategy(devices[0]), 1)
  start = [v.numpy() for v in case.make_model().trainable_variables]
  result = dict(replicas=len(devices), one_device_norm=one_norm,
                moved=max(float(np.abs(w - s).max())
                          for w, s in zip(one, start)))
  mirrored = tf.distribute.MirroredStrategy(devices)
  weights, norm = update(mirrored, 2)
  result["mirrored_k2_difference"] = max(
      float(np.abs(a - b).max()) for a, b in zip(weights, one))
  result["mirrored_k2_norm"] = norm
  print(json.dumps(result))


if __name__ == "__main__":
  main()
