"""benchmarks.investigations.byte_identity's comparison rules, on crafted
folders."""

import json
import os

import tensorflow as tf

from benchmarks.investigations import byte_identity


def _write(root, path, data):
  full = os.path.join(root, path)
  os.makedirs(os.path.dirname(full), exist_ok=True)
  with open(full, "wb" if isinstance(data, bytes) else "w") as f:
    f.write(data)


def _variables(folder, dropout_state, weight):
  module = tf.Module()
  module.weight = tf.Variable(weight)
  module.rng = tf.Module()
  module.rng._state_var = tf.Variable(dropout_state)
  tf.train.Checkpoint(module).write(os.path.join(folder, "variables",
                                                 "variables"))


def test_the_rules(tmp_path):
  before, after = str(tmp_path / "before"), str(tmp_path / "after")
  for root, uuid, seconds, state in ((before, b"1", 1.5, [1, 2]),
                                     (after, b"2", 9.0, [7, 8])):
    _write(root, "data/x.tfrecord-00000-of-00001", b"records")
    _write(root, "export/fingerprint.pb", uuid)
    _write(root, "data/x.tfrecord.stats.json", json.dumps(
        {"instances": 3, "seconds": seconds, "fingerprint": str(uuid)}))
    _variables(os.path.join(root, "export"), state, [1.0, 2.0])
  result = byte_identity.compare(before, after)
  assert result["differ"] == [] and result["only_after"] == []
  assert "data/x.tfrecord-00000-of-00001" in result["equal"]
  assert "export/variables/variables.data-00000-of-00001" in result["equal"]

  _write(after, "data/x.tfrecord.stats.json",
         json.dumps({"instances": 4, "seconds": 1.5}))
  _variables(os.path.join(after, "export"), [1, 2], [1.0, 2.5])
  _write(after, "data/new.txt", "")
  result = byte_identity.compare(before, after)
  assert result["differ"] == ["data/x.tfrecord.stats.json",
                              "export/variables/variables.data-00000-of-00001"]
  assert result["only_after"] == ["data/new.txt"]
