"""Run by tests/test_distributed.py in a fresh process (devices must be set
before TensorFlow initialises).

  python tests/distributed_script.py mirrored_vs_one_device PARAMS_JSON OUT_JSON
      Splits the CPU into 2 logical devices; trains the same run under
      one_device and mirrored (2 replicas, same global batch, the mirrored
      run warm-started from the one-device run's initial checkpoint); writes
      the largest weight difference to OUT_JSON.

  python tests/distributed_script.py mirrored_resume PARAMS_JSON OUT_JSON
      Under MirroredStrategy over 2 logical CPU devices: an uninterrupted
      run, and a run stopped after one loop and resumed (a new model, the
      same output_dir); writes their largest weight difference to OUT_JSON.
"""

import dataclasses
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def _weights(output_dir):
  reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(output_dir))
  return {k: reader.get_tensor(k) for k in reader.get_variable_to_shape_map()
          if k.startswith("model/") and "OPTIMIZER_SLOT" not in k}


def _two_logical_cpus():
  cpu = tf.config.list_physical_devices("CPU")[0]
  tf.config.set_logical_device_configuration(
      cpu, [tf.config.LogicalDeviceConfiguration()] * 2)


def _largest_difference(a, b):
  assert a.keys() == b.keys()
  return max(float(np.abs(a[k] - b[k]).max()) for k in a)


def mirrored_vs_one_device(params_json, out_json):
  _two_logical_cpus()
  from albert_tf.training import run_pretraining as lib
  params = lib.PretrainingParams(**json.loads(params_json))
  results = {}
  for strategy in ("one_device", "mirrored"):
    run = dataclasses.replace(
        params, strategy=strategy,
        output_dir=os.path.join(params.output_dir, strategy))
    if strategy == "mirrored":  # start from the very same weights
      run = dataclasses.replace(run, init_checkpoint=os.path.join(
          params.output_dir, "one_device", "ckpt-0"))
    lib.run_pretraining(run)
    results[strategy] = _weights(run.output_dir)
  assert results["one_device"].keys() == results["mirrored"].keys()
  diff = max(float(np.abs(results["one_device"][k] - results["mirrored"][k])
                   .max()) for k in results["one_device"])
  moved = max(float(np.abs(results["one_device"][k]).max())
              for k in results["one_device"])
  replicas = len(tf.config.list_logical_devices("CPU"))
  with open(out_json, "w") as f:
    json.dump(dict(max_difference=diff, largest_weight=moved,
                   num_weights=len(results["mirrored"]),
                   logical_cpus=replicas), f)


def mirrored_resume(params_json, out_json):
  _two_logical_cpus()
  from absl import logging  # pylint: disable=g-import-not-at-top
  import tf_keras  # pylint: disable=g-import-not-at-top
  from albert_tf.training import run_pretraining as lib  # pylint: disable=g-import-not-at-top
  logging.set_verbosity(logging.INFO)
  params = dataclasses.replace(
      lib.PretrainingParams(**json.loads(params_json)), strategy="mirrored")
  straight = dataclasses.replace(
      params, output_dir=os.path.join(params.output_dir, "straight"))
  lib.run_pretraining(straight)
  resumed = dataclasses.replace(
      params, output_dir=os.path.join(params.output_dir, "resumed"),
      init_checkpoint=os.path.join(straight.output_dir, "ckpt-0"))
  lib.build_pretraining(resumed).controller.train(
      steps=params.iterations_per_loop)
  tf_keras.backend.clear_session()
  lib.run_pretraining(resumed)
  a, b = _weights(straight.output_dir), _weights(resumed.output_dir)
  with open(out_json, "w") as f:
    json.dump(dict(max_difference=_largest_difference(a, b),
                   largest_weight=max(float(np.abs(v).max())
                                      for v in a.values()),
                   replicas=len(tf.config.list_logical_devices("CPU"))), f)


if __name__ == "__main__":
  globals()[sys.argv[1]](*sys.argv[2:])
