"""Instances and masking: statistics on real English text, and the rules."""

import numpy as np
import pytest

from data_pipeline.pretraining import instance_options
from data_pipeline.pretraining import mlm_masking
from data_pipeline.pretraining import sop_instances
from data_pipeline.pretraining import tfrecord_schema
from data_pipeline.pretraining import writer as pretraining_writer
from data_pipeline.pretraining.instance_options import InstanceOptions
from data_pipeline.pretraining.sop_instances import Document
from data_pipeline.tokenization.sentencepiece_tokenizer import (
  SentencePieceTokenizer,
)

SEQ = 128
PRED = 20


def _read(paths, max_seq_length=SEQ, max_predictions_per_seq=PRED):
  import tensorflow as tf
  spec = tfrecord_schema.name_to_features(max_seq_length,
                                          max_predictions_per_seq)
  records = list(tf.data.TFRecordDataset(paths).batch(1 << 20))
  parsed = tf.io.parse_example(records[0], spec)
  return {k: v.numpy() for k, v in parsed.items()}


@pytest.fixture(scope="module")
def tokenizer(spm_model):
  return SentencePieceTokenizer(spm_model, do_lower_case=True)


@pytest.fixture(scope="module")
def vocab(tokenizer):
  return instance_options.VocabInfo(
      vocab_size=tokenizer.vocab_size, cls_id=tokenizer.cls_id,
      sep_id=tokenizer.sep_id, mask_id=tokenizer.mask_id,
      start_piece=tokenizer.start_piece_table())


@pytest.fixture(scope="module")
def english(tmp_path_factory, english_corpus, spm_model):
  """(features, stats) of the English corpus, dupe_factor 5, seq 128."""
  out = str(tmp_path_factory.mktemp("english") / "train.tfrecord")
  stats = pretraining_writer.create_pretraining_data(
      english_corpus, out, spm_model,
      InstanceOptions(max_seq_length=SEQ, max_predictions_per_seq=PRED),
      dupe_factor=5, num_workers=1, show_progress=False)
  return _read([out]), stats


def test_masked_fraction_and_num_to_predict(english):
  features, stats = english
  lengths = features["input_mask"].sum(axis=1)
  counts = features["masked_lm_weights"].sum(axis=1)
  to_predict = np.minimum(PRED, np.maximum(1, np.rint(lengths * 0.15)))
  assert stats["instances"] > 5000
  assert np.all(counts <= to_predict)
  assert np.mean(counts == to_predict) > 0.99
  assert abs(counts.sum() / lengths.sum() - 0.15) < 0.005
  assert abs(stats["masked_fraction"] - 0.15) < 0.005


def test_ngram_distribution(english):
  _, stats = english
  drawn = stats["ngram_draw_fractions"][1:]
  np.testing.assert_allclose(drawn, [6 / 11, 3 / 11, 2 / 11], atol=0.01)
  spans = stats["span_word_fractions"][1:]
  # Shortening to fit the budget favours short spans a little.
  assert spans[0] > spans[1] > spans[2] > 0.08
  np.testing.assert_allclose(spans, [6 / 11, 3 / 11, 2 / 11], atol=0.1)


def test_replacement_80_10_10(english, vocab):
  features, stats = english
  weights = features["masked_lm_weights"] > 0
  rows = np.nonzero(weights)[0]
  at = np.take_along_axis(features["input_ids"],
                          features["masked_lm_positions"], axis=1)[weights]
  labels = features["masked_lm_ids"][weights]
  assert rows.size > 50000
  is_mask = at == vocab.mask_id
  kept = at == labels
  assert abs(is_mask.mean() - 0.8) < 0.01
  assert abs(kept.mean() - 0.1) < 0.01
  assert abs((~is_mask & ~kept).mean() - 0.1) < 0.01
  fractions = stats["replacement_fractions"]
  assert abs(fractions["mask"] - 0.8) < 0.01


def test_sop_balance(english):
  features, stats = english
  labels = features["next_sentence_labels"][:, 0]
  assert set(np.unique(labels)) == {0, 1}
  assert abs(labels.mean() - 0.5) < 0.02
  assert stats["swapped_fraction"] == pytest.approx(labels.mean())


def test_layout_special_tokens_never_masked(english, vocab):
  features, _ = english
  ids = features["input_ids"]
  lengths = features["input_mask"].sum(axis=1)
  seg = features["segment_ids"]
  n = len(ids)
  assert np.all(lengths <= SEQ) and np.all(lengths >= 5)
  assert np.all(ids[:, 0] == vocab.cls_id)
  last = ids[np.arange(n), lengths - 1]
  assert np.all(last == vocab.sep_id)
  # Segment A: positions [0, a_end], B after it; both non-empty.
  len_b = seg.sum(axis=1)
  len_a = lengths - len_b
  assert np.all(len_a >= 3) and np.all(len_b >= 2)
  assert np.all(ids[np.arange(n), len_a - 1] == vocab.sep_id)
  assert np.all(features["input_mask"][:, :][
      np.arange(SEQ)[None, :] >= lengths[:, None]] == 0)
  weights = features["masked_lm_weights"] > 0
  positions = features["masked_lm_positions"]
  labels = features["masked_lm_ids"][weights]
  assert not np.isin(labels, [vocab.cls_id, vocab.sep_id]).any()
  sep_positions = np.stack([np.zeros(n, int), len_a - 1, lengths - 1], 1)
  for row in range(0, n, 7):
    used = positions[row][weights[row]]
    assert np.all(np.diff(used) > 0)  # Sorted, distinct.
    assert not np.isin(used, sep_positions[row]).any()
  assert np.all(positions[~weights] == 0)
  assert np.all(features["masked_lm_ids"][~weights] == 0)


def test_token_boundary(english, vocab, tokenizer):
  features, _ = english
  ids = features["input_ids"][:200]
  lengths = features["input_mask"][:200].sum(axis=1)
  boundary = features["token_boundary"][:200]
  weights = features["masked_lm_weights"][:200] > 0
  original = ids.copy()
  np.put_along_axis(original, features["masked_lm_positions"][:200],
                    np.where(weights, features["masked_lm_ids"][:200],
                             np.take_along_axis(
                                 ids, features["masked_lm_positions"][:200],
                                 axis=1)), axis=1)
  table = tokenizer.start_piece_table()
  expected = table[original] | np.isin(original,
                                       [vocab.cls_id, vocab.sep_id])
  valid = np.arange(SEQ)[None, :] < lengths[:, None]
  np.testing.assert_array_equal(boundary[valid], expected[valid])
  assert np.all(boundary[~valid] == 0)


def _toy_documents(num_docs, sentences_per_doc, sentence_len, start_id=10):
  """Documents whose every token id is unique, so ranges identify them."""
  documents, pool, offset = [], [], 0
  for d in range(num_docs):
    starts, lengths = [], []
    for _ in range(sentences_per_doc):
      starts.append(offset)
      lengths.append(sentence_len)
      pool.extend(range(start_id + offset, start_id + offset + sentence_len))
      offset += sentence_len
    documents.append(Document(starts, lengths, key=1000 + d))
  return documents, np.array(pool, np.int32)


def _toy_vocab(size):
  return instance_options.VocabInfo(
      vocab_size=size, cls_id=2, sep_id=3, mask_id=4,
      start_piece=np.ones(size, bool))


def _doc_of(position, documents):
  for d, doc in enumerate(documents):
    if doc.starts[0] <= position < doc.starts[-1] + doc.lengths[-1]:
      return d
  raise AssertionError(position)


def test_single_segment_chunks_never_take_a_random_document():
  documents, pool = _toy_documents(50, 1, 40)
  options = InstanceOptions(max_seq_length=64, max_predictions_per_seq=10)
  spans, dropped = sop_instances.create_instance_spans(
      documents, pool, options, _toy_vocab(10000), random_seed=1,
      dupe_factor=4)
  assert dropped == 0 and len(spans.label) == 200
  for a, b in zip(spans.a_start, spans.b_start):
    assert _doc_of(a, documents) == _doc_of(b, documents)
  # Split halves, swapped half of the time: label 1 iff B precedes A.
  np.testing.assert_array_equal(spans.label, spans.b_start < spans.a_start)
  assert 0.3 < spans.label.mean() < 0.7

  leaky = InstanceOptions(max_seq_length=64, max_predictions_per_seq=10,
                          single_segment_random_document=True)
  spans, _ = sop_instances.create_instance_spans(
      documents, pool, leaky, _toy_vocab(10000), random_seed=1, dupe_factor=1)
  other = [_doc_of(a, documents) != _doc_of(b, documents)
           for a, b in zip(spans.a_start, spans.b_start)]
  assert all(other) and np.all(spans.label == 1)


def test_sop_pairs_are_consecutive_sentences():
  documents, pool = _toy_documents(20, 6, 20)
  options = InstanceOptions(max_seq_length=64, max_predictions_per_seq=10,
                            short_seq_prob=0.0)
  spans, _ = sop_instances.create_instance_spans(
      documents, pool, options, _toy_vocab(10000), random_seed=3,
      dupe_factor=3)
  first = np.where(spans.label == 1, spans.b_start, spans.a_start)
  second = np.where(spans.label == 1, spans.a_start, spans.b_start)
  first_len = np.where(spans.label == 1, spans.b_len, spans.a_len)
  assert np.all(first < second)
  assert np.all(first + first_len <= second)
  assert np.all(spans.a_len + spans.b_len <= 61)


def test_nsp_mode_uses_random_documents():
  documents, pool = _toy_documents(30, 6, 20)
  options = InstanceOptions(max_seq_length=64, max_predictions_per_seq=10,
                            random_next_sentence=True)
  spans, _ = sop_instances.create_instance_spans(
      documents, pool, options, _toy_vocab(10000), random_seed=3,
      dupe_factor=2)
  other = np.array([_doc_of(a, documents) != _doc_of(b, documents)
                    for a, b in zip(spans.a_start, spans.b_start)])
  np.testing.assert_array_equal(other, spans.label == 1)
  assert 0.3 < other.mean() < 0.7


def test_num_to_predict_rule_without_whole_words():
  documents, pool = _toy_documents(40, 4, 30)
  vocab = _toy_vocab(10000)
  for prob, pred in ((0.15, 20), (0.5, 7), (0.01, 20)):
    options = InstanceOptions(max_seq_length=100, max_predictions_per_seq=pred,
                              masked_lm_prob=prob, do_whole_word_mask=False)
    spans, _ = sop_instances.create_instance_spans(
        documents, pool, options, vocab, random_seed=5, dupe_factor=1)
    batch = mlm_masking.mask_instances(spans, pool, options, vocab)
    lengths = batch.input_mask.sum(axis=1)
    expected = np.minimum(pred, np.maximum(1, np.rint(lengths * prob)))
    np.testing.assert_array_equal(batch.masked_lm_weights.sum(axis=1),
                                  expected)


def test_whole_words_are_masked_together(vocab, english):
  features, _ = english
  weights = features["masked_lm_weights"] > 0
  positions = features["masked_lm_positions"]
  original = features["input_ids"].copy()
  np.put_along_axis(original, positions,
                    np.where(weights, features["masked_lm_ids"],
                             np.take_along_axis(original, positions, axis=1)),
                    axis=1)
  masked = np.zeros_like(original, bool)
  np.put_along_axis(masked, positions, weights, axis=1)
  masked[:, 0] = False
  boundary = features["token_boundary"] == 1
  # A masked continuation piece continues a masked word, unless it is the
  # first piece after [CLS]/[SEP] (words never cross them).
  continuation = masked & ~boundary
  previous_masked = np.zeros_like(masked)
  previous_masked[:, 1:] = masked[:, :-1]
  previous_special = np.zeros_like(masked)
  previous_special[:, 1:] = np.isin(original[:, :-1],
                                    [vocab.cls_id, vocab.sep_id])
  assert continuation.sum() > 1000
  assert np.all((previous_masked | previous_special)[continuation])
  # And a masked word start's continuation pieces are masked with it.
  next_continues = np.zeros_like(masked)
  next_continues[:, :-1] = ~boundary[:, 1:] & (
      features["input_mask"][:, 1:] == 1)
  starts = masked & boundary & next_continues
  following = np.zeros_like(masked)
  following[:, :-1] = masked[:, 1:]
  assert starts.sum() > 500
  # Budget-shortened spans never cut a word.
  assert np.all(following[starts])


def test_same_seed_same_instances_other_seed_differs(tokenizer, vocab):
  documents, pool = _toy_documents(10, 5, 25)
  options = InstanceOptions(max_seq_length=64, max_predictions_per_seq=10)
  runs = [sop_instances.create_instance_spans(
      documents, pool, options, vocab, random_seed=s, dupe_factor=2)[0]
          for s in (7, 7, 8)]
  for field in range(6):
    np.testing.assert_array_equal(runs[0][field], runs[1][field])
  assert not np.array_equal(runs[0].draws, runs[2].draws)


def test_options_validation():
  from albert_common.errors import UserInputError
  with pytest.raises(UserInputError, match="--max_seq_length=4"):
    InstanceOptions(max_seq_length=4).validate()
  with pytest.raises(UserInputError, match="--masked_lm_prob"):
    InstanceOptions(masked_lm_prob=1.5).validate()


def _official_truncate(len_a, len_b, max_tokens, fronts):
  """google-research/albert `truncate_seq_pair`, with given coin flips."""
  a, b = list(range(len_a)), list(range(100, 100 + len_b))
  step = 0
  while len(a) + len(b) > max_tokens:
    longer = a if len(a) > len(b) else b
    if fronts[step]:
      del longer[0]
    else:
      longer.pop()
    step += 1
  return a, b


def test_truncation_matches_the_official_loop():
  for trial in range(2000):
    rng = np.random.default_rng(trial)
    len_a, len_b = (int(x) for x in rng.integers(1, 40, 2))
    max_tokens = int(rng.integers(2, 60))
    excess = max(len_a + len_b - max_tokens, 0)
    fronts = (np.random.default_rng(trial).random(excess) < 0.5).tolist()
    a_front, a_back, b_front, b_back = sop_instances._truncation(
        len_a, len_b, max_tokens, np.random.default_rng(trial))
    a, b = _official_truncate(len_a, len_b, max_tokens, fronts)
    assert a == list(range(len_a))[a_front:len_a - a_back]
    assert b == list(range(100, 100 + len_b))[b_front:len_b - b_back]


def test_reused_generators_equal_fresh_ones():
  rngs = sop_instances._DocumentRngs()
  for seed, dupe, key in [(1, 0, 5), (12345, 3, 2**41 + 7), (1, 0, 5)]:
    reused = rngs(seed, dupe, key)
    fresh = sop_instances.document_rng(seed, dupe, key)
    np.testing.assert_array_equal(reused.integers(0, 9, 5),
                                  fresh.integers(0, 9, 5))
    np.testing.assert_array_equal(reused.random(3), fresh.random(3))


@pytest.mark.parametrize("favor_shorter", [True, False])
def test_ngram_draws_follow_one_over_n(favor_shorter):
  documents, pool = _toy_documents(60, 4, 30)
  vocab = _toy_vocab(10000)
  options = InstanceOptions(max_seq_length=128, max_predictions_per_seq=40,
                            masked_lm_prob=0.3,
                            favor_shorter_ngram=favor_shorter)
  spans, _ = sop_instances.create_instance_spans(
      documents, pool, options, vocab, random_seed=11, dupe_factor=10)
  batch = mlm_masking.mask_instances(spans, pool, options, vocab)
  drawn = batch.ngram_draws[1:] / batch.ngram_draws.sum()
  expected = np.array([6, 3, 2]) / 11
  if not favor_shorter:
    expected = expected[::-1]
  np.testing.assert_allclose(drawn, expected, atol=0.02)
