"""Run by tests/test_distributed.py in a fresh process (devices must be set
before TensorFlow initialises).

  python tests/distributed_script.py mirrored_vs_one_device PARAMS_JSON OUT_JSON
      Splits the CPU into 2 logical devices; trains the same run under
      one_device and mirrored (2 replicas, same global batch, the mirrored
      run warm-started from the one-device run's initial checkpoint); writes
      the largest weight difference to OUT_JSON.
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


def mirrored_vs_one_device(params_json, out_json):
  cpu = tf.config.list_physical_devices("CPU")[0]
  tf.config.set_logical_device_configuration(
      cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
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


if __name__ == "__main__":
  globals()[sys.argv[1]](*sys.argv[2:])
