"""Run by tests/albert_tf/training/pretraining/test_distributed.py in a fresh
process (devices must be set before TensorFlow initialises).

  python tests/scripts/distributed_script.py pretraining_runs PARAMS_JSON \
      OUT_JSON
      Splits the CPU into 2 logical devices, then in one process (one
      TensorFlow start-up and one one-device run for every check):
      - trains the same run under one_device and mirrored (2 replicas, same
        global batch, the mirrored run warm-started from the one-device
        run's initial checkpoint): their largest weight difference;
      - a mirrored run from the same start stopped after one loop and
        resumed (a new model, the same output_dir): its largest weight
        difference from the uninterrupted mirrored run above;
      - mirrored runs from the same start with
        --gradient_accumulation_steps 2 and 4 (each replica's 8 sequences
        in slices of 4 and 2): their largest weight differences from the
        one-device run (--gradient_accumulation_steps=1).
      Writes them, with sanity numbers, to OUT_JSON: {"mirrored": ...,
      "accumulated": ...}.

  python tests/scripts/distributed_script.py finetuning_accumulated ONE_NPZ
      On 2 logical devices: fine-tuning cases of
      tests/albert_tf/training/finetuning/test_accumulation_finetuning.py
      (dropout on) under mirrored with K=2 against K=1, and mirrored K=1
      against one device (the weights "<case>.<i>" of ONE_NPZ, from the
      calling test's process); prints their largest weight differences as
      JSON.
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir, os.pardir))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from albert_common import settings_fields  # noqa: E402


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


def pretraining_runs(params_json, out_json):
  _two_logical_cpus()
  from absl import logging
  import tf_keras

  from albert_tf.training.pretraining import driver as lib
  logging.set_verbosity(logging.INFO)  # the resume line is an INFO line
  params = lib.PretrainingParams.from_flat(**json.loads(params_json))
  root = params.runtime.output_dir
  one_device = settings_fields.replace(
      params, strategy="one_device",
      output_dir=os.path.join(root, "one_device"))
  start = os.path.join(one_device.runtime.output_dir, "ckpt-0")
  mirrored = settings_fields.replace(  # start from the very same weights
      params, strategy="mirrored", init_checkpoint=start,
      output_dir=os.path.join(root, "mirrored"))
  resumed = settings_fields.replace(
      mirrored, output_dir=os.path.join(root, "resumed"))
  lib.run_pretraining(one_device)
  lib.run_pretraining(mirrored)
  # Stopped after one loop, then a new model resumes from output_dir.
  lib.build_pretraining(resumed).controller.train(
      steps=params.iterations_per_loop)
  tf_keras.backend.clear_session()
  lib.run_pretraining(resumed)
  weights = {name: _weights(run.runtime.output_dir) for name, run in (
      ("one_device", one_device), ("mirrored", mirrored),
      ("resumed", resumed))}
  whole = weights["one_device"]
  logical_cpus = len(tf.config.list_logical_devices("CPU"))
  largest_weight = max(float(np.abs(v).max()) for v in whole.values())
  accumulated = dict(largest_weight=largest_weight, num_weights=len(whole),
                     logical_cpus=logical_cpus)
  for steps in (2, 4):
    # Every MirroredStrategy of a process numbers its collectives from the
    # same keys (flag_combinations_script.py): after the K=1 runs above,
    # without keys of its own, this process failed in graph execution.
    tf.distribute.MirroredStrategy._collective_key_base += 100000
    run = settings_fields.replace(
        mirrored, gradient_accumulation_steps=steps,
        output_dir=os.path.join(root, f"mirrored_k{steps}"))
    lib.run_pretraining(run)
    accumulated[f"mirrored_k{steps}_vs_one_device"] = _largest_difference(
        whole, _weights(run.runtime.output_dir))
  with open(out_json, "w") as f:
    json.dump(dict(mirrored=dict(
        mirrored_vs_one_device=_largest_difference(whole,
                                                   weights["mirrored"]),
        resumed_vs_straight=_largest_difference(weights["mirrored"],
                                                weights["resumed"]),
        largest_weight=largest_weight,
        largest_mirrored_weight=max(float(np.abs(v).max())
                                    for v in weights["mirrored"].values()),
        num_weights=len(weights["mirrored"]),
        logical_cpus=logical_cpus), accumulated=accumulated), f)


def finetuning_accumulated(one_device_npz):
  _two_logical_cpus()
  from tests.albert_tf.training.finetuning import (
    test_accumulation_finetuning as cases,
  )
  strategy = tf.distribute.MirroredStrategy(
      [d.name for d in tf.config.list_logical_devices("CPU")])
  result = {"replicas": strategy.num_replicas_in_sync}
  saved = np.load(one_device_npz)

  def largest(a, b):
    assert len(a) == len(b), (len(a), len(b))
    return max(float(np.abs(x - y).max()) for x, y in zip(a, b))

  for case in cases.MIRRORED_CASES:
    one_device = [saved[name] for name in sorted(
        (n for n in saved.files if n.rsplit(".", 1)[0] == case),
        key=lambda n: int(n.rsplit(".", 1)[1]))]
    whole = cases._train(case, 1, strategy)[0]  # noqa: SLF001
    accumulated = cases._train(case, 2, strategy)[0]  # noqa: SLF001
    result[case] = dict(k2_vs_k1=largest(accumulated, whole),
                        mirrored_vs_one_device=largest(whole, one_device))
  print(json.dumps(result))


if __name__ == "__main__":
  globals()[sys.argv[1]](*sys.argv[2:])
