"""Distributed pretraining: MirroredStrategy over 2 logical CPUs equals one
device; MultiWorkerMirroredStrategy across 2 local worker processes runs."""

import json
import os
import socket
import subprocess
import sys

import pytest

from albert_tf.config import AlbertConfig

# Minutes of multi-process or whole-pipeline runs: `make test-all` only.
pytestmark = pytest.mark.slow

ROOT = os.path.abspath(os.path.join(__file__, "../../../../.."))


def _settings(folder, records, dropout=0.1):
  config_path = os.path.join(folder, "albert_config.json")
  AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
               num_hidden_layers=2, num_attention_heads=2,
               intermediate_size=64, max_position_embeddings=32,
               hidden_dropout_prob=dropout,
               attention_probs_dropout_prob=dropout,
               ).to_json_file(config_path)
  return dict(input_file=records["path"],
              output_dir=os.path.join(folder, "run"),
              albert_config_file=config_path, train_batch_size=16,
              max_seq_length=32, max_predictions_per_seq=5,
              learning_rate=1e-2, num_train_steps=6, num_warmup_steps=2,
              save_checkpoints_steps=3, iterations_per_loop=3, seed=0,
              shuffle_buffer_size=50)


@pytest.fixture
def run_settings(tmp_path, pretraining_records):
  return _settings(str(tmp_path), pretraining_records)


@pytest.fixture(scope="module")
def pretraining_runs(tmp_path_factory, pretraining_records):
  """One process over 2 logical CPUs (tests/scripts/distributed_script.py
  pretraining_runs), one one-device run for all: one-device vs mirrored
  training; a mirrored run interrupted after its first loop (step 3 of 6)
  and resumed; mirrored runs at K=2 and K=4. With dropout 0.1: each
  sequence's masks come from the update's seed and its position in the
  global batch (albert_tf.training.update_dropout), so 2 replicas equal 1
  device, the resumed run the uninterrupted one, and K slices the whole
  batch."""
  folder = str(tmp_path_factory.mktemp("mirrored"))
  out = os.path.join(folder, "result.json")
  process = subprocess.run(
      [sys.executable,
       os.path.join(ROOT, "tests", "scripts", "distributed_script.py"),
       "pretraining_runs",
       json.dumps(_settings(folder, pretraining_records, dropout=0.1)),
       out], cwd=ROOT, check=False, capture_output=True, text=True,
      timeout=900)
  assert process.returncode == 0, process.stderr[-3000:]
  with open(out) as f:
    return process, json.load(f)


@pytest.fixture(scope="module")
def mirrored_runs(pretraining_runs):
  process, result = pretraining_runs
  return process, result["mirrored"]


def test_mirrored_two_replicas_equals_one_device(mirrored_runs):
  _, result = mirrored_runs
  assert result["logical_cpus"] == 2
  assert result["num_weights"] > 20
  assert result["largest_weight"] > 0.1
  assert result["mirrored_vs_one_device"] < 2e-4, result


def test_mirrored_interrupted_run_resumes_the_data_stream_exactly(
    mirrored_runs):
  """MirroredStrategy's iterators cannot be checkpointed; the data stream
  still resumes where it stopped (from the step), so the resumed run ends
  with the weights of the uninterrupted one."""
  process, result = mirrored_runs
  assert ("input pipeline 1/1 resumes the data stream at step 3: record 48 "
          in process.stderr), process.stderr[-3000:]
  assert result["logical_cpus"] == 2  # 2 replicas
  assert result["largest_mirrored_weight"] > 0.1
  assert result["resumed_vs_straight"] < 1e-5, result


@pytest.fixture(scope="module")
def accumulated_runs(pretraining_runs):
  return pretraining_runs[1]["accumulated"]


def test_mirrored_accumulation_equals_the_one_device_whole_batch(
    accumulated_runs):
  """6 LAMB updates of 16 sequences (warmup 2, clipping, weight decay):
  2 replicas x K slices give the one-device whole-batch weights."""
  result = accumulated_runs
  assert result["logical_cpus"] == 2
  assert result["num_weights"] > 20 and result["largest_weight"] > 0.1
  assert result["mirrored_k2_vs_one_device"] < 1e-5, result
  assert result["mirrored_k4_vs_one_device"] < 1e-5, result


def _free_ports(count):
  sockets = [socket.socket() for _ in range(count)]
  for s in sockets:
    s.bind(("localhost", 0))
  ports = [s.getsockname()[1] for s in sockets]
  for s in sockets:
    s.close()
  return ports


def _run_two_workers(run_settings, timeout=240,
                     module="tools.run_pretraining"):
  """Runs the two-worker job once; returns (return codes, outputs)."""
  ports = _free_ports(2)
  cluster = {"worker": [f"localhost:{p}" for p in ports]}
  flags = [f"--{k}={v}" if v is not True else f"--{k}"
           for k, v in run_settings.items()]
  processes = []
  for task in range(2):
    env = dict(os.environ, TF_CONFIG=json.dumps(
        {"cluster": cluster, "task": {"type": "worker", "index": task}}))
    processes.append(subprocess.Popen(
        [sys.executable, "-m", module, "--strategy=multi_worker"] + flags,
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


def _two_worker_attempts(settings, module):
  """Two tries (free ports can be taken between picking and binding them);
  returns the settings of the last try and its outputs."""
  for attempt in range(2):
    tried = dict(settings, output_dir=settings["output_dir"] + f"_{attempt}")
    codes, outputs = _run_two_workers(tried, module=module)
    if codes == [0, 0]:
      break
  assert codes == [0, 0], "\n=====\n".join(o[-3000:] for o in outputs)
  return tried, outputs


def test_multi_worker_mirrored_two_processes(run_settings):
  settings, outputs = _two_worker_attempts(run_settings,
                                           "tools.run_pretraining")
  assert ("strategy multi_worker (CollectiveAllReduceStrategy) with 2 "
          "replica(s)") in outputs[0]
  names = os.listdir(settings["output_dir"])
  assert "ckpt-6.index" in names
  assert not [n for n in names if n.startswith(".worker_")]  # scratch removed


def _checkpoint_weights(output_dir):
  import tensorflow as tf
  reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(output_dir))
  return {k: reader.get_tensor(k) for k in reader.get_variable_to_shape_map()
          if k.startswith("model/") and "OPTIMIZER_SLOT" not in k}


def test_multi_worker_accumulation_equals_the_whole_batch(tmp_path,
                                                          pretraining_records):
  """2 worker processes, each replica's 8 sequences an update in 4 slices
  of 2: the weights of the same 2-worker run without accumulation."""
  weights, logs = {}, {}
  for steps in (1, 4):
    folder = str(tmp_path / f"k{steps}")
    os.makedirs(folder)
    settings = dict(_settings(folder, pretraining_records, dropout=0.0),
                    gradient_accumulation_steps=steps)
    settings, outputs = _two_worker_attempts(settings, "tools.run_pretraining")
    weights[steps] = _checkpoint_weights(settings["output_dir"])
    logs[steps] = outputs[0]
  assert ("2 replica(s), each 4 micro-batch(es) of 2 sequences "
          "(--gradient_accumulation_steps=4)") in logs[4], logs[4][-3000:]
  assert sorted(weights[1]) == sorted(weights[4]) and len(weights[1]) > 20
  worst = max(float(abs(weights[1][k] - weights[4][k]).max())
              for k in weights[1])
  assert worst < 1e-5, worst


def test_multi_worker_finetuning_only_the_chief_writes(tmp_path, spm_model):
  """GLUE fine-tuning with 2 worker processes: one output_dir, written by
  the chief; the other worker's scratch directory is gone at the end."""
  data_dir = tmp_path / "SST-2"
  data_dir.mkdir()
  words = ["good", "bad", "fine", "awful", "nice", "poor", "film", "plot"]
  for split, count in (("train", 64), ("dev", 16)):
    with open(data_dir / f"{split}.tsv", "w", encoding="utf-8") as f:
      f.write("sentence\tlabel\n")
      for i in range(count):
        f.write(f"{words[i % 8]} {words[(i * 3) % 8]} film\t{i % 2}\n")
  with open(data_dir / "test.tsv", "w", encoding="utf-8") as f:
    f.write("index\tsentence\n" + "".join(
        f"{i}\t{words[i % 8]} plot\n" for i in range(8)))
  config_path = str(tmp_path / "albert_config.json")
  AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
               num_hidden_layers=2, num_attention_heads=2,
               intermediate_size=64, max_position_embeddings=32,
               ).to_json_file(config_path)
  settings = dict(task_name="sst-2", data_dir=str(data_dir),
                  albert_config_file=config_path, spm_model_file=spm_model,
                  output_dir=str(tmp_path / "run"),
                  export_dir=str(tmp_path / "export"), do_train=True,
                  do_eval=True, do_predict=True, max_seq_length=16,
                  train_batch_size=8, eval_batch_size=8, train_step=4,
                  save_checkpoints_steps=2, iterations_per_loop=2, seed=1)
  settings, outputs = _two_worker_attempts(settings, "tools.run_classifier")
  scratch = os.path.join(settings["output_dir"], ".worker_worker_1")
  assert f"this worker writes to {scratch}" in outputs[1], outputs[1][-3000:]
  assert "this worker writes to" not in outputs[0]
  names = sorted(os.listdir(settings["output_dir"]))
  assert "ckpt-4.index" in names and "best" in names, names
  assert "eval_results.json" in names
  assert [n for n in names if n.endswith(".tsv")], names  # submission file
  assert not [n for n in names if n.startswith(".worker_")], names
  with open(os.path.join(settings["output_dir"], "eval_results.json")) as f:
    assert json.load(f)["step"] in (2, 4)
  assert os.path.exists(os.path.join(settings["export_dir"],
                                     "saved_model.pb"))


@pytest.mark.parametrize("cluster,task_type,task_id,expected", [
    ({}, None, None, True),
    ({"worker": ["a:1", "b:1"]}, "worker", 0, True),
    ({"worker": ["a:1", "b:1"]}, "worker", 1, False),
    ({"chief": ["c:1"], "worker": ["a:1"]}, "chief", 0, True),
    ({"chief": ["c:1"], "worker": ["a:1"]}, "worker", 0, False),
])
def test_is_chief(cluster, task_type, task_id, expected):
  import tensorflow as tf

  from albert_tf.training.strategy import is_chief
  resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
      tf.train.ClusterSpec(cluster), task_type=task_type, task_id=task_id)
  assert is_chief(resolver) is expected
