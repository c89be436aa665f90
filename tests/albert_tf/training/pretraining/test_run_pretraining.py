"""run_pretraining: learning, resume, warm start, metrics, NaN handling."""

import dataclasses
import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from albert_common import settings_fields
from albert_tf.config import AlbertConfig
from albert_tf.training.gradient_update import NonFiniteLossError
from albert_tf.training.pretraining import driver as lib
from albert_tf.training.pretraining import objective as pretraining_objective


def read_scalars(event_dir):
  """{tag: [(step, value), ...]} from TensorBoard event files."""
  scalars = {}
  for name in sorted(tf.io.gfile.listdir(event_dir)):
    for record in tf.data.TFRecordDataset(os.path.join(event_dir, name)):
      event = tf.compat.v1.Event.FromString(record.numpy())
      for value in event.summary.value:
        number = float(tf.make_ndarray(value.tensor))
        scalars.setdefault(value.tag, []).append((event.step, number))
  return scalars


def _params(folder, records):
  config = AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=32)
  config_path = os.path.join(folder, "albert_config.json")
  config.to_json_file(config_path)
  return lib.PretrainingParams.from_flat(
      input_file=records["path"], eval_file=records["path"],
      output_dir=os.path.join(folder, "run"), albert_config_file=config_path,
      train_batch_size=16, eval_batch_size=16, max_seq_length=32,
      max_predictions_per_seq=5, learning_rate=5e-2, num_train_steps=40,
      num_warmup_steps=4, save_checkpoints_steps=20, iterations_per_loop=10,
      max_eval_steps=4, seed=3, shuffle_buffer_size=100)


@pytest.fixture
def params(tmp_path, pretraining_records):
  return _params(str(tmp_path), pretraining_records)


@pytest.fixture(scope="module")
def trained(tmp_path_factory, pretraining_records):
  """One 40-step run with evaluations (checkpoints 0, 20, 40), shared by the
  tests that read it, resume from it or warm-start from it (none of them
  writes into its output_dir): (params, results)."""
  params = _params(str(tmp_path_factory.mktemp("trained")),
                   pretraining_records)
  return params, lib.run_pretraining(params)


def test_loss_falls_and_summaries_are_written(trained):
  params, results = trained
  train = read_scalars(os.path.join(params.runtime.output_dir, "train"))
  losses = [v for _, v in sorted(train["loss"])]
  assert [s for s, _ in sorted(train["loss"])] == [10, 20, 30, 40]
  assert losses[-1] < losses[0] - 0.5, losses
  assert {"mlm_accuracy", "sop_accuracy", "learning_rate",
          "gradient_norm"} <= set(train)
  evals = read_scalars(os.path.join(params.runtime.output_dir, "eval"))
  assert sorted(s for s, _ in evals["mlm_loss"]) == [20, 40]
  assert results["loss"] == pytest.approx(evals["loss"][-1][1], rel=1e-5)
  with open(os.path.join(params.runtime.output_dir, "eval_results.json")) as f:
    assert json.load(f)["step"] == 40
  kept = sorted(os.path.basename(p) for p in
                tf.train.get_checkpoint_state(
                    params.runtime.output_dir).all_model_checkpoint_paths)
  assert kept == ["ckpt-0", "ckpt-20", "ckpt-40"]


def test_rerun_of_a_finished_run_returns_its_results_without_building(
    trained, monkeypatch):
  """Nothing is rebuilt or restored (a restore without training left the
  optimizer's slots unrestored and TensorFlow warned about each)."""
  params, results = trained

  def no_build(run):
    raise AssertionError("a finished run was rebuilt")
  monkeypatch.setattr(lib, "build_pretraining", no_build)
  again = lib.run_pretraining(params)
  assert again == pytest.approx(results, rel=1e-6)
  assert set(again) == set(results)
  # More steps asked for: the run goes on (and builds).
  with pytest.raises(AssertionError, match="rebuilt"):
    lib.run_pretraining(settings_fields.replace(params, num_train_steps=60))


def _interrupted_at(source_dir, step, output_dir):
  """output_dir as a run of source_dir's params killed after ckpt-<step>:
  that checkpoint, recorded as the latest."""
  os.makedirs(output_dir)
  for path in tf.io.gfile.glob(os.path.join(source_dir, f"ckpt-{step}.*")):
    shutil.copy(path, output_dir)
  prefix = os.path.join(output_dir, f"ckpt-{step}")
  tf.compat.v1.train.update_checkpoint_state(
      output_dir, prefix, all_model_checkpoint_paths=[prefix])
  return prefix


def test_resume_restores_step_slots_and_learning_rate(trained, tmp_path):
  params = settings_fields.replace(trained[0], output_dir=str(tmp_path / "run"))
  saved = tf.train.load_checkpoint(
      _interrupted_at(trained[0].runtime.output_dir, 20,
                      params.runtime.output_dir))
  setup = lib.build_pretraining(params)  # same output_dir: resumes
  assert int(setup.optimizer.iterations.numpy()) == 20
  kernel = setup.model.get_layer("masked_lm").transform.kernel
  with setup.strategy.scope():
    # Slots are created lazily; the checkpoint fills them as they appear.
    setup.optimizer._create_all_weights(setup.model.trainable_variables)
  slot = setup.optimizer.get_slot(kernel, "m")
  saved_slot = [saved.get_tensor(k) for k in
                saved.get_variable_to_shape_map()
                if "transform/kernel/.OPTIMIZER_SLOT/optimizer/m/" in k]
  assert len(saved_slot) == 1 and np.abs(saved_slot[0]).max() > 0
  np.testing.assert_array_equal(slot.numpy(), saved_slot[0])
  expected_lr = params.learning_rate * (1 - 20 / 40)
  assert setup.runner.learning_rate() == pytest.approx(expected_lr, rel=1e-6)
  setup.controller.train(steps=30)
  assert int(setup.optimizer.iterations.numpy()) == 30
  assert tf.train.latest_checkpoint(
      params.runtime.output_dir).endswith("ckpt-30")


def test_warm_start_from_our_checkpoint(trained, tmp_path):
  params = trained[0]
  target = settings_fields.replace(
      params, output_dir=str(tmp_path / "warm"), restart_schedule=True,
      init_checkpoint=params.runtime.output_dir)  # a directory: its latest
  setup = lib.build_pretraining(target)
  assert int(setup.optimizer.iterations.numpy()) == 0  # weights only
  saved = tf.train.load_checkpoint(
      os.path.join(params.runtime.output_dir, "ckpt-40"))
  table = setup.model.encoder.get_embedding_table().numpy()
  key = [k for k in saved.get_variable_to_shape_map()
         if "word_embeddings" in k and "OPTIMIZER_SLOT" not in k]
  np.testing.assert_array_equal(table, saved.get_tensor(key[0]))


@pytest.mark.slow  # make test: the accepted warm start
def test_warm_start_rejects_another_architecture(trained, tmp_path):
  params = trained[0]
  bigger = AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=48,
                        num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=32)
  config_path = str(tmp_path / "bigger.json")
  bigger.to_json_file(config_path)
  # One line naming each variable and both shapes; nothing written.
  with pytest.raises(lib.UserInputError,
                     match=r"^--init_checkpoint=.* with --albert_config_file="
                     r".*bigger.json: checkpoint .* does not fit the model: "
                     r"21 shape mismatch\(es\): .*pooler/kernel.* is "
                     r"\[32, 32\], the model needs \[48, 48\][^\n]*$"):
    lib.build_pretraining(settings_fields.replace(
        params, output_dir=str(tmp_path / "other"),
        albert_config_file=config_path,
        init_checkpoint=params.runtime.output_dir))
  assert not os.path.exists(tmp_path / "other")


@pytest.mark.slow
def test_nan_loss_stops_with_message_and_keeps_last_good_checkpoint(params):
  bad = settings_fields.replace(params, learning_rate=1e6, num_warmup_steps=0,
                            eval_file="")
  with pytest.raises(NonFiniteLossError,
                     match=r"training loss is nan at step \d+ .*last good"):
    lib.run_pretraining(bad)
  assert tf.train.latest_checkpoint(
      params.runtime.output_dir).endswith("ckpt-0")


def test_bad_params_are_user_errors(params):
  with pytest.raises(lib.UserInputError,
                     match=r"--max_seq_length=64 exceeds "
                     r"max_position_embeddings=32"):
    lib.build_pretraining(settings_fields.replace(params, max_seq_length=64))
  with pytest.raises(lib.UserInputError, match=r"--save_checkpoints_steps"):
    lib.build_pretraining(settings_fields.replace(params,
                                              save_checkpoints_steps=15))


def test_metrics_on_a_crafted_batch():
  # Two sequences, three masked slots each; the third slot of row 0 and the
  # last two of row 1 are padding (weight 0).
  ids = np.array([[1, 2, 3], [0, 3, 3]], np.int32)
  weights = np.array([[1, 1, 0], [1, 0, 0]], np.float32)
  logits = np.full((2, 3, 4), -2.0, np.float32)
  logits[0, 0, 1] = 3.0  # correct
  logits[0, 1, 0] = 3.0  # wrong (label 2)
  logits[0, 2, 3] = 3.0  # correct but padding
  logits[1, 0, 0] = 1.0  # correct, less confident
  sop_logits = np.array([[2.0, -1.0], [0.5, 0.0]], np.float32)  # both say 0
  batch = dict(masked_lm_ids=ids, masked_lm_weights=weights,
               next_sentence_labels=np.array([0, 1], np.int32))
  outputs = dict(mlm_logits=logits, sop_logits=sop_logits)
  loss, per_token = pretraining_objective.replica_loss(
      batch, outputs, global_mlm_weight=tf.constant(3.0), global_batch_size=2)

  def ce(row, label):
    return -(row[label] - np.log(np.exp(row).sum()))

  mlm = [ce(logits[0, 0], 1), ce(logits[0, 1], 2), ce(logits[1, 0], 0)]
  sop = [ce(sop_logits[0], 0), ce(sop_logits[1], 1)]
  assert float(loss) == pytest.approx(np.mean(mlm) + np.mean(sop), rel=1e-5)
  metrics = pretraining_objective.PretrainingMetrics()
  metrics.update(batch, outputs, per_token)
  results = {k: float(v) for k, v in metrics.result().items()}
  assert results["mlm_accuracy"] == pytest.approx(2 / 3)
  assert results["mlm_loss"] == pytest.approx(np.mean(mlm), rel=1e-5)
  assert results["sop_accuracy"] == pytest.approx(0.5)
  assert results["sop_loss"] == pytest.approx(np.mean(sop), rel=1e-5)


def _final_weights(output_dir):
  reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(output_dir))
  return {k: reader.get_tensor(k) for k in reader.get_variable_to_shape_map()
          if k.startswith("model/") and "OPTIMIZER_SLOT" not in k}


@pytest.mark.slow
def test_xla_compiled_step_matches_eager_step(params, tmp_path):
  short = settings_fields.replace(params, num_train_steps=6,
                              save_checkpoints_steps=3, iterations_per_loop=3,
                              eval_file="")
  lib.run_pretraining(short)
  lib.run_pretraining(settings_fields.replace(
      short, output_dir=str(tmp_path / "xla"), jit_compile=True,
      init_checkpoint=os.path.join(params.runtime.output_dir, "ckpt-0")))
  eager, xla = _final_weights(params.runtime.output_dir), _final_weights(
      str(tmp_path / "xla"))
  assert eager.keys() == xla.keys()
  for key in eager:
    np.testing.assert_allclose(xla[key], eager[key], atol=2e-4, err_msg=key)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_mixed_precision_training_runs(params, dtype):
  results = lib.run_pretraining(settings_fields.replace(
      params, dtype=dtype, num_train_steps=6, save_checkpoints_steps=3,
      iterations_per_loop=3))
  assert np.isfinite(results["loss"])
  weights = _final_weights(params.runtime.output_dir)
  assert all(w.dtype == np.float32 for w in weights.values())


@pytest.mark.slow
def test_interrupted_run_resumes_exactly(params, tmp_path):
  """Weights, optimizer slots, data position and dropout RNG state all come
  back: an interrupted run ends where an uninterrupted one does."""
  config = AlbertConfig.from_json_file(params.albert_config_file)
  with_dropout = str(tmp_path / "dropout.json")
  dataclasses.replace(config, hidden_dropout_prob=0.1,
                      attention_probs_dropout_prob=0.1).to_json_file(
                          with_dropout)
  run = settings_fields.replace(params, albert_config_file=with_dropout,
                            num_train_steps=30, save_checkpoints_steps=10,
                            eval_file="")
  lib.run_pretraining(
      settings_fields.replace(run, output_dir=str(tmp_path / "a")))
  interrupted = settings_fields.replace(run, output_dir=str(tmp_path / "b"))
  lib.build_pretraining(interrupted).controller.train(steps=20)
  tf_keras.backend.clear_session()
  lib.run_pretraining(interrupted)  # a new process would do the same
  straight = _final_weights(str(tmp_path / "a"))
  resumed = _final_weights(str(tmp_path / "b"))
  assert straight.keys() == resumed.keys()
  for key in straight:
    np.testing.assert_allclose(resumed[key], straight[key], atol=1e-5,
                               err_msg=key)


def _cli_flags(params, names):
  flat = settings_fields.to_flat(params)
  return [f"--{k}={flat[k]}" for k in names]


@pytest.fixture(scope="module")
def cli_runs(tmp_path_factory, pretraining_records):
  """Two `python -m tools.run_pretraining` processes side by side (each pays
  the TensorFlow import): "sigterm", a long run sent SIGTERM after a few
  loops, and "progress", a 4-step run. {name: (process, stdout, stderr)}."""
  import signal
  import subprocess
  import sys
  import time
  root = os.path.abspath(os.path.join(__file__, "../../../../.."))
  folder = str(tmp_path_factory.mktemp("cli"))
  params = _params(folder, pretraining_records)
  common = ("input_file", "albert_config_file", "train_batch_size",
            "max_seq_length", "max_predictions_per_seq")
  flags = {
      "sigterm": _cli_flags(params, common + ("num_warmup_steps", "seed")) + [
          "--num_train_steps=100000", "--save_checkpoints_steps=50000",
          "--iterations_per_loop=10"],
      "progress": _cli_flags(params, common) + [
          "--num_train_steps=4", "--num_warmup_steps=1",
          "--save_checkpoints_steps=2", "--iterations_per_loop=2"],
  }
  for name in flags:
    flags[name].append(f"--output_dir={os.path.join(folder, name)}")
  processes = {name: subprocess.Popen(
      [sys.executable, "-m", "tools.run_pretraining"] + args, cwd=root,
      stdout=subprocess.PIPE if name == "progress" else subprocess.DEVNULL,
      stderr=subprocess.PIPE, text=True) for name, args in flags.items()}
  try:
    first = os.path.join(folder, "sigterm", "ckpt-0.index")
    deadline = time.time() + 120
    while not os.path.exists(first) and time.time() < deadline:
      time.sleep(0.5)
    time.sleep(3)  # a few loops of training
    processes["sigterm"].send_signal(signal.SIGTERM)
    # communicate() drains both pipes (a full pipe would stall a process).
    outputs = {name: processes[name].communicate(timeout=300)
               for name in ("progress", "sigterm")}
  finally:
    for process in processes.values():
      if process.poll() is None:
        process.kill()
  return {name: (processes[name], *outputs[name]) for name in processes}, \
      folder


@pytest.mark.slow
def test_sigterm_saves_a_checkpoint_and_exits_for_restart(cli_runs):
  """A preemption notice (SIGTERM) is handled by TensorFlow's
  PreemptionCheckpointHandler: checkpoint after the current loop, exit 42."""
  runs, folder = cli_runs
  process, _, stderr = runs["sigterm"]
  assert process.returncode == 42, stderr[-2000:]
  latest = tf.train.latest_checkpoint(os.path.join(folder, "sigterm"))
  step = int(latest.rsplit("-", 1)[1])
  assert step > 0 and step % 10 == 0


@pytest.mark.slow
def test_cli_progress_lines_appear_once(cli_runs):
  """Orbit prints its progress to stdout; its absl copies are filtered out of
  stderr, which keeps the other log lines."""
  process, stdout, stderr = cli_runs[0]["progress"]
  assert process.returncode == 0, stderr[-2000:]
  assert stdout.count("train | step:") == 3  # start, 2, 4
  assert stdout.count("saved checkpoint to") == 2
  assert "train | step:" not in stderr
  assert "saved checkpoint to" not in stderr
  assert "strategy default" in stderr  # other INFO lines stay


@pytest.mark.slow  # make test keeps the loss, resume and warm-start runs
def test_stops_at_exactly_num_train_steps_between_loops(params):
  """7 steps with loops of 5: a shorter last loop, and the checkpoint,
  summaries and eval_results.json all carry step 7."""
  run = settings_fields.replace(params, num_train_steps=7,
                                iterations_per_loop=5,
                            save_checkpoints_steps=5)
  lib.run_pretraining(run)
  assert os.path.basename(
      tf.train.latest_checkpoint(run.runtime.output_dir)) == (
      "ckpt-7")
  train = read_scalars(os.path.join(run.runtime.output_dir, "train"))
  assert [s for s, _ in sorted(train["loss"])] == [5, 7]
  evals = read_scalars(os.path.join(run.runtime.output_dir, "eval"))
  assert sorted(s for s, _ in evals["loss"]) == [5, 7]
  with open(os.path.join(run.runtime.output_dir, "eval_results.json")) as f:
    assert json.load(f)["step"] == 7


def test_the_config_comes_from_the_init_checkpoint_folder(tmp_path):
  """Without --albert_config_file: the --init_checkpoint folder's
  albert_config.json (ours, a released download), else its config.json (a
  Hugging Face folder); neither is one line."""
  from albert_tf.checkpoints import configs
  from albert_tf.training.pretraining import params as pretraining_params
  config = AlbertConfig(vocab_size=120, embedding_size=8, hidden_size=16,
                        num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64)
  released, hf, empty = (tmp_path / n for n in ("released", "hf", "empty"))
  for folder in (released, hf, empty):
    folder.mkdir()
  config.to_json_file(str(released / "albert_config.json"))
  (hf / "config.json").write_text(json.dumps(
      configs.config_to_huggingface(config)))
  base = lib.PretrainingParams.from_flat(
      input_file="unused", output_dir=str(tmp_path / "run"),
      max_seq_length=64, num_train_steps=10, num_warmup_steps=1)
  for folder, name in ((released, "albert_config.json"),
                       (hf, "config.json")):
    prepared = pretraining_params.prepare(settings_fields.replace(
        base, init_checkpoint=str(folder)))
    assert prepared.params.albert_config_file == str(folder / name)
    assert prepared.config == config
  for init in (str(empty), ""):
    with pytest.raises(lib.UserInputError,
                       match=r"^--albert_config_file is required unless "
                       r"--init_checkpoint is a folder holding "
                       r"albert_config.json or a Hugging Face / keras-hub "
                       rf"config.json \(--init_checkpoint='{init}'\)$"):
      pretraining_params.prepare(settings_fields.replace(
          base, init_checkpoint=init))
