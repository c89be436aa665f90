"""Run by tests/albert_tf/training/finetuning/test_flag_combinations.py in a
fresh process (devices must be set before TensorFlow initialises).

  python tests/scripts/flag_combinations_script.py FILES_JSON \
      COMBINATIONS_JSON OUT_DIR OUT_JSON

Splits the CPU into 2 logical devices, then runs tools.run_classifier's
main in this process once per combination (a list of {switches, steps,
dtype, strategy}; the tools loaded once), each with its own output folder
run<i> under OUT_DIR, on the files of FILES_JSON (the test's `files`
fixture). Writes to OUT_JSON the outcome of each ("trains", "refused:
<line>" or what went wrong, test_flag_combinations.run_combination) and the
number of replicas each strategy builds here.
"""

import contextlib
import io
import json
import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir, os.pardir))

import tensorflow as tf  # noqa: E402


def main(files_json, combinations_json, out_dir, out_json):
  cpu = tf.config.list_physical_devices("CPU")[0]
  tf.config.set_logical_device_configuration(
      cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
  from albert_tf.training.strategy import create_strategy
  from tests.albert_tf.training.finetuning import test_flag_combinations as t
  files = json.loads(files_json)
  captured = io.StringIO()

  def read_err():
    text = captured.getvalue()
    captured.seek(0)
    captured.truncate()
    return text

  outcomes = {}
  for index, combo in enumerate(json.loads(combinations_json)):
    # Every MirroredStrategy of a process numbers its collectives from the
    # same keys: a second run of other shapes fails ("Shape mismatch in the
    # collective instance 100"). TensorFlow's own tests move the base per
    # strategy; a tool run is one process and needs nothing of the kind.
    tf.distribute.MirroredStrategy._collective_key_base += 100000
    name = t.combination_name(combo["switches"], combo["steps"],
                              combo["dtype"], combo["strategy"])
    with contextlib.redirect_stderr(captured):
      outcomes[name] = t.run_combination(
          files, pathlib.Path(out_dir) / f"run{index}", combo["switches"],
          combo["steps"], combo["dtype"], combo["strategy"], read_err)
    print(f"{name}: {outcomes[name]}", file=sys.stderr, flush=True)
  replicas = {name: create_strategy(name).num_replicas_in_sync
              for name in ("default", "mirrored")}
  with open(out_json, "w") as f:
    json.dump(dict(outcomes=outcomes, replicas=replicas), f)


if __name__ == "__main__":
  main(*sys.argv[1:])
