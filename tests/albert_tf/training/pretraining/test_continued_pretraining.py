"""Continued pretraining (--init_checkpoint): every head the checkpoint has
is restored and the run's step-0 evaluation equals the source's, from our
checkpoint, its TF1 conversion and its Hugging Face conversion; a missing
head is one warning; --restart_schedule; data that differs from the
source's is one warning; an interrupted continued run resumes exactly."""

import dataclasses
import json
import logging
import math
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from safetensors.numpy import load_file
from safetensors.numpy import save_file
import tensorflow as tf

from albert_common import settings_fields
from albert_tf.checkpoints import converter
from albert_tf.config import AlbertConfig
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.networks.albert_encoder import AlbertEncoder
from albert_tf.training.pretraining import continuation
from albert_tf.training.pretraining import driver as lib

ROOT = os.path.abspath(os.path.join(__file__, "../../../../.."))
CONFIG = AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
                      num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=32)


def _eval_scalars(output_dir):
  """{step: {tag: value}} of the run's TensorBoard eval/ summaries."""
  scalars = {}
  event_dir = os.path.join(output_dir, "eval")
  for name in sorted(tf.io.gfile.listdir(event_dir)):
    for record in tf.data.TFRecordDataset(os.path.join(event_dir, name)):
      event = tf.compat.v1.Event.FromString(record.numpy())
      for value in event.summary.value:
        scalars.setdefault(event.step, {})[value.tag] = float(
            tf.make_ndarray(value.tensor))
  return scalars


@pytest.fixture(scope="module")
def source(tmp_path_factory, pretraining_records):
  """A 20-step source run evaluated at its end on the records (its
  eval_results.json), and its params."""
  folder = str(tmp_path_factory.mktemp("source"))
  config_path = os.path.join(folder, "albert_config.json")
  CONFIG.to_json_file(config_path)
  params = lib.PretrainingParams.from_flat(
      input_file=pretraining_records["path"],
      eval_file=pretraining_records["path"],
      output_dir=os.path.join(folder, "run"), albert_config_file=config_path,
      train_batch_size=16, eval_batch_size=16, max_seq_length=32,
      max_predictions_per_seq=5, learning_rate=5e-2, num_train_steps=20,
      num_warmup_steps=4, save_checkpoints_steps=10, iterations_per_loop=10,
      max_eval_steps=4, seed=3, shuffle_buffer_size=100)
  results = lib.run_pretraining(params)
  return params, results


def _convert(source_params, layout, folder):
  """The source's latest checkpoint in `layout`: (init_checkpoint, names
  the written file holds)."""
  prefix = tf.train.latest_checkpoint(source_params.runtime.output_dir)
  if layout == "ours":
    return source_params.runtime.output_dir, None
  if layout == "official":
    target = os.path.join(folder, "tf1", "model.ckpt-20")
    converter.convert_checkpoint(CONFIG, prefix, target, "official")
    return target, {name for name, _ in tf.train.list_variables(target)}
  target = os.path.join(folder, "hf")
  converter.convert_checkpoint(CONFIG, prefix, target, "huggingface")
  names = set(load_file(os.path.join(target, "model.safetensors")))
  if layout == "huggingface_mlm_only":  # as AlbertForMaskedLM saves it
    tensors = load_file(os.path.join(target, "model.safetensors"))
    target = os.path.join(folder, "hf_mlm")
    os.makedirs(target)
    save_file({k: v for k, v in tensors.items()
               if not k.startswith("sop_classifier.")},
              os.path.join(target, "model.safetensors"))
  return target, names


HEAD_NAMES = {
    "official": {"cls/predictions/transform/dense/kernel",
                 "cls/predictions/transform/dense/bias",
                 "cls/predictions/transform/LayerNorm/gamma",
                 "cls/predictions/transform/LayerNorm/beta",
                 "cls/predictions/output_bias",
                 "cls/seq_relationship/output_weights",
                 "cls/seq_relationship/output_bias"},
    "huggingface": {"predictions.dense.weight", "predictions.dense.bias",
                    "predictions.LayerNorm.weight",
                    "predictions.LayerNorm.bias", "predictions.bias",
                    "sop_classifier.classifier.weight",
                    "sop_classifier.classifier.bias"},
}


@pytest.mark.parametrize("layout", ["ours", "official", "huggingface",
                                    "huggingface_mlm_only"])
def test_step_zero_equals_the_source(source, layout, tmp_path, caplog):
  """The continued run's evaluation before any update (logged, in eval/ at
  its first step) equals the source's own: losses to 1e-5, accuracies
  equal. Without the SOP classifier (HF AlbertForMaskedLM), one warning
  says so, MLM still equals the source and SOP starts at about ln 2."""
  source_params, source_results = source
  init, names = _convert(source_params, layout, str(tmp_path))
  if names is not None:  # every head variable is written by the converter
    assert HEAD_NAMES[layout.split("_mlm")[0]] <= names
  first = 20 if layout == "ours" else 0  # our run's optimizer goes on
  run = settings_fields.replace(
      source_params, output_dir=str(tmp_path / "continued"),
      init_checkpoint=init, num_train_steps=first + 1, num_warmup_steps=0,
      save_checkpoints_steps=1, iterations_per_loop=1)
  caplog.set_level(logging.INFO, logger="absl")
  lib.run_pretraining(run)
  restored = [r.getMessage() for r in caplog.records
              if "--init_checkpoint=" in r.getMessage()]
  heads = "MLM head" if layout == "huggingface_mlm_only" else (
      "MLM head, SOP head")
  assert len([m for m in restored if ": restored encoder, " in m]) == 1
  assert f"restored encoder, {heads};" in restored[0], restored
  warnings = [r.getMessage() for r in caplog.records
              if r.levelno == logging.WARNING and "init_checkpoint" in
              r.getMessage()]
  start = _eval_scalars(run.runtime.output_dir)[first]
  if layout == "huggingface_mlm_only":
    assert len(warnings) == 1 and "has no SOP head" in warnings[0]
    assert "SOP loss at step 0 is about ln 2 = 0.69" in warnings[0]
    assert abs(start["sop_loss"] - math.log(2)) < 0.05, start
  else:
    assert not warnings, warnings
    assert start["sop_loss"] == pytest.approx(source_results["sop_loss"],
                                              abs=1e-5)
    assert start["sop_accuracy"] == source_results["sop_accuracy"]
  assert start["mlm_loss"] == pytest.approx(source_results["mlm_loss"],
                                            abs=1e-5)
  assert start["mlm_accuracy"] == source_results["mlm_accuracy"]
  # Logged like every evaluation, before the first update.
  logged = [r.getMessage() for r in caplog.records
            if "eval | step:" in r.getMessage() and "| output:" in
            r.getMessage()]
  assert f"eval | step: {first:6d} | " in logged[0], logged
  with open(os.path.join(run.runtime.output_dir,
                         continuation.CONTINUED_FROM_FILE)) as f:
    assert json.load(f)["first_step"] == first


def test_schedule_goes_on_or_restarts(source, tmp_path):
  """From our run: its step and LAMB slots; --restart_schedule: step 0,
  the warm-up from 0, fresh slots. A source already at --num_train_steps
  is one line, nothing written."""
  source_params, _ = source
  saved = tf.train.load_checkpoint(
      tf.train.latest_checkpoint(source_params.runtime.output_dir))
  slot_key = [k for k in saved.get_variable_to_shape_map()
              if "transform/kernel/.OPTIMIZER_SLOT/optimizer/m/" in k]
  assert len(slot_key) == 1
  for restart, step in ((False, 20), (True, 0)):
    run = settings_fields.replace(
        source_params, output_dir=str(tmp_path / f"restart_{restart}"),
        init_checkpoint=source_params.runtime.output_dir,
        restart_schedule=restart, num_train_steps=40)
    setup = lib.build_pretraining(run)
    assert int(setup.optimizer.iterations.numpy()) == step
    kernel = setup.model.get_layer("masked_lm").transform.kernel
    with setup.strategy.scope():
      setup.optimizer._create_all_weights(setup.model.trainable_variables)
    slot = setup.optimizer.get_slot(kernel, "m").numpy()
    if restart:
      assert not slot.any()
      # The warm-up from its start: below the rate it climbs to.
      schedule = setup.optimizer.learning_rate
      assert setup.runner.learning_rate() == pytest.approx(float(schedule(0)))
      assert float(schedule(0)) < 0.5 * float(schedule(4))
    else:
      np.testing.assert_array_equal(slot, saved.get_tensor(slot_key[0]))
      assert setup.runner.learning_rate() == pytest.approx(
          5e-2 * (1 - 20 / 40), rel=1e-6)
  with pytest.raises(lib.UserInputError,
                     match=r"is at step 20 .*--num_train_steps=20 .*leaves "
                     r"nothing to train.*--restart_schedule"):
    lib.build_pretraining(settings_fields.replace(
        source_params, output_dir=str(tmp_path / "too_short"),
        init_checkpoint=source_params.runtime.output_dir))
  assert not os.path.exists(tmp_path / "too_short")


def test_data_that_differs_from_the_source_is_one_warning(
    source, tmp_path, caplog, pretraining_records):
  """Records written with another mask ratio and n-gram length (their stats
  JSON says so) and another sequence length: one warning naming each."""
  source_params, _ = source
  with open(pretraining_records["path"] + ".stats.json") as f:
    stats = json.load(f)
  stats["settings"]["options"].update(masked_lm_prob=0.2, ngram=1)
  records = str(tmp_path / "domain.tfrecord")
  tf.io.gfile.copy(pretraining_records["path"], records)
  with open(records + ".stats.json", "w") as f:
    json.dump(stats, f)
  config = AlbertConfig.from_json_file(source_params.albert_config_file)
  caplog.set_level(logging.INFO, logger="absl")
  same = settings_fields.replace(
      source_params, output_dir=str(tmp_path / "same"), num_train_steps=40,
      init_checkpoint=source_params.runtime.output_dir)
  continuation.read_source(same, config)
  assert not [r for r in caplog.records if r.levelno == logging.WARNING]
  continuation.read_source(settings_fields.replace(
      same, input_file=records, max_seq_length=24), config)
  warnings = [r.getMessage() for r in caplog.records
              if r.levelno == logging.WARNING]
  assert len(warnings) == 1, warnings
  assert ("max_seq_length 32 -> 24, masked_lm_prob 0.15 -> 0.2, "
          "ngram 3 -> 1") in warnings[0]


def _latest_step(output_dir):
  latest = tf.train.latest_checkpoint(output_dir)
  return -1 if latest is None else int(latest.rsplit("-", 1)[1])


def _weights(output_dir):
  reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(output_dir))
  dtypes = reader.get_variable_to_dtype_map()
  return {k: reader.get_tensor(k) for k in dtypes
          if k.startswith("model/") and dtypes[k].is_floating}


@pytest.mark.slow
def test_sigkill_during_a_continued_run_then_rerun_gives_the_same_weights(
    source, tmp_path):
  """Continued from the source's step 20 to 50 with dropout: killed with
  SIGKILL after ckpt-30, rerun; the weights equal an uninterrupted
  continued run's (the data stream resumes at the run's own step 10)."""
  source_params, _ = source
  config_path = str(tmp_path / "dropout.json")
  dataclasses.replace(CONFIG, hidden_dropout_prob=0.1,
                      attention_probs_dropout_prob=0.1).to_json_file(
                          config_path)

  def start(output_dir):
    return subprocess.Popen(
        [sys.executable, "-m", "tools.run_pretraining",
         f"--input_file={source_params.input_file}",
         f"--init_checkpoint={source_params.runtime.output_dir}",
         f"--output_dir={output_dir}", f"--albert_config_file={config_path}",
         "--train_batch_size=16", "--max_seq_length=32",
         "--max_predictions_per_seq=5", "--learning_rate=1e-2",
         "--num_train_steps=50", "--num_warmup_steps=4",
         "--save_checkpoints_steps=10", "--iterations_per_loop=5",
         "--seed=11", "--shuffle_buffer_size=100"],
        cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

  reference, killed = str(tmp_path / "reference"), str(tmp_path / "killed")
  uninterrupted, run = start(reference), start(killed)
  deadline = time.time() + 300
  while _latest_step(killed) < 30:
    assert run.poll() is None, run.stderr.read()[-3000:]
    assert time.time() < deadline, "ckpt-30 never written"
    time.sleep(0.01)
  run.send_signal(signal.SIGKILL)
  run.communicate(timeout=60)
  assert 30 <= _latest_step(killed) < 50
  rerun = start(killed)
  for process in (rerun, uninterrupted):
    _, err = process.communicate(timeout=600)
    assert process.returncode == 0, err[-3000:]
  a, b = _weights(reference), _weights(killed)
  assert sorted(a) == sorted(b) and len(a) > 10
  worst = max(float(np.max(np.abs(a[k] - b[k]))) for k in a)
  assert worst <= 1e-5, worst


def test_optimizer_slots_that_do_not_restore_are_one_line(source, tmp_path):
  """The source's LAMB slots are checked, not assumed. A checkpoint of our
  layout with the source's weights and step but no slots (a reader that
  expects partial restores would start from zero slots and log that they
  were restored) is refused in one line, nothing trained. Under
  --dtype=float16 (LAMB inside a LossScaleOptimizer) the source's slots do
  restore, and the check passes."""
  source_params, _ = source
  prefix = tf.train.latest_checkpoint(source_params.runtime.output_dir)
  model = AlbertPretrainer(AlbertEncoder(CONFIG))
  tf.train.Checkpoint(model=model).read(prefix).expect_partial()
  step = tf.train.Checkpoint(iter=tf.Variable(20, dtype=tf.int64))
  slotless = tf.train.Checkpoint(model=model, optimizer=step).write(
      str(tmp_path / "slotless" / "ckpt-20"))
  run = settings_fields.replace(
      source_params, output_dir=str(tmp_path / "from_slotless"),
      init_checkpoint=slotless, num_train_steps=40)
  with pytest.raises(lib.UserInputError) as info:
    lib.build_pretraining(run)
  message = str(info.value)
  assert "\n" not in message
  assert message.startswith(
      f"--init_checkpoint={slotless}: {slotless} does not fit this run's "
      "LAMB (--optimizer, --dtype): "), message
  count = 2 * len(model.trainable_variables)  # m and v
  assert re.search(rf": {count} of its optimizer slots did not restore "
                   r"\(first: model/.+/(m|v)\); ", message), message
  assert message.endswith("pass --restart_schedule to take its weights "
                          "only, with fresh slots and step 0"), message
  assert not tf.train.latest_checkpoint(run.runtime.output_dir)

  setup = lib.build_pretraining(settings_fields.replace(
      source_params, output_dir=str(tmp_path / "float16"),
      init_checkpoint=source_params.runtime.output_dir, num_train_steps=40,
      dtype="float16"))
  assert int(setup.optimizer.iterations.numpy()) == 20
  saved = tf.train.load_checkpoint(prefix)
  kernel = setup.model.get_layer("masked_lm").transform.kernel
  key = [k for k in saved.get_variable_to_shape_map()
         if "transform/kernel/.OPTIMIZER_SLOT/optimizer/m/" in k]
  np.testing.assert_array_equal(
      setup.optimizer.inner_optimizer.get_slot(kernel, "m").numpy(),
      saved.get_tensor(key[0]))


def test_a_checkpoint_that_does_not_fit_the_config_is_one_line(source,
                                                               tmp_path):
  """Through the tool: a config whose hidden size differs from the
  checkpoint's is one line naming the checkpoint, a variable and both
  shapes; exit status 1; nothing written."""
  source_params, _ = source
  wide = str(tmp_path / "wide.json")
  dataclasses.replace(CONFIG, hidden_size=48,
                      intermediate_size=96).to_json_file(wide)
  out = tmp_path / "wide_run"
  result = subprocess.run(
      [sys.executable, "-m", "tools.run_pretraining",
       f"--input_file={source_params.input_file}",
       f"--init_checkpoint={source_params.runtime.output_dir}",
       f"--albert_config_file={wide}", f"--output_dir={out}",
       "--train_batch_size=16", "--max_seq_length=32",
       "--max_predictions_per_seq=5", "--num_train_steps=40"],
      cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True,
      text=True, timeout=300, check=False)
  assert result.returncode == 1, result.stderr[-3000:]
  assert "Traceback" not in result.stderr
  line = result.stderr.strip().splitlines()[-1]
  assert line.startswith(
      f"error: --init_checkpoint={source_params.runtime.output_dir} with "
      f"--albert_config_file={wide}: "), line
  assert "[32" in line and "48]" in line, line
  assert "embeddings" in line or "attention" in line, line
  assert not out.exists()
