"""In-graph re-masking: identical to the numpy masking given the same draws."""

from typing import Dict

import numpy as np
import pytest
import tensorflow as tf

from data_pipeline import pretraining_data
from data_pipeline import pretraining_writer
from data_pipeline.dynamic_masking import DynamicMasking
from data_pipeline.dynamic_masking import remask
from data_pipeline.pretraining_input import pretraining_dataset
from data_pipeline.tokenization import SentencePieceTokenizer

SEQ = 64
PRED = 10


def _numpy_reference(batch: Dict[str, np.ndarray], config: DynamicMasking,
                    draws: np.ndarray) -> Dict[str, np.ndarray]:
  """`pretraining_data.mask_instances` on a batch's original tokens (tests)."""
  ids = np.array(batch["input_word_ids"])
  weights = np.asarray(batch["masked_lm_weights"]) > 0
  np.put_along_axis(ids, np.asarray(batch["masked_lm_positions"]),
                    np.where(weights, batch["masked_lm_ids"],
                             np.take_along_axis(
                                 ids, np.asarray(batch["masked_lm_positions"]),
                                 axis=1)), axis=1)
  lengths = np.asarray(batch["input_mask"]).sum(axis=1)
  segment = np.asarray(batch["input_type_ids"])
  len_b = segment.sum(axis=1) - 1
  len_a = lengths - len_b - 3
  # One pool row per instance: its tokens without [CLS] and the [SEP]s.
  seq = ids.shape[1]
  pool = []
  a_start, b_start = [], []
  for row in range(ids.shape[0]):
    a_start.append(len(pool))
    pool.extend(ids[row, 1:1 + len_a[row]].tolist())
    b_start.append(len(pool))
    pool.extend(ids[row, 2 + len_a[row]:2 + len_a[row] + len_b[row]].tolist())
  spans = pretraining_data.InstanceSpans(
      np.array(a_start), len_a.astype(np.int64), np.array(b_start),
      len_b.astype(np.int64), np.zeros(ids.shape[0], np.int64),
      np.asarray(draws, np.float32))
  start_piece = np.zeros(config.vocab_size, bool)
  boundary = np.asarray(batch["token_boundary"]) > 0
  start_piece[ids[boundary]] = True
  vocab = pretraining_data.VocabInfo(config.vocab_size, config.cls_id,
                                     config.sep_id, config.mask_id,
                                     start_piece)
  options = pretraining_data.InstanceOptions(
      max_seq_length=seq,
      max_predictions_per_seq=np.asarray(batch["masked_lm_ids"]).shape[1],
      masked_lm_prob=config.masked_lm_prob, ngram=config.ngram,
      favor_shorter_ngram=config.favor_shorter_ngram,
      do_whole_word_mask=config.do_whole_word_mask)
  out = pretraining_data.mask_instances(spans, np.array(pool, np.int32),
                                        options, vocab)
  return {"input_word_ids": out.input_ids,
          "masked_lm_positions": out.masked_lm_positions,
          "masked_lm_ids": out.masked_lm_ids,
          "masked_lm_weights": out.masked_lm_weights}


@pytest.fixture(scope="module")
def setup(tmp_path_factory, english_corpus, spm_model):
  path = str(tmp_path_factory.mktemp("dyn") / "train.tfrecord")
  pretraining_writer.create_pretraining_data(
      english_corpus, path, spm_model,
      pretraining_data.InstanceOptions(max_seq_length=SEQ,
                                       max_predictions_per_seq=PRED),
      dupe_factor=1, num_workers=1, show_progress=False)
  tok = SentencePieceTokenizer(spm_model)
  config = DynamicMasking(vocab_size=tok.vocab_size, cls_id=tok.cls_id,
                          sep_id=tok.sep_id, mask_id=tok.mask_id)
  dataset = pretraining_dataset(path, batch_size=64, max_seq_length=SEQ,
                                max_predictions_per_seq=PRED,
                                is_training=False,
                                include_token_boundary=True)
  batch = next(iter(dataset))
  return batch, config, path


def test_same_as_numpy_masking_given_the_same_draws(setup):
  batch, config, _ = setup
  draws = np.random.default_rng(0).random((64, 4, SEQ), dtype=np.float32)
  ours = remask(batch, config, draws=tf.constant(draws))
  reference = _numpy_reference({k: v.numpy() for k, v in batch.items()},
                               config, draws)
  for name, expected in reference.items():
    np.testing.assert_array_equal(ours[name].numpy(), expected, err_msg=name)
  assert ours["masked_lm_weights"].numpy().sum() > 64 * 5


def test_new_masks_each_epoch_in_the_pipeline(setup):
  _, config, path = setup
  dataset = pretraining_dataset(path, batch_size=16, max_seq_length=SEQ,
                                max_predictions_per_seq=PRED,
                                is_training=False, dynamic_masking=config,
                                seed=1)
  batches = list(dataset.repeat(2))
  first, second = batches[0], batches[len(batches) // 2]
  assert "token_boundary" not in first
  assert first["input_word_ids"].shape == (16, SEQ)
  assert first["masked_lm_positions"].dtype == tf.int32
  # Same instances, other masks.
  np.testing.assert_array_equal(first["input_mask"], second["input_mask"])
  assert not np.array_equal(first["masked_lm_positions"],
                            second["masked_lm_positions"])
  fraction = (first["masked_lm_weights"].numpy().sum() /
              first["input_mask"].numpy().sum())
  assert 0.1 < fraction < 0.2
