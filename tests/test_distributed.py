"""Distributed pretraining: MirroredStrategy over 2 logical CPUs equals one
device; MultiWorkerMirroredStrategy across 2 local worker processes runs."""

import dataclasses
import json
import os
import socket
import subprocess
import sys

import pytest

from albert_tf.config import AlbertConfig

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir)


@pytest.fixture
def run_settings(tmp_path, pretraining_records):
  config_path = str(tmp_path / "albert_config.json")
  AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
               num_hidden_layers=2, num_attention_heads=2,
               intermediate_size=64, max_position_embeddings=32,
               ).to_json_file(config_path)
  return dict(input_file=pretraining_records["path"],
              output_dir=str(tmp_path / "run"),
              albert_config_file=config_path, train_batch_size=16,
              max_seq_length=32, max_predictions_per_seq=5,
              learning_rate=1e-2, num_train_steps=6, num_warmup_steps=2,
              save_checkpoints_steps=3, iterations_per_loop=3, seed=5,
              shuffle_buffer_size=50)


def test_mirrored_two_replicas_equals_one_device(run_settings, tmp_path):
  out = str(tmp_path / "result.json")
  process = subprocess.run(
      [sys.executable, os.path.join(ROOT, "tests", "distributed_script.py"),
       "mirrored_vs_one_device", json.dumps(run_settings), out],
      cwd=ROOT, check=False, capture_output=True, text=True, timeout=600)
  assert process.returncode == 0, process.stderr[-3000:]
  with open(out) as f:
    result = json.load(f)
  assert result["logical_cpus"] == 2
  assert result["num_weights"] > 20
  assert result["largest_weight"] > 0.1
  assert result["max_difference"] < 2e-4, result


def _free_ports(count):
  sockets = [socket.socket() for _ in range(count)]
  for s in sockets:
    s.bind(("localhost", 0))
  ports = [s.getsockname()[1] for s in sockets]
  for s in sockets:
    s.close()
  return ports


def _run_two_workers(run_settings, timeout=240):
  """Runs the two-worker job once; returns (return codes, outputs)."""
  ports = _free_ports(2)
  cluster = {"worker": [f"localhost:{p}" for p in ports]}
  flags = [f"--{k}={v}" for k, v in run_settings.items()]
  processes = []
  for task in range(2):
    env = dict(os.environ, TF_CONFIG=json.dumps(
        {"cluster": cluster, "task": {"type": "worker", "index": task}}))
    processes.append(subprocess.Popen(
        [sys.executable, "-m", "tools.run_pretraining",
         "--strategy=multi_worker"] + flags,
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True))
  outputs = []
  for process in processes:
    try:
      outputs.append(process.communicate(timeout=timeout)[0])
    except subprocess.TimeoutExpired:
      # One worker died (e.g. its port was taken): the other waits forever.
      for p in processes:
        p.kill()
      outputs.append(process.communicate()[0])
  return [p.returncode for p in processes], outputs


def test_multi_worker_mirrored_two_processes(run_settings):
  # Free ports are picked before the workers bind them, so another process
  # can take one in between: one retry with fresh ports and a fresh dir.
  for attempt in range(2):
    settings = dict(run_settings,
                    output_dir=run_settings["output_dir"] + f"_{attempt}")
    codes, outputs = _run_two_workers(settings)
    if codes == [0, 0]:
      break
  assert codes == [0, 0], "\n=====\n".join(o[-3000:] for o in outputs)
  assert ("strategy multi_worker (CollectiveAllReduceStrategy) with 2 "
          "replica(s)") in outputs[0]
  names = os.listdir(settings["output_dir"])
  assert "ckpt-6.index" in names
  assert not [n for n in names if n.startswith(".worker_")]  # scratch removed
