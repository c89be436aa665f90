"""The generic fine-tuning runner: training, best checkpoint, resume, warm
start (our checkpoint and an exported SavedModel), NaN stop, shared flags."""

import json
import logging
import os

import numpy as np
import pytest
import tensorflow as tf

from albert_common.errors import UserInputError
from albert_tf.config import AlbertConfig
from albert_tf.models.albert_classifier import AlbertClassifier
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.networks.albert_encoder import AlbertEncoder
from albert_tf.training.finetuning import params as finetuning_params
from albert_tf.training.finetuning import runner as finetuning_runner
from albert_tf.training.finetuning import task as finetuning_task
from albert_tf.training.gradient_update import NonFiniteLossError

SEQ = 16


def _config(tmp_path, vocab_size=97):
  config = AlbertConfig(vocab_size=vocab_size, embedding_size=16,
                        hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=64,
                        max_position_embeddings=40, initializer_range=0.1)
  path = str(tmp_path / "albert_config.json")
  config.to_json_file(path)
  return config, path


def _keyword_data(n, seed):
  """Label 1 iff token 5 occurs."""
  rng = np.random.default_rng(seed)
  ids = rng.integers(10, 97, size=(n, SEQ)).astype(np.int32)
  ids[:, 0] = 2
  labels = rng.integers(0, 2, n).astype(np.int32)
  positives = np.flatnonzero(labels)
  ids[positives, rng.integers(1, SEQ, len(positives))] = 5
  inputs = dict(input_word_ids=ids, input_mask=np.ones_like(ids),
                input_type_ids=np.zeros_like(ids))
  return inputs, labels


def _cross_entropy(labels, outputs):
  return tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=labels, logits=outputs["logits"])


def _task(evaluate=None, loss_fn=_cross_entropy):
  train_x, train_y = _keyword_data(512, 0)
  dev_x, dev_y = _keyword_data(128, 1)

  def train_dataset(batch_size, seed):
    return (tf.data.Dataset.from_tensor_slices((train_x, train_y)).repeat()
            .shuffle(512, seed=seed).batch(batch_size, drop_remainder=True))

  def default_evaluate(predict):
    logits = predict(tf.data.Dataset.from_tensor_slices(dev_x).batch(48))
    return {"accuracy": float(np.mean(
        logits["logits"].argmax(-1) == dev_y))}

  return finetuning_task.FinetuningTask(
      name="keyword",
      build_model=lambda encoder, config: AlbertClassifier(encoder, 2),
      loss_fn=loss_fn, train_dataset=train_dataset,
      evaluate=evaluate or default_evaluate)


def _params(tmp_path, config_file, **kwargs):
  values = dict(output_dir=str(tmp_path / "run"),
                albert_config_file=config_file, do_train=True, do_eval=True,
                max_seq_length=SEQ, train_batch_size=32, eval_batch_size=48,
                learning_rate=1e-3, train_step=200, warmup_step=20,
                save_checkpoints_steps=100, iterations_per_loop=50,
                log_steps=50, seed=1)
  values.update(kwargs)
  return finetuning_params.FinetuningParams.from_flat(**values)


def test_trains_keeps_best_and_resumes(tmp_path):
  _, config_file = _config(tmp_path)
  params = _params(tmp_path, config_file)
  results = finetuning_runner.run_finetuning(params, _task())
  assert results["accuracy"] > 0.9
  out = params.runtime.output_dir
  with open(os.path.join(out, "eval_results.json")) as f:
    assert json.load(f) == results
  assert tf.train.latest_checkpoint(out).endswith("ckpt-200")
  best = tf.train.latest_checkpoint(os.path.join(out, "best"))
  assert best.endswith(f"ckpt-{results['step']}")
  assert os.listdir(os.path.join(out, "train")) and \
      os.listdir(os.path.join(out, "eval"))

  # Rerunning resumes at step 200: nothing is trained again.
  runner = finetuning_runner.FinetuningRunner(params, _task())
  assert runner.step == 200
  before = [v.numpy() for v in runner.model.trainable_variables]
  runner.train()
  assert runner.step == 200
  for a, b in zip(before, runner.model.trainable_variables):
    np.testing.assert_array_equal(a, b.numpy())


@pytest.mark.slow  # make test: test_trains_keeps_best_and_resumes
def test_best_checkpoint_follows_main_metric(tmp_path):
  _, config_file = _config(tmp_path)
  scores = iter([0.5, 0.9, 0.7])
  task = _task(evaluate=lambda predict: {"accuracy": next(scores)})
  params = _params(tmp_path, config_file, train_step=300)
  runner = finetuning_runner.FinetuningRunner(params, task)
  runner.train()
  assert runner.best_results() == {"accuracy": 0.9, "step": 200}
  assert runner.best_manager.latest_checkpoint.endswith("ckpt-200")
  saved = tf.train.load_variable(runner.best_manager.latest_checkpoint,
                                 "model/layer_with_weights-1/dense/kernel/"
                                 ".ATTRIBUTES/VARIABLE_VALUE")
  runner.restore_best()
  np.testing.assert_array_equal(runner.model.classifier.dense.kernel.numpy(),
                                saved)


@pytest.mark.slow  # a thread regression check
def test_fit_and_predict_iterate_without_the_autotune_thread(tmp_path):
  """The runner hands Keras datasets with tf.data's autotuner off: its
  thread's teardown can add up to a call's own time at the end of every
  fit and predict (dataset_options;
  benchmarks.investigations.iterator_teardown)."""
  _, config_file = _config(tmp_path)
  params = _params(tmp_path, config_file, train_step=20, warmup_step=2,
                   save_checkpoints_steps=10)
  runner = finetuning_runner.FinetuningRunner(params, _task())
  seen = {"fit": [], "predict": []}
  for name in seen:
    call = getattr(runner.trainer, name)

    def spy(data, *args, _call=call, _name=name, **kwargs):
      seen[_name].append(data.options().autotune.enabled)
      return _call(data, *args, **kwargs)
    setattr(runner.trainer, name, spy)
  runner.train()
  assert runner.step == 20
  assert seen == {"fit": [False], "predict": [False, False]}


def test_nan_loss_stops_with_clear_error(tmp_path):
  _, config_file = _config(tmp_path)
  task = _task(loss_fn=lambda labels, outputs: outputs["logits"][:, 0] * np.nan)
  with pytest.raises(NonFiniteLossError, match=r"loss is nan at step \d+"):
    finetuning_runner.run_finetuning(_params(tmp_path, config_file), task)


def test_warm_start_from_our_pretraining_checkpoint(tmp_path, caplog):
  caplog.set_level(logging.INFO, logger="absl")
  config, config_file = _config(tmp_path)
  pretrainer = AlbertPretrainer(AlbertEncoder(config))
  prefix = tf.train.Checkpoint(model=pretrainer).save(
      str(tmp_path / "pretrain" / "ckpt"))
  params = _params(tmp_path, config_file, init_checkpoint=prefix,
                   do_train=False)
  runner = finetuning_runner.FinetuningRunner(params, _task())
  assert runner.warm_start_summary.startswith(
      f"loaded 25 variables from {prefix} (ours layout)")
  # Said once: what was loaded (variables, source).
  loaded = [r.getMessage() for r in caplog.records
            if r.getMessage().startswith("loaded ")]
  assert loaded == [runner.warm_start_summary]
  for ours, theirs in zip(runner.encoder.weights, pretrainer.encoder.weights):
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.slow
def test_init_savedmodel_fine_tunes_the_exported_encoder(tmp_path, spm_model,
                                                         caplog):
  from albert_tf import exports
  config, _ = _config(tmp_path, vocab_size=2000)
  encoder = AlbertEncoder(config)
  prefix = tf.train.Checkpoint(model=AlbertPretrainer(encoder)).save(
      str(tmp_path / "pretrain"))
  exports.export_savedmodel(config, prefix, spm_model,
                            str(tmp_path / "export"), seq_length=SEQ)
  params = _params(tmp_path, "", init_savedmodel=str(tmp_path / "export" /
                                                     "encoder"),
                   train_step=20, warmup_step=2, save_checkpoints_steps=20,
                   iterations_per_loop=10)
  # (After the export, absl logs at WARNING again in a process that never
  # ran app.run.)
  caplog.set_level(logging.INFO, logger="absl")
  runner = finetuning_runner.FinetuningRunner(params, _task())
  assert runner.config == config
  before = runner.model.classifier.dense.kernel.numpy()
  encoder_before = [v.numpy() for v in runner.encoder.trainable_variables]
  assert len(encoder_before) == len(encoder.trainable_variables)
  assert (f"loaded {len(runner.encoder.variables)} variables "
          f"({len(encoder_before)} trainable) from the exported encoder "
          f"{params.init_savedmodel}") in caplog.messages
  results = finetuning_runner.run_finetuning(params, runner.task, runner)
  # Evaluated once, at train_step (20 steps are too few to learn the task;
  # test_trains_keeps_best_and_resumes shows that).
  assert results["step"] == 20 and set(results) == {"accuracy", "step"}
  assert not np.allclose(before, runner.model.classifier.dense.kernel.numpy())
  assert any(not np.allclose(a, b.numpy()) for a, b in
             zip(encoder_before, runner.encoder.trainable_variables))


def test_bad_settings(tmp_path):
  _, config_file = _config(tmp_path)
  with pytest.raises(UserInputError, match="--do_train, --do_eval"):
    finetuning_runner.FinetuningRunner(
        _params(tmp_path, config_file, do_train=False, do_eval=False),
        _task())
  with pytest.raises(UserInputError, match="not both"):
    finetuning_params.validate_params(_params(tmp_path, config_file,
                                       init_checkpoint="a",
                                       init_savedmodel="b"))
  with pytest.raises(UserInputError, match="max_seq_length=64 exceeds"):
    finetuning_runner.FinetuningRunner(
        _params(tmp_path, config_file, max_seq_length=64), _task())
  with pytest.raises(UserInputError, match="albert_config_file=.*nope"):
    finetuning_runner.FinetuningRunner(
        _params(tmp_path, str(tmp_path / "nope.json")), _task())


def _summary_steps(directory):
  """{tag: [steps]} of the tensor summaries in a TensorBoard directory."""
  steps = {}
  for name in sorted(os.listdir(directory)):
    for event in tf.compat.v1.train.summary_iterator(
        os.path.join(directory, name)):
      for value in event.summary.value:
        steps.setdefault(value.tag, []).append(event.step)
        assert np.isfinite(tf.make_ndarray(value.tensor))
  return steps


@pytest.mark.slow
@pytest.mark.parametrize("train_step,iterations_per_loop,save_every",
                         [(40, 100, 100), (7, 5, 5)])
def test_stops_at_exactly_train_step(tmp_path, train_step,
                                     iterations_per_loop, save_every):
  """--train_step is honoured whatever --iterations_per_loop is (a shorter
  last block); each checkpoint is evaluated once."""
  _, config_file = _config(tmp_path)
  params = _params(tmp_path, config_file, train_step=train_step,
                   warmup_step=2, iterations_per_loop=iterations_per_loop,
                   save_checkpoints_steps=save_every, log_steps=5)
  results = finetuning_runner.run_finetuning(params, _task())
  out = params.runtime.output_dir
  assert tf.train.latest_checkpoint(out).endswith(f"ckpt-{train_step}")
  with open(os.path.join(out, "eval_results.json")) as f:
    assert json.load(f)["step"] == results["step"]
  train = _summary_steps(os.path.join(out, "train"))
  assert max(train["loss"]) == train_step
  # Each checkpoint evaluated exactly once.
  evaluated = list(range(save_every, train_step, save_every)) + [train_step]
  assert _summary_steps(os.path.join(out, "eval"))["accuracy"] == evaluated
  best = tf.train.latest_checkpoint(os.path.join(out, "best"))
  assert best.endswith(f"ckpt-{results['step']}")
  assert results["step"] in evaluated


def test_fit_segments_end_at_checkpoints_and_train_step():
  assert finetuning_runner.fit_segments(0, 40, 100) == [(0, 40, 1)]
  assert finetuning_runner.fit_segments(0, 7, 5) == [(0, 5, 1), (5, 2, 1)]
  assert finetuning_runner.fit_segments(0, 20935, 100) == [(0, 100, 209),
                                                    (20900, 35, 1)]
  # A run resumed off the checkpoint grid (train_step raised after a run
  # that ended at 40) first returns to the grid.
  assert finetuning_runner.fit_segments(40, 250, 100) == [
      (40, 60, 1), (100, 100, 1),
                                                   (200, 50, 1)]
  assert finetuning_runner.fit_segments(40, 40, 100) == []
