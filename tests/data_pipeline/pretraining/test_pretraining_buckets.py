"""Length-bucketed pretraining batches (data_pipeline.pretraining.buckets):
the same records per window as the unbucketed stream, each batch cut to the
bucket of its longest record, the same model outputs, exact resume."""

import collections
import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from albert_common import settings_fields
from albert_common.errors import UserInputError
from albert_tf.config import AlbertConfig
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.networks.albert_encoder import AlbertEncoder
from albert_tf.training.pretraining import driver as pretraining_driver
from albert_tf.training.pretraining import params as pretraining_params
from data_pipeline.pretraining import buckets as pretraining_buckets
from data_pipeline.pretraining import reader as pretraining_input

BUCKETS = (8, 16, 32)
WINDOW = pretraining_buckets.DEFAULT_WINDOW
BATCH = 4


@pytest.fixture(scope="module")
def varied_records(tmp_path_factory, english_corpus, spm_model):
  """Records of many lengths (short_seq_prob 0.7) at max_seq_length 32."""
  from data_pipeline.pretraining import instance_options
  from data_pipeline.pretraining import writer as pretraining_writer
  path = str(tmp_path_factory.mktemp("varied") / "train.tfrecord")
  pretraining_writer.create_pretraining_data(
      english_corpus, path, spm_model,
      instance_options.InstanceOptions(max_seq_length=32,
                                       max_predictions_per_seq=5,
                                       short_seq_prob=0.7),
      dupe_factor=1, random_seed=5, num_workers=1, show_progress=False)
  return path


def _batches(path, count, **kwargs):
  dataset = pretraining_input.pretraining_dataset(
      path, batch_size=BATCH, max_seq_length=32, max_predictions_per_seq=5,
      seed=11, shuffle_buffer_size=200, **kwargs)
  return [{k: v.numpy() for k, v in batch.items()}
          for batch in dataset.take(count)]


def _record_keys(batches):
  """Each record's real tokens and masked positions (its identity)."""
  return collections.Counter(
      (tuple(b["input_word_ids"][i][b["input_mask"][i] > 0]),
       tuple(b["masked_lm_positions"][i])) for b in batches
      for i in range(BATCH))


def test_windows_hold_the_same_records_cut_to_their_buckets(varied_records):
  plain = _batches(varied_records, 3 * WINDOW)
  bucketed = _batches(varied_records, 3 * WINDOW, length_buckets=BUCKETS)
  shapes = collections.Counter(b["input_word_ids"].shape for b in bucketed)
  assert set(shapes) <= {(BATCH, n) for n in BUCKETS}
  assert len(shapes) >= 2, shapes  # the corpus has short records
  for w in range(3):
    window = slice(w * WINDOW, (w + 1) * WINDOW)
    assert _record_keys(plain[window]) == _record_keys(bucketed[window])
  for batch in bucketed:
    length = batch["input_word_ids"].shape[1]
    real = batch["input_mask"].sum(1)
    assert real.max() <= length
    smaller = [n for n in BUCKETS if n < length]
    assert not smaller or real.max() > smaller[-1]  # the smallest that fits
    assert (batch["masked_lm_positions"] < length).all()
    for name in ("input_mask", "input_type_ids"):
      assert batch[name].shape == (BATCH, length)
  # The windows' batch orders are shuffled, not sorted by length.
  lengths = [b["input_word_ids"].shape[1] for b in bucketed]
  assert lengths != sorted(lengths)


@pytest.mark.parametrize("start_step", [1, WINDOW - 1, WINDOW, WINDOW + 5])
def test_a_resumed_stream_continues_exactly(varied_records, start_step):
  whole = _batches(varied_records, start_step + 6, length_buckets=BUCKETS)
  resumed = _batches(varied_records, 6, length_buckets=BUCKETS,
                     start_step=start_step)
  for a, b in zip(whole[start_step:], resumed):
    assert a.keys() == b.keys()
    for key in a:
      np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def test_a_cut_batch_gives_the_full_length_outputs(varied_records):
  """Padding beyond the bucket changes nothing: MLM and SOP logits of a cut
  batch equal the full-length batch's to 1e-5."""
  config = AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=32)
  tf_keras.utils.set_random_seed(0)
  model = AlbertPretrainer(AlbertEncoder(config))
  names = ("input_word_ids", "input_mask", "input_type_ids",
           "masked_lm_positions")
  compared = 0
  for batch in _batches(varied_records, WINDOW, length_buckets=BUCKETS):
    length = batch["input_word_ids"].shape[1]
    if length == 32:
      continue
    full = {k: np.pad(batch[k], [(0, 0), (0, 32 - length)])
            if k != "masked_lm_positions" else batch[k] for k in names}
    cut = model({k: batch[k] for k in names}, training=False)
    padded = model(full, training=False)
    for key in ("mlm_logits", "sop_logits"):
      np.testing.assert_allclose(cut[key], padded[key], atol=1e-5)
    compared += 1
  assert compared


def test_buckets_are_refused_on_tpu_and_checked(tmp_path):
  config = str(tmp_path / "albert_config.json")
  AlbertConfig(vocab_size=100, embedding_size=16, hidden_size=32,
               num_hidden_layers=2, num_attention_heads=2,
               intermediate_size=64, max_position_embeddings=32
               ).to_json_file(config)
  params = pretraining_params.PretrainingParams.from_flat(
      input_file="x", output_dir=str(tmp_path), albert_config_file=config,
      max_seq_length=32, num_train_steps=10, num_warmup_steps=1,
      save_checkpoints_steps=5, iterations_per_loop=5, length_buckets="auto")
  pretraining_params.prepare(params)  # auto at 32: one bucket, any strategy
  with pytest.raises(UserInputError, match="--length_buckets=8,16 needs "
                     "shapes that vary.*--strategy=tpu"):
    pretraining_params.prepare(settings_fields.replace(
        params, length_buckets="8,16", strategy="tpu"))
  with pytest.raises(UserInputError, match="strictly increasing"):
    pretraining_params.prepare(settings_fields.replace(
        params, length_buckets="16,8"))


def _final_weights(output_dir):
  reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(output_dir))
  return {name: reader.get_tensor(name)
          for name in reader.get_variable_to_shape_map()
          if name.startswith("model/") and "OPTIMIZER" not in name}


@pytest.mark.slow
def test_a_bucketed_run_resumes_exactly(varied_records, tmp_path):
  """Interrupted after 20 steps (inside the second window of 16 batches),
  resumed: the weights equal the uninterrupted bucketed run's."""
  config = str(tmp_path / "albert_config.json")
  AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
               num_hidden_layers=2, num_attention_heads=2,
               intermediate_size=64, max_position_embeddings=32,
               hidden_dropout_prob=0.1).to_json_file(config)
  run = pretraining_params.PretrainingParams.from_flat(
      input_file=varied_records, output_dir=str(tmp_path / "a"),
      albert_config_file=config, train_batch_size=BATCH,
      max_seq_length=32, max_predictions_per_seq=5, learning_rate=5e-2,
      num_train_steps=30, num_warmup_steps=3, save_checkpoints_steps=10,
      iterations_per_loop=10, seed=3, shuffle_buffer_size=100,
      length_buckets="8,16")
  pretraining_driver.run_pretraining(run)
  interrupted = settings_fields.replace(run, output_dir=str(tmp_path / "b"))
  pretraining_driver.build_pretraining(interrupted).controller.train(
      steps=20)
  tf_keras.backend.clear_session()
  pretraining_driver.run_pretraining(interrupted)
  straight = _final_weights(os.path.join(tmp_path, "a"))
  resumed = _final_weights(os.path.join(tmp_path, "b"))
  assert straight.keys() == resumed.keys() and straight
  for key in straight:
    np.testing.assert_allclose(resumed[key], straight[key], atol=1e-5,
                               err_msg=key)
