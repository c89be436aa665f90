"""Fault suite, killed runs: runs killed with SIGKILL and rerun.

- Pretraining and fine-tuning killed at several points (and a checkpoint
  save cut short) and rerun with the same command end with the same weights
  as an uninterrupted run with the same seed.
- create_pretraining_data killed while writing shards never shows a
  truncated shard under a final name; a rerun gives the uninterrupted bytes.

Bad input: test_faults_cli.py (through the tools) and
test_faults_in_process.py.
"""

import concurrent.futures
import os
import random
import time

import numpy as np
import pytest
import tensorflow as tf

from tests.project.fault_kit import PREDS
from tests.project.fault_kit import SEQ
from tests.project.fault_kit import finish
from tests.project.fault_kit import kill
from tests.project.fault_kit import latest_step
from tests.project.fault_kit import start
from tests.project.fault_kit import wait_for


def _model_weights(output_dir):
  """{name: array} of the float model variables of the latest checkpoint."""
  reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(output_dir))
  dtypes = reader.get_variable_to_dtype_map()
  return {name: reader.get_tensor(name) for name in dtypes
          if name.startswith("model/") and dtypes[name].is_floating}


def _assert_same_weights(a_dir, b_dir):
  a, b = _model_weights(a_dir), _model_weights(b_dir)
  assert sorted(a) == sorted(b) and len(a) > 10
  worst = max(float(np.max(np.abs(a[k] - b[k]))) for k in a)
  assert worst <= 1e-5, worst
  return worst


def _cut_short_save(output_dir, step):
  """What a kill in the middle of saving ckpt-<step> leaves: truncated files
  under the final names, the `checkpoint` state file not yet updated (TF
  writes it last)."""
  prefix = os.path.join(output_dir, f"ckpt-{step}")
  done = tf.train.latest_checkpoint(output_dir)
  for suffix in (".data-00000-of-00001", ".index"):
    with open(done + suffix, "rb") as f:
      data = f.read()
    with open(prefix + suffix, "wb") as f:
      f.write(data[:len(data) // 3])
  assert tf.train.latest_checkpoint(output_dir) == done



# --- pretraining and fine-tuning: SIGKILL and rerun -------------------------
#
# Both kill sequences run side by side (fixture `kill_sequences`), each next
# to its uninterrupted reference: mostly one process per sequence is alive.


def _kill_sequence(command, folder):
  """An uninterrupted run of `command(output_dir)` to step 60 beside one
  killed with SIGKILL right after ckpt-10, then (rerun with the same
  command) at a random moment after ckpt-20, then, when it had not finished,
  a save of the next checkpoint cut short; the last rerun ends the run.
  Returns (reference dir, killed dir, a line naming the kill points, the
  uninterrupted run's stderr)."""
  reference = os.path.join(folder, "reference")
  killed = os.path.join(folder, "killed")
  uninterrupted = start(*command(reference))
  # Kill 1: right after ckpt-10 is recorded.
  run = start(*command(killed))
  wait_for(lambda: latest_step(killed) >= 10, run)
  kill(run)
  first_kill = latest_step(killed)
  assert 10 <= first_kill < 60
  # Kill 2: at a random moment after the rerun has passed ckpt-20.
  run = start(*command(killed))
  wait_for(lambda: latest_step(killed) >= 20, run)
  time.sleep(random.uniform(0, 0.1))
  kill(run)
  second_kill = latest_step(killed)
  assert second_kill >= 20
  if second_kill < 60:
    # A kill during the next save: the previous checkpoint stays the one
    # a rerun resumes from, and the rerun overwrites the broken files.
    _cut_short_save(killed, second_kill + 10)
  finish(start(*command(killed)))
  _, reference_log = uninterrupted.communicate(timeout=300)
  assert uninterrupted.returncode == 0, reference_log[-3000:]
  return (reference, killed,
          f"killed after ckpt-{first_kill} and ckpt-{second_kill}",
          reference_log)


def _pretraining_command(records, config_file, *extra):
  return lambda output_dir: (*(
      "tools.run_pretraining", f"--input_file={records}",
      f"--output_dir={output_dir}", f"--albert_config_file={config_file}",
      "--train_batch_size=8", f"--max_seq_length={SEQ}",
      f"--max_predictions_per_seq={PREDS}", "--learning_rate=1e-3",
      "--num_train_steps=60", "--num_warmup_steps=4",
      "--save_checkpoints_steps=10", "--iterations_per_loop=5", "--seed=11",
      "--shuffle_buffer_size=100"), *extra)


def _finetuning_command(sst2_dir, spm_model, config_file,
                        length_buckets="auto"):
  """run_classifier to step 60. `--length_buckets=auto` fits the
  boundaries to the training lengths; the rerun reads them back from
  length_buckets.json."""
  return lambda output_dir: (
      "tools.run_classifier", "--task_name=SST-2", f"--data_dir={sst2_dir}",
      f"--albert_config_file={config_file}", f"--spm_model_file={spm_model}",
      f"--output_dir={output_dir}", "--do_train", f"--max_seq_length={SEQ}",
      "--train_batch_size=16", "--learning_rate=1e-3", "--train_step=60",
      "--warmup_step=4", "--save_checkpoints_steps=10",
      "--iterations_per_loop=5", "--seed=5",
      f"--length_buckets={length_buckets}")



@pytest.fixture(scope="module")
def kill_sequences(tmp_path_factory, pretraining_records, config_file,
                   sst2_dir, spm_model):
  """{"pretraining" | "finetuning" | "finetuning_bucketed": future of
  `_kill_sequence`'s result}; two sequences at a time."""
  commands = {
      "pretraining": _pretraining_command(pretraining_records["path"],
                                          config_file),
      # 4 micro-batches of 2 sequences an update, looped inside the step: a
      # kill at a random moment lands between micro-batches of an update.
      "pretraining_accumulated": _pretraining_command(
          pretraining_records["path"], config_file,
          "--gradient_accumulation_steps=4"),
      "finetuning": _finetuning_command(sst2_dir, spm_model, config_file),
      # The SST-2 rows (4 to 13 words) straddle 16 pieces: both buckets
      # train (the test checks the reference run's log).
      "finetuning_bucketed": _finetuning_command(
          sst2_dir, spm_model, config_file, length_buckets=f"16,{SEQ}")}
  with concurrent.futures.ThreadPoolExecutor(2) as pool:
    yield {name: pool.submit(_kill_sequence, command,
                             str(tmp_path_factory.mktemp(name)))
           for name, command in commands.items()}


@pytest.mark.slow
def test_pretraining_killed_twice_and_cut_short_save_resumes_exactly(
    kill_sequences):
  reference, killed, kills, _ = kill_sequences["pretraining"].result()
  print(f"pretraining {kills}")
  assert latest_step(killed) == latest_step(reference) == 60
  _assert_same_weights(reference, killed)


@pytest.mark.slow
def test_accumulating_pretraining_killed_between_micro_batches_resumes_exactly(
    kill_sequences):
  """--gradient_accumulation_steps=4: checkpoints fall at update
  boundaries; a run killed inside an update resumes to the uninterrupted
  run's weights."""
  reference, killed, kills, log = kill_sequences[
      "pretraining_accumulated"].result()
  print(f"accumulating pretraining {kills}")
  assert "micro-batch(es) of 2 sequences (--gradient_accumulation_steps=4)" \
      in log, log[-3000:]
  assert latest_step(killed) == latest_step(reference) == 60
  _assert_same_weights(reference, killed)


@pytest.mark.slow
def test_finetuning_killed_and_rerun_resumes_exactly(kill_sequences):
  reference, killed, kills, _ = kill_sequences["finetuning"].result()
  print(f"fine-tuning {kills}")
  assert latest_step(killed) == latest_step(reference) == 60
  _assert_same_weights(reference, killed)


@pytest.mark.slow
def test_bucketed_finetuning_killed_and_rerun_resumes_exactly(
    kill_sequences):
  """As above with --length_buckets=16,32: batches of two shapes, so the
  resumed data position must land on the same bucketed batch."""
  reference, killed, kills, log = kill_sequences[
      "finetuning_bucketed"].result()
  print(f"bucketed fine-tuning {kills}")
  assert (f"train step traced 2 times for 2 batch shapes (length buckets "
          f"16,{SEQ})") in log, log[-3000:]
  assert latest_step(killed) == latest_step(reference) == 60
  _assert_same_weights(reference, killed)


# --- create_pretraining_data: SIGKILL and rerun ------------------------------


def _data_command(corpus, spm_model, output):
  return ("tools.create_pretraining_data", f"--input_file={corpus}",
          f"--output_file={output}", "--num_output_shards=4",
          f"--spm_model_file={spm_model}", "--max_seq_length=64",
          "--max_predictions_per_seq=10", "--dupe_factor=8",
          "--num_workers=1", "--piece_bytes=32768", "--random_seed=3",
          "--noprogress")


def _final_shards(output):
  folder, name = os.path.split(output)
  return sorted(os.path.join(folder, f) for f in os.listdir(folder)
                if f.startswith(name + "-") and not f.startswith("."))


def test_data_creation_killed_mid_shard_and_rerun(tmp_path, english_corpus,
                                                  spm_model):
  from data_pipeline.pretraining import reader as pretraining_input
  corpus = str(tmp_path / "corpus.txt")
  with open(english_corpus, encoding="utf-8") as f:
    text = f.read()
  with open(corpus, "w", encoding="utf-8") as f:
    f.write(text * 3)
  reference = str(tmp_path / "reference" / "train.tfrecord")
  killed = str(tmp_path / "killed" / "train.tfrecord")
  os.makedirs(os.path.dirname(killed))
  uninterrupted = start(*_data_command(corpus, spm_model, reference))
  for shards_done in (1, 3):
    run = start(*_data_command(corpus, spm_model, killed))
    wait_for(lambda: len(_final_shards(killed)) >= shards_done, run,
              poll=0.002)
    kill(run)
    visible = _final_shards(killed)
    assert 1 <= len(visible) < 4, visible
    for path in visible:  # every shard under a final name is complete
      assert pretraining_input.validate_tfrecord_file(
          path, 64, 10, max_records=None) > 0
  finish(start(*_data_command(corpus, spm_model, killed)))
  finish(uninterrupted)
  names = [os.path.basename(p) for p in _final_shards(reference)]
  assert names == [os.path.basename(p) for p in _final_shards(killed)]
  assert len(names) == 4
  for name in names:
    with open(os.path.join(os.path.dirname(reference), name), "rb") as a, \
        open(os.path.join(os.path.dirname(killed), name), "rb") as b:
      assert a.read() == b.read(), name
  leftovers = [f for f in os.listdir(os.path.dirname(killed))
               if "tmp" in f.lower()]
  assert not leftovers, leftovers


