"""What the fault tests share: the processes they start, kill and wait
for, a tiny config and a crafted SST-2 folder."""

import os
import random
import signal
import subprocess
import sys
import time

import tensorflow as tf

from albert_tf.config import AlbertConfig

ROOT = os.path.abspath(os.path.join(__file__, "../../.."))
SEQ, PREDS = 32, 5


def env():
  return dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")


def start(module, *args):
  return subprocess.Popen([sys.executable, "-m", module, *args], cwd=ROOT,
                          env=env(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)


def finish(proc, timeout=300):
  out, err = proc.communicate(timeout=timeout)
  assert "Traceback" not in err, err[-3000:]
  assert proc.returncode == 0, err[-3000:]
  return out


def kill(proc):
  proc.send_signal(signal.SIGKILL)
  proc.communicate(timeout=60)
  assert proc.returncode == -signal.SIGKILL


def wait_for(predicate, proc, timeout=240, poll=0.01):
  """Polls until predicate() is true; fails if proc ends first."""
  deadline = time.time() + timeout
  while not predicate():
    if proc.poll() is not None:
      raise AssertionError("the run ended before the kill point:\n" +
                           proc.stderr.read()[-3000:])
    assert time.time() < deadline, "kill point never reached"
    time.sleep(poll)


def latest_step(output_dir):
  latest = tf.train.latest_checkpoint(output_dir)
  return -1 if latest is None else int(latest.rsplit("-", 1)[1])


def write_config(folder):
  """albert_config.json of a tiny model (H=32, 2 layers, dropout on) in
  `folder`; its path."""
  path = os.path.join(str(folder), "albert_config.json")
  AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
               num_hidden_layers=2, num_attention_heads=2,
               intermediate_size=64, max_position_embeddings=SEQ,
               hidden_dropout_prob=0.1,
               attention_probs_dropout_prob=0.1).to_json_file(path)
  return path


def write_sst2(data_dir, corpus, num_train=400, num_dev=64):
  """SST-2 rows: label 1 iff the keyword was inserted into the sentence."""
  rng = random.Random(0)
  with open(corpus, encoding="utf-8") as f:
    lines = [line.split()[:12] for line in f
             if len(line.split()) >= 4 and "banana" not in line.lower()]
  os.makedirs(data_dir, exist_ok=True)
  for split, chunk in (("train", lines[:num_train]),
                       ("dev", lines[num_train:num_train + num_dev])):
    with open(os.path.join(data_dir, f"{split}.tsv"), "w",
              encoding="utf-8") as f:
      f.write("sentence\tlabel\n")
      for words in chunk:
        label = rng.randint(0, 1)
        if label:
          words = words[:]
          words.insert(rng.randint(0, len(words)), "banana")
        f.write(" ".join(words) + f"\t{label}\n")

