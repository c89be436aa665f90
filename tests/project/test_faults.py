"""Fault suite: runs killed with SIGKILL and rerun, and bad input.

- Pretraining and fine-tuning killed at several points (and a checkpoint
  save cut short) and rerun with the same command end with the same weights
  as an uninterrupted run with the same seed.
- create_pretraining_data killed while writing shards never shows a
  truncated shard under a final name; a rerun gives the uninterrupted bytes.
- Every bad-input case is a UserInputError naming the file, flag or value;
  through the command-line tools (a representative subset): exit status 1,
  one "error:" line on stderr, no traceback.
"""

import concurrent.futures
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from albert_common import settings_fields
from albert_common.errors import UserInputError
from albert_tf.config import AlbertConfig

ROOT = os.path.abspath(os.path.join(__file__, "../../.."))
SEQ, PREDS = 32, 5


def _env():
  return dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")


def _start(module, *args):
  return subprocess.Popen([sys.executable, "-m", module, *args], cwd=ROOT,
                          env=_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)


def _finish(proc, timeout=300):
  out, err = proc.communicate(timeout=timeout)
  assert "Traceback" not in err, err[-3000:]
  assert proc.returncode == 0, err[-3000:]
  return out


def _kill(proc):
  proc.send_signal(signal.SIGKILL)
  proc.communicate(timeout=60)
  assert proc.returncode == -signal.SIGKILL


def _wait_for(predicate, proc, timeout=240, poll=0.01):
  """Polls until predicate() is true; fails if proc ends first."""
  deadline = time.time() + timeout
  while not predicate():
    if proc.poll() is not None:
      raise AssertionError("the run ended before the kill point:\n" +
                           proc.stderr.read()[-3000:])
    assert time.time() < deadline, "kill point never reached"
    time.sleep(poll)


def _latest_step(output_dir):
  latest = tf.train.latest_checkpoint(output_dir)
  return -1 if latest is None else int(latest.rsplit("-", 1)[1])


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


@pytest.fixture(scope="module")
def config_file(tmp_path_factory):
  path = str(tmp_path_factory.mktemp("config") / "albert_config.json")
  AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
               num_hidden_layers=2, num_attention_heads=2,
               intermediate_size=64, max_position_embeddings=SEQ,
               hidden_dropout_prob=0.1,
               attention_probs_dropout_prob=0.1).to_json_file(path)
  return path


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
  uninterrupted = _start(*command(reference))
  # Kill 1: right after ckpt-10 is recorded.
  run = _start(*command(killed))
  _wait_for(lambda: _latest_step(killed) >= 10, run)
  _kill(run)
  first_kill = _latest_step(killed)
  assert 10 <= first_kill < 60
  # Kill 2: at a random moment after the rerun has passed ckpt-20.
  run = _start(*command(killed))
  _wait_for(lambda: _latest_step(killed) >= 20, run)
  time.sleep(random.uniform(0, 0.1))
  _kill(run)
  second_kill = _latest_step(killed)
  assert second_kill >= 20
  if second_kill < 60:
    # A kill during the next save: the previous checkpoint stays the one
    # a rerun resumes from, and the rerun overwrites the broken files.
    _cut_short_save(killed, second_kill + 10)
  _finish(_start(*command(killed)))
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


def _write_sst2(data_dir, corpus, num_train=400, num_dev=64):
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


@pytest.fixture(scope="module")
def sst2_dir(tmp_path_factory, english_corpus):
  path = str(tmp_path_factory.mktemp("glue") / "SST-2")
  _write_sst2(path, english_corpus)
  return path


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
  assert _latest_step(killed) == _latest_step(reference) == 60
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
  assert _latest_step(killed) == _latest_step(reference) == 60
  _assert_same_weights(reference, killed)


@pytest.mark.slow
def test_finetuning_killed_and_rerun_resumes_exactly(kill_sequences):
  reference, killed, kills, _ = kill_sequences["finetuning"].result()
  print(f"fine-tuning {kills}")
  assert _latest_step(killed) == _latest_step(reference) == 60
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
  assert _latest_step(killed) == _latest_step(reference) == 60
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
  uninterrupted = _start(*_data_command(corpus, spm_model, reference))
  for shards_done in (1, 3):
    run = _start(*_data_command(corpus, spm_model, killed))
    _wait_for(lambda: len(_final_shards(killed)) >= shards_done, run,
              poll=0.002)
    _kill(run)
    visible = _final_shards(killed)
    assert 1 <= len(visible) < 4, visible
    for path in visible:  # every shard under a final name is complete
      assert pretraining_input.validate_tfrecord_file(
          path, 64, 10, max_records=None) > 0
  _finish(_start(*_data_command(corpus, spm_model, killed)))
  _finish(uninterrupted)
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


# --- bad input through the command-line tools --------------------------------
#
# One process per case (each pays the TensorFlow import), two at a time.


def _bad_input_cases(root, records, spm_model, config_file, sst2_dir):
  """name -> (module, args, message regex)."""
  missing = os.path.join(root, "missing.txt")
  non_utf8 = os.path.join(root, "latin1.txt")
  with open(non_utf8, "wb") as f:
    f.write(b"A first line.\nCaf\xe9 in Latin-1.\n\nAnother document.\n")
  a_file = os.path.join(root, "a_file")
  with open(a_file, "w") as f:
    f.write("not a directory")
  corrupt = os.path.join(root, "corrupt.tfrecord")
  with open(records, "rb") as f:
    data = bytearray(f.read())
  data[len(data) // 2] ^= 0xFF  # past the first record: found while training
  with open(corrupt, "wb") as f:
    f.write(bytes(data))
  groups = os.path.join(root, "groups.json")
  with open(config_file) as f:
    config = json.load(f)
  with open(groups, "w") as f:
    json.dump(dict(config, num_hidden_groups=3), f)
  bad_tsv = os.path.join(root, "bad_glue")
  os.makedirs(bad_tsv)
  shutil.copy(os.path.join(sst2_dir, "dev.tsv"), bad_tsv)
  with open(os.path.join(bad_tsv, "train.tsv"), "w") as f:
    f.write("sentence\tlabel\na fine row\t1\none\ttoo\tmany\n")
  plain_dir = os.path.join(root, "plain_dir")
  os.makedirs(plain_dir)

  data = ("tools.create_pretraining_data", f"--spm_model_file={spm_model}",
          f"--max_seq_length={SEQ}", f"--max_predictions_per_seq={PREDS}",
          "--dupe_factor=1", "--num_workers=1", "--noprogress")
  pretrain = ("tools.run_pretraining", f"--max_seq_length={SEQ}",
              f"--max_predictions_per_seq={PREDS}", "--train_batch_size=8",
              "--eval_batch_size=8", "--num_train_steps=20",
              "--num_warmup_steps=2", "--save_checkpoints_steps=10",
              "--iterations_per_loop=10", "--seed=1")
  classify = ("tools.run_classifier", "--task_name=SST-2",
              f"--spm_model_file={spm_model}", "--do_train",
              f"--max_seq_length={SEQ}", "--train_batch_size=16",
              "--train_step=10", "--warmup_step=1",
              "--save_checkpoints_steps=10", "--iterations_per_loop=5",
              "--seed=1")
  out = lambda name: os.path.join(root, name)  # noqa: E731
  return {
      "missing_corpus": (*data, f"--input_file={missing}",
                         f"--output_file={out('a.tfrecord')}",
                         "--input_file: no such file: .*missing.txt"),
      "non_utf8_corpus": (*data, f"--input_file={non_utf8}",
                          f"--output_file={out('b.tfrecord')}",
                          r"latin1.txt:2: not UTF-8 .*--skip_non_utf8_lines"),
      "data_unwritable_output": (
          *data, f"--input_file={records}",
          f"--output_file={a_file}/sub/c.tfrecord",
          "--output_file=.*a_file/sub/c.tfrecord: cannot create"),
      "pretraining_corrupt_record": (
          *pretrain, f"--input_file={records}", f"--eval_file={corrupt}",
          "--max_eval_steps=-1", f"--output_dir={out('run_corrupt')}",
          f"--albert_config_file={config_file}",
          r"--eval_file: .*corrupt.tfrecord: .*corrupted record"),
      "pretraining_bad_groups": (
          *pretrain, f"--input_file={records}", f"--output_dir={out('g')}",
          f"--albert_config_file={groups}",
          r"groups.json: num_hidden_layers \(2\) must be divisible by "
          r"num_hidden_groups \(3\)"),
      "pretraining_nan": (
          *pretrain, f"--input_file={records}", "--learning_rate=1e6",
          f"--output_dir={out('run_nan')}",
          f"--albert_config_file={config_file}",
          "training loss is nan at step 10 .*--learning_rate"),
      "glue_bad_row": (
          *classify, f"--data_dir={bad_tsv}", f"--output_dir={out('ft')}",
          f"--albert_config_file={config_file}",
          r"bad_glue/train.tsv:3: expected 2 tab-separated columns, found 3"),
      "init_savedmodel_not_a_savedmodel": (
          *classify, f"--data_dir={sst2_dir}", f"--output_dir={out('ft2')}",
          f"--albert_config_file={config_file}",
          f"--init_savedmodel={plain_dir}",
          "plain_dir is not a SavedModel"),
  }


@pytest.fixture(scope="module")
def cli_results(tmp_path_factory, pretraining_records, spm_model,
                config_file, sst2_dir):
  root = str(tmp_path_factory.mktemp("bad_cli"))
  cases = _bad_input_cases(root, pretraining_records["path"], spm_model,
                           config_file, sst2_dir)

  def run(item):
    name, (module, *args, _) = item
    result = subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT,
                            env=_env(), capture_output=True, text=True,
                            timeout=300)
    return name, result

  with concurrent.futures.ThreadPoolExecutor(2) as pool:
    results = dict(pool.map(run, cases.items()))
  return {name: (results[name], cases[name][-1], root) for name in cases}


CLI_CASES = ("missing_corpus", "non_utf8_corpus", "data_unwritable_output",
             "pretraining_corrupt_record", "pretraining_bad_groups",
             "pretraining_nan", "glue_bad_row",
             "init_savedmodel_not_a_savedmodel")


@pytest.mark.slow
@pytest.mark.parametrize("case", CLI_CASES)
def test_cli_bad_input_is_one_clear_error(cli_results, case):
  result, pattern, root = cli_results[case]
  assert "Traceback" not in result.stderr, result.stderr[-3000:]
  assert result.returncode == 1, result.stderr[-3000:]
  errors = [line for line in result.stderr.splitlines()
            if line.startswith("error:")]
  assert len(errors) == 1, result.stderr[-3000:]
  assert re.search(pattern, errors[0]), errors[0]
  if case == "pretraining_nan":
    # Stopped without saving: the last checkpoint is the good initial one.
    assert _latest_step(os.path.join(root, "run_nan")) == 0
  if case in ("missing_corpus", "non_utf8_corpus"):
    assert not [f for f in os.listdir(root)
                if f.lstrip(".").startswith(("a.tfrecord", "b.tfrecord"))]


# --- bad input, in process --------------------------------------------


def _options():
  from data_pipeline.pretraining import instance_options
  return instance_options.InstanceOptions(max_seq_length=SEQ,
                                          max_predictions_per_seq=PREDS)


def _create(corpus, output, spm_model, **kwargs):
  from data_pipeline.pretraining import writer as pretraining_writer
  return pretraining_writer.create_pretraining_data(
      corpus, output, spm_model, _options(), dupe_factor=1, num_workers=1,
      show_progress=False, **kwargs)


def test_missing_and_empty_corpus(tmp_path, spm_model):
  from data_pipeline.tokenization import sentencepiece_trainer
  missing, empty = str(tmp_path / "missing.txt"), tmp_path / "empty.txt"
  empty.write_text("")
  out = str(tmp_path / "out.tfrecord")
  with pytest.raises(UserInputError, match="no such file: .*missing.txt"):
    _create(missing, out, spm_model)
  with pytest.raises(UserInputError, match="empty corpus: .*empty.txt"):
    _create(str(empty), out, spm_model)
  for corpus in (missing, str(empty)):
    with pytest.raises(UserInputError,
                       match=os.path.basename(corpus).replace(".", r"\.")):
      sentencepiece_trainer.train_sentencepiece(
          corpus, str(tmp_path / "spm"), vocab_size=100)
  assert os.listdir(tmp_path) == ["empty.txt"]  # nothing written


def test_non_utf8_fails_by_default_and_is_skipped_and_counted_on_request(
    tmp_path, english_corpus, spm_model):
  corpus = tmp_path / "mixed.txt"
  with open(english_corpus, "rb") as f:
    good = f.read()
  corpus.write_bytes(b"Caf\xe9 au lait.\n" + good)
  out = str(tmp_path / "out.tfrecord")
  with pytest.raises(UserInputError,
                     match=r"mixed.txt:1: not UTF-8 .*--skip_non_utf8_lines"):
    _create(str(corpus), out, spm_model)
  assert sorted(os.listdir(tmp_path)) == ["mixed.txt"]
  stats = _create(str(corpus), out, spm_model, skip_non_utf8_lines=True)
  assert stats["skipped_lines"] == 1 and stats["instances"] > 0


def test_spm_vocabulary_larger_than_config_is_refused(tmp_path, spm_model,
                                                      pretraining_records):
  from albert_tf.training.finetuning import params as finetuning_params
  from data_pipeline.pretraining import reader as pretraining_input
  from data_pipeline.tokenization import sentencepiece_tokenizer as tokenization
  tokenizer = tokenization.SentencePieceTokenizer(spm_model)
  small = AlbertConfig(vocab_size=1000)
  with pytest.raises(UserInputError,
                     match=r"has 2000 pieces, more than the model's "
                     r"vocab_size \(1000\)"):
    finetuning_params.check_vocab_size(small, tokenizer, spm_model)
  # Fewer pieces than vocab_size is allowed (padded vocabularies).
  finetuning_params.check_vocab_size(AlbertConfig(vocab_size=2048),
                                     tokenizer, spm_model)
  # Pretraining: records are checked at start (first record of each file)...
  with pytest.raises(UserInputError,
                     match=r"train.tfrecord: token id \d+ is not below the "
                     r"model's vocab_size=100"):
    pretraining_input.validate_tfrecord_file(
        pretraining_records["path"], SEQ, PREDS, vocab_size=100)


def _pretraining_params(tmp_path, records, config_file, **changes):
  from albert_tf.training.pretraining import driver as lib
  params = lib.PretrainingParams.from_flat(
      input_file=records, output_dir=str(tmp_path / "run"),
      albert_config_file=config_file, train_batch_size=8, eval_batch_size=8,
      max_seq_length=SEQ, max_predictions_per_seq=PREDS, learning_rate=1e-3,
      num_train_steps=5, num_warmup_steps=1, save_checkpoints_steps=5,
      iterations_per_loop=5, seed=1, shuffle_buffer_size=10000)
  return settings_fields.replace(params, **changes)


@pytest.mark.slow
def test_pretraining_out_of_vocabulary_ids_found_while_training(
    tmp_path, pretraining_records):
  # ...and ids past the first record are caught while training.
  import tensorflow as tf

  from albert_tf.training.pretraining import driver as lib
  # A vocabulary that holds the first record's ids but not all the others.
  largest = []
  for record in tf.data.TFRecordDataset(pretraining_records["path"]):
    example = tf.train.Example.FromString(record.numpy())
    largest.append(max(max(example.features.feature[k].int64_list.value)
                       for k in ("input_ids", "masked_lm_ids")))
  vocab_size = largest[0] + 1
  assert max(largest) >= vocab_size
  config_file = str(tmp_path / "small_vocab.json")
  AlbertConfig(vocab_size=vocab_size, embedding_size=16, hidden_size=32,
               num_hidden_layers=2, num_attention_heads=2,
               intermediate_size=64,
               max_position_embeddings=SEQ).to_json_file(config_file)
  with pytest.raises(UserInputError,
                     match=rf"outside the model's vocabulary \(vocab_size="
                     rf"{vocab_size} in .*small_vocab.json\): indices.* is not "
                     rf"in \[0, {vocab_size}\)"):
    lib.run_pretraining(_pretraining_params(
        tmp_path, pretraining_records["path"], config_file))


def test_truncated_file_past_first_record_names_file_and_flag(
    tmp_path, pretraining_records, config_file):
  from albert_tf.training.pretraining import driver as lib
  with open(pretraining_records["path"], "rb") as f:
    data = f.read()
  truncated = tmp_path / "truncated.tfrecord"
  truncated.write_bytes(data[:len(data) // 2])
  with pytest.raises(UserInputError,
                     match=r"--input_file: .*truncated.tfrecord: .*truncated "
                     r"record.*last checkpoint in --output_dir is intact"):
    lib.run_pretraining(_pretraining_params(tmp_path, str(truncated),
                                            config_file))
  assert _latest_step(str(tmp_path / "run")) == 0


def test_bad_tfrecords_name_the_file(tmp_path, pretraining_records):
  from data_pipeline.pretraining import reader as pretraining_input
  records = pretraining_records["path"]
  with pytest.raises(UserInputError,
                     match=r"train.tfrecord: not a pretraining TFRecord file "
                     r"with max_seq_length=64"):
    pretraining_input.validate_tfrecord_file(records, 64, PREDS)
  first = next(iter(tf.data.TFRecordDataset(records))).numpy()
  example = tf.train.Example.FromString(first)
  del example.features.feature["masked_lm_ids"]
  missing = str(tmp_path / "missing_feature.tfrecord")
  with tf.io.TFRecordWriter(missing) as writer:
    writer.write(example.SerializeToString())
  with pytest.raises(UserInputError,
                     match=r"missing_feature.tfrecord: .*masked_lm_ids"):
    pretraining_input.pretraining_dataset(missing, 8, SEQ, PREDS)
  corrupt = tmp_path / "corrupt_first.tfrecord"
  corrupt.write_bytes(first[:10] + b"\x00" * 40)
  with pytest.raises(UserInputError, match="corrupt_first.tfrecord"):
    pretraining_input.pretraining_dataset(str(corrupt), 8, SEQ, PREDS)
  with open(records, "rb") as f:
    data = bytearray(f.read())
  data[len(data) // 2] ^= 0xFF
  deep = tmp_path / "corrupt_inside.tfrecord"
  deep.write_bytes(bytes(data))
  pretraining_input.validate_tfrecord_file(str(deep), SEQ, PREDS)  # 1st ok
  with pytest.raises(UserInputError,
                     match="corrupt_inside.tfrecord: .*corrupted record"):
    pretraining_input.validate_tfrecord_file(str(deep), SEQ, PREDS,
                                             max_records=None)


def test_sequence_length_and_config_errors(tmp_path, pretraining_records,
                                           config_file):
  from albert_tf.training.finetuning import params as finetuning_params
  from albert_tf.training.finetuning import runner as finetuning_runner
  from albert_tf.training.pretraining import driver as lib
  with pytest.raises(UserInputError,
                     match=r"--max_seq_length=64 exceeds "
                     r"max_position_embeddings=32 in .*albert_config.json"):
    lib.build_pretraining(_pretraining_params(
        tmp_path, pretraining_records["path"], config_file,
        max_seq_length=64))
  params = finetuning_params.FinetuningParams.from_flat(
      output_dir=str(tmp_path / "ft"), albert_config_file=config_file,
      do_train=True, max_seq_length=64)
  with pytest.raises(UserInputError,
                     match=r"--max_seq_length=64 exceeds "
                     r"max_position_embeddings=32"):
    finetuning_runner.FinetuningRunner(params, None)
  groups = tmp_path / "groups.json"
  with open(config_file) as f:
    groups.write_text(json.dumps(dict(json.load(f), num_hidden_layers=3,
                                      num_hidden_groups=2)))
  with pytest.raises(UserInputError,
                     match=r"groups.json: num_hidden_layers \(3\) must be "
                     r"divisible by num_hidden_groups \(2\)"):
    AlbertConfig.from_json_file(str(groups))
  assert not os.path.exists(tmp_path / "run")
  assert not os.path.exists(tmp_path / "ft")


def _tiny_checkpoint(tmp_path, hidden_size=32):
  from albert_tf.models.albert_pretrainer import AlbertPretrainer
  from albert_tf.networks.albert_encoder import AlbertEncoder
  config = AlbertConfig(vocab_size=2000, embedding_size=16,
                        hidden_size=hidden_size, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64,
                        max_position_embeddings=SEQ)
  model = AlbertPretrainer(AlbertEncoder(config))
  prefix = tf.train.Checkpoint(model=model).save(
      str(tmp_path / f"h{hidden_size}" / "ckpt"))
  return config, prefix


def test_checkpoint_of_another_architecture_lists_names_and_shapes(tmp_path):
  from albert_tf.models.albert_pretrainer import AlbertPretrainer
  from albert_tf.networks.albert_encoder import AlbertEncoder
  from albert_tf.training.warm_start import warm_start
  _, prefix = _tiny_checkpoint(tmp_path, hidden_size=32)
  config, _ = _tiny_checkpoint(tmp_path, hidden_size=48)
  model = AlbertPretrainer(AlbertEncoder(config))
  with pytest.raises(UserInputError,
                     match=r"does not fit the model:\n  \d+ shape "
                     r"mismatch\(es\):\n(    .*\n)*    .*pooler/kernel.* "
                     r"is \[32, 32\], the model needs \[48, 48\]\n"):
    warm_start(model, prefix)


def test_unwritable_output_dirs(tmp_path, english_corpus, spm_model,
                                pretraining_records, config_file):
  from albert_tf import exports
  from albert_tf.training.finetuning import params as finetuning_params
  from albert_tf.training.finetuning import runner as finetuning_runner
  from albert_tf.training.pretraining import driver as lib
  a_file = tmp_path / "a_file"
  a_file.write_text("in the way")
  under = str(a_file / "out")
  with pytest.raises(UserInputError, match=f"--output_dir={under} is not "
                     "writable"):
    lib.build_pretraining(_pretraining_params(
        tmp_path, pretraining_records["path"], config_file,
        output_dir=under))
  with pytest.raises(UserInputError, match=f"--output_dir={under} is not "
                     "writable"):
    finetuning_runner.FinetuningRunner(finetuning_params.FinetuningParams.from_flat(
        output_dir=under, albert_config_file=config_file, do_train=True,
        max_seq_length=SEQ), None)
  with pytest.raises(UserInputError,
                     match=f"--output_file={under}/x.tfrecord: cannot "
                     "create its directory"):
    _create(english_corpus, under + "/x.tfrecord", spm_model)
  config, prefix = _tiny_checkpoint(tmp_path)
  with pytest.raises(UserInputError,
                     match=f"--export_dir={under}/export is not writable"):
    exports.export_savedmodel(config, prefix, spm_model, under + "/export",
                              seq_length=16)
  assert a_file.read_text() == "in the way"


def test_glue_squad_race_files(tmp_path):
  from data_pipeline.tasks.glue import examples as glue_examples
  from data_pipeline.tasks.race import examples as race_examples
  from data_pipeline.tasks.squad import examples as squad_examples
  glue_dir = tmp_path / "SST-2"
  glue_dir.mkdir()
  (glue_dir / "train.tsv").write_text(
      "sentence\tlabel\ngood\t1\nbad\t0\textra column\n")
  with pytest.raises(UserInputError,
                     match=r"SST-2/train.tsv:3: expected 2 tab-separated "
                     r"columns, found 3"):
    glue_examples.read_examples(glue_examples.get_task("SST-2"),
                                str(glue_dir), "train")

  no_data = tmp_path / "no_data.json"
  no_data.write_text(json.dumps({"version": "1.1"}))
  with pytest.raises(UserInputError, match=r"no_data.json.*'data' list"):
    squad_examples.read_squad_examples(str(no_data), is_training=True)
  outside = tmp_path / "outside.json"
  outside.write_text(json.dumps({"version": "1.1", "data": [{
      "title": "t", "paragraphs": [{
          "context": "The cat sat on the mat.",
          "qas": [{"id": "q7", "question": "Who sat?",
                   "answers": [{"text": "dog", "answer_start": 4}]}]}]}]}))
  with pytest.raises(UserInputError,
                     match=r"outside.json.*question q7.*not in the context"):
    squad_examples.read_squad_examples(str(outside), is_training=True)

  level = tmp_path / "RACE" / "dev" / "high"
  level.mkdir(parents=True)
  (level / "1.txt").write_text(json.dumps(
      {"article": "a", "questions": ["q"], "options": [["a", "b", "c", "d"]]}))
  with pytest.raises(UserInputError, match=r"high/1.txt.*answers"):
    race_examples.read_race_examples(str(tmp_path / "RACE"), "dev")


def test_export_path_that_is_not_a_savedmodel(tmp_path):
  from albert_tf import exports
  (tmp_path / "plain").mkdir()
  for load in (exports.load_saved_model, exports.hub_layer):
    with pytest.raises(UserInputError,
                       match=r"plain is not a SavedModel \(no saved_model.pb"
                       r"\)"):
      load(str(tmp_path / "plain"))
