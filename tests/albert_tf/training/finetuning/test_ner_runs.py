"""run_ner runs: resumed equals uninterrupted (rerun after a checkpoint, and
killed with SIGKILL through the CLI), warm starts, and every bad input
through `python -m tools.run_ner`: one error line naming path:line, exit
status 1, nothing written."""

import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.config import AlbertConfig
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.networks.albert_encoder import AlbertEncoder
from albert_tf.training.finetuning import runner as finetuning_runner
from albert_tf.training.finetuning.ner_settings import NerOptions
from albert_tf.training.finetuning.params import FinetuningParams
from albert_tf.training.finetuning.params import prepare
from albert_tf.training.finetuning.tasks import ner as ner_finetuning
from data_pipeline.tasks.label_list import LabelList
from tests.scripts import ner_data

ROOT = os.path.abspath(os.path.join(__file__, "../../../../.."))
SEQ = 32


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
  root = tmp_path_factory.mktemp("ner_runs")
  config = str(root / "albert_config.json")
  AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
               num_hidden_layers=2, num_attention_heads=2,
               intermediate_size=64, max_position_embeddings=SEQ,
               hidden_dropout_prob=0.1,
               attention_probs_dropout_prob=0.1).to_json_file(config)
  train = ner_data.write_conll(root / "train.txt",
                               ner_data.english_sentences(120, 0))
  dev = ner_data.write_conll(root / "dev.txt",
                             ner_data.english_sentences(20, 1))
  return dict(root=root, config=config, train=train, dev=dev)


def _params(setup, spm_model, name, **kwargs):
  values = dict(output_dir=str(setup["root"] / name),
                spm_model_file=spm_model, albert_config_file=setup["config"],
                do_train=True, max_seq_length=SEQ, train_batch_size=16,
                learning_rate=1e-3, train_step=30, warmup_step=3,
                save_checkpoints_steps=10, keep_checkpoint_max=5,
                iterations_per_loop=5, length_buckets="16,32", seed=3)
  values.update(kwargs)
  return FinetuningParams.from_flat(**values)


def _weights(output_dir):
  reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(output_dir))
  types = reader.get_variable_to_dtype_map()
  return {name: reader.get_tensor(name) for name in types
          if name.startswith("model/") and types[name].is_floating}


def _assert_same_weights(a_dir, b_dir):
  a, b = _weights(a_dir), _weights(b_dir)
  assert sorted(a) == sorted(b) and len(a) > 10
  assert max(float(np.max(np.abs(a[k] - b[k]))) for k in a) <= 1e-5


@pytest.mark.slow
def test_resumed_run_ends_with_the_uninterrupted_weights(setup, spm_model):
  """What a run killed after ckpt-10 leaves, rerun: the same weights at
  step 30 as the run that went through (dropout on, two length buckets:
  the data stream and the RNG state resume exactly)."""
  options = NerOptions(train_file=setup["train"], doc_stride=16)
  whole = _params(setup, spm_model, "whole")
  ner_finetuning.run_ner(whole, options)
  resumed = _params(setup, spm_model, "resumed")
  out = resumed.runtime.output_dir
  shutil.copytree(whole.runtime.output_dir, out)
  for name in os.listdir(out):
    if name.startswith(("ckpt-20", "ckpt-30")):
      os.remove(os.path.join(out, name))
  tf.compat.v1.train.update_checkpoint_state(out, os.path.join(out, "ckpt-10"))
  assert tf.train.latest_checkpoint(out).endswith("ckpt-10")
  ner_finetuning.run_ner(resumed, options)
  assert tf.train.latest_checkpoint(out).endswith("ckpt-30")
  _assert_same_weights(whole.runtime.output_dir, out)


@pytest.mark.slow  # make test: test_finetuning's
def test_warm_start_from_a_pretraining_checkpoint(setup, spm_model):
  config = AlbertConfig.from_json_file(setup["config"])
  pretrainer = AlbertPretrainer(AlbertEncoder(config))
  prefix = tf.train.Checkpoint(model=pretrainer).save(
      str(setup["root"] / "pretrained" / "ckpt"))
  params = _params(setup, spm_model, "warm", init_checkpoint=prefix)
  labels = LabelList("token_classification", ("B-PER", "I-PER", "O"),
                     "IOB2")
  task = ner_finetuning.build_ner_task(params, NerOptions(), labels, None,
                                       None)
  runner = finetuning_runner.FinetuningRunner(prepare(params), task)
  assert "loaded" in runner.warm_start_summary.lower()
  ours = {v.name: v.numpy() for v in runner.model.encoder.variables}
  theirs = {v.name: v.numpy() for v in pretrainer.encoder.variables}
  assert ours.keys() == theirs.keys()
  for name, value in theirs.items():
    np.testing.assert_array_equal(ours[name], value, err_msg=name)


@pytest.mark.slow
def test_an_exported_encoder_fine_tunes(setup, spm_model):
  """--init_savedmodel: the exported encoder as a trainable hub layer."""
  from albert_tf.exports import export_savedmodel
  config = AlbertConfig.from_json_file(setup["config"])
  prefix = tf.train.Checkpoint(
      model=AlbertPretrainer(AlbertEncoder(config))).save(
          str(setup["root"] / "to_export" / "ckpt"))
  export = str(setup["root"] / "export")
  export_savedmodel(config, prefix, spm_model, export, seq_length=SEQ)
  params = _params(setup, spm_model, "from_savedmodel", albert_config_file="",
                   init_savedmodel=os.path.join(export, "encoder"),
                   train_step=4, save_checkpoints_steps=4, do_eval=True,
                   length_buckets="none")
  results = ner_finetuning.run_ner(params, NerOptions(
      train_file=setup["train"], dev_file=setup["dev"], doc_stride=16))
  assert results["step"] == 4 and 0 <= results["f1"] <= 1


# --- the command line ---------------------------------------------------------


def _env():
  return dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")


def _command(setup, spm_model, output_dir, *args):
  return [sys.executable, "-m", "tools.run_ner",
          f"--spm_model_file={spm_model}",
          f"--albert_config_file={setup['config']}",
          f"--output_dir={output_dir}", f"--max_seq_length={SEQ}",
          "--train_batch_size=16", "--learning_rate=1e-3", "--seed=3",
          "--doc_stride=16", "--iterations_per_loop=5", *args]


def _bad_inputs(root):
  """name -> (flags, path:line the error names, message regex)."""
  def write(name, text):
    path = os.path.join(root, name)
    with open(path, "w", encoding="utf-8") as f:
      f.write(text)
    return path

  good = write("good.txt", "Anna B-PER\nsings O\n\n")
  cluener = {"text": "张伟在北京", "label": {"name": {"张伟": [[0, 1]]}}}

  def jsonl(name, *records):
    return write(name, "\n".join(json.dumps(r, ensure_ascii=False)
                                 for r in records) + "\n")

  cases = {
      "iobes_break": ([write("iobes.txt", "Anna S-PER\n\nx O\ny I-PER\n"),
                       "--tag_scheme=IOBES"], 4,
                      "I-PER after O breaks IOBES"),
      "one_column": ([write("one.txt", "Anna B-PER\nlonely\n")], 2,
                     "one column"),
      "lengths": ([jsonl("len.jsonl", {"tokens": ["a", "b"],
                                       "tags": ["O"]})], 1,
                  "2 tokens but 1 tags"),
      "cluener_outside": ([jsonl("out.json", dict(
          cluener, label={"address": {"北京": [[3, 5]]}}))], 1,
                          r"span \[3, 5\] is outside the text"),
      "cluener_mismatch": ([jsonl("mis.json", dict(
          cluener, label={"address": {"上海": [[3, 4]]}}))], 1,
                           "is '北京' in the text, not '上海'"),
      "empty": ([write("empty.txt", "")], None, "no sentences"),
      "dev_unseen_tag": ([good, "--do_eval",
                          f"--dev_file={write('dev.txt', 'Paris B-LOC')}"],
                         1, "tag 'B-LOC' is not among the training labels"),
  }
  return {name: ([f"--train_file={flags[0]}", *flags[1:]],
                 flags[0] if name != "dev_unseen_tag" else
                 os.path.join(root, "dev.txt"), line, message)
          for name, (flags, line, message) in cases.items()}


BAD_INPUTS = ("iobes_break", "one_column", "lengths", "cluener_outside",
              "cluener_mismatch", "empty", "dev_unseen_tag")


@pytest.fixture(scope="module")
def bad_input_runs(setup, spm_model):
  root = str(setup["root"] / "bad")
  os.makedirs(root)
  cases = _bad_inputs(root)

  def run(name):
    flags = cases[name][0]
    out = os.path.join(root, f"out_{name}")
    result = subprocess.run(
        _command(setup, spm_model, out, "--do_train", "--train_step=2",
                 f"--export_dir={out}_export", *flags),
        cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=300)
    return name, (result, out)

  with concurrent.futures.ThreadPoolExecutor(2) as pool:
    results = dict(pool.map(run, BAD_INPUTS))
  return {name: (*results[name], *cases[name][1:]) for name in BAD_INPUTS}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input_is_one_error_line_and_nothing_written(bad_input_runs,
                                                         case):
  result, out, path, line, message = bad_input_runs[case]
  assert "Traceback" not in result.stderr, result.stderr[-3000:]
  assert result.returncode == 1, result.stderr[-3000:]
  errors = [x for x in result.stderr.splitlines() if x.startswith("error:")]
  assert len(errors) == 1, result.stderr[-3000:]
  where = re.escape(f"{path}:{line}:" if line else f"{path}:")
  assert re.search(f"^error: {where} .*{message}", errors[0]), errors[0]
  assert not os.path.exists(out) and not os.path.exists(out + "_export")


def _latest_step(output_dir):
  latest = tf.train.latest_checkpoint(output_dir)
  return -1 if latest is None else int(latest.rsplit("-", 1)[1])


@pytest.mark.slow
def test_killed_with_sigkill_and_rerun_ends_with_the_uninterrupted_weights(
    setup, spm_model):
  """The CLI with a bad record skipped (--skip_bad_records, counted in the
  log), killed right after ckpt-10 and rerun with the same command, ends
  with the weights of the run that was never killed."""
  train = setup["root"] / "train_with_a_bad_record.txt"
  with open(setup["train"], encoding="utf-8") as f:
    train.write_text(f.read() + "\n\nlonely\n", encoding="utf-8")

  def command(name):
    return _command(setup, spm_model, str(setup["root"] / name),
                    f"--train_file={train}", "--do_train",
                    "--skip_bad_records", "--train_step=40",
                    "--save_checkpoints_steps=10", "--length_buckets=16,32")

  reference = subprocess.Popen(command("cli_reference"), cwd=ROOT, env=_env(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
  killed_dir = str(setup["root"] / "cli_killed")
  run = subprocess.Popen(command("cli_killed"), cwd=ROOT, env=_env(),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  deadline = time.time() + 300
  while _latest_step(killed_dir) < 10:
    assert run.poll() is None and time.time() < deadline
    time.sleep(0.01)
  run.send_signal(signal.SIGKILL)
  run.wait(timeout=60)
  assert 10 <= _latest_step(killed_dir) < 40
  rerun = subprocess.run(command("cli_killed"), cwd=ROOT, env=_env(),
                         capture_output=True, text=True, timeout=300)
  assert rerun.returncode == 0, rerun.stderr[-3000:]
  _, log = reference.communicate(timeout=300)
  assert reference.returncode == 0, log[-3000:]
  assert "skipped 1 bad records" in log and "run_ner recipe" in log
  assert _latest_step(killed_dir) == 40
  _assert_same_weights(str(setup["root"] / "cli_reference"), killed_dir)

