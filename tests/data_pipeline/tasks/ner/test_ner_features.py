"""NER features: tags on first pieces, windows of long sentences, one
prediction per word from its max-context window; raw-text words."""

import numpy as np
import pytest

from data_pipeline.tasks.ner import features
from data_pipeline.tasks.ner import ner_files
from data_pipeline.tasks.ner import word_splitting
from data_pipeline.tokenization.factory import make_tokenizer
from tests.scripts import ner_data

SEQ, STRIDE = 32, 12


@pytest.fixture(scope="module")
def tokenizer(spm_model):
  return make_tokenizer(spm_model)


@pytest.fixture(scope="module")
def sentences():
  # Every third one long: several windows at SEQ 32.
  return ner_data.english_sentences(60, seed=7, long_every=3)


def _featurize(ner_file, tokenizer, labels):
  index = {t: i for i, t in enumerate(labels)}
  return features.featurize([s.words for s in ner_file.sentences],
                            [[index[t] for t in s.tags]
                             for s in ner_file.sentences],
                            tokenizer, SEQ, STRIDE)


def test_jsonl_and_conll_renderings_give_the_same_features(
    tmp_path, tokenizer, sentences):
  labels = sorted({t for _, tags in sentences for t in tags})
  conll = ner_files.read_ner_file(ner_data.write_conll(
      tmp_path / "s.conll", sentences))
  jsonl = ner_files.read_ner_file(ner_data.write_jsonl(
      tmp_path / "s.jsonl", sentences, labels), label_names=",".join(labels))
  a, b = (_featurize(f, tokenizer, labels) for f in (conll, jsonl))
  assert sorted(a.arrays) == sorted(b.arrays)
  for key in a.arrays:
    np.testing.assert_array_equal(a.arrays[key], b.arrays[key])
  np.testing.assert_array_equal(a.word_window, b.word_window)
  np.testing.assert_array_equal(a.word_position, b.word_position)
  assert a.num_windows > len(sentences)  # long sentences: windows


def test_every_word_is_predicted_once_from_its_max_context_window(
    tokenizer, sentences):
  labels = sorted({t for _, tags in sentences for t in tags})
  index = {t: i for i, t in enumerate(labels)}
  tag_ids = [[index[t] for t in tags] for _, tags in sentences]
  feats = features.featurize([w for w, _ in sentences], tag_ids, tokenizer,
                             SEQ, STRIDE)
  words = [w for s, _ in sentences for w in s]
  assert len(feats.word_window) == len(words) == sum(feats.sentence_lengths)
  labels_at = feats.arrays[features.LABEL_IDS][feats.word_window,
                                               feats.word_position]
  # The word's tag sits at the piece it is read from: its first piece.
  np.testing.assert_array_equal(labels_at, [t for s in tag_ids for t in s])
  ids = feats.arrays["input_word_ids"]
  first_pieces = [features.word_piece_ids(tokenizer, [w])[0][0]
                  for w in words]
  np.testing.assert_array_equal(ids[feats.word_window, feats.word_position],
                                first_pieces)
  # Pieces after the first are ignored: one tag per word in the windows
  # that read it, at most.
  tagged = (feats.arrays[features.LABEL_IDS] >= 0).sum()
  assert tagged >= len(words)
  # Brute force: the chosen window has the most context, the first such.
  at, window = 0, 0
  for s, (sentence, _) in enumerate(sentences):
    pieces = features.word_piece_ids(tokenizer, sentence)
    starts = np.cumsum([0] + [len(p) for p in pieces])[:-1]
    spans = features.windows(sum(len(p) for p in pieces), SEQ - 2, STRIDE)
    assert spans[0][0] == 0 and sum(
        1 for _ in spans) == 1 + max(0, -(-(starts[-1] + len(pieces[-1]) -
                                             (SEQ - 2)) // STRIDE))
    for w, piece in enumerate(starts):
      scores = [min(piece - st, st + n - 1 - piece) + 0.01 * n
                if st <= piece < st + n else -1 for st, n in spans]
      best = int(np.argmax(scores))
      assert feats.word_window[at + w] == window + best
      assert feats.word_position[at + w] == piece - spans[best][0] + 1
    at += len(sentence)
    window += len(spans)
  assert window == feats.num_windows


def test_a_word_without_pieces_gets_unk_and_empty_sentences_no_window(
    tokenizer):
  ids = features.word_piece_ids(tokenizer, ["e\u0301", "\u0301", "\u200b"])
  assert ids[1] == [tokenizer.unk_id] and all(ids)
  feats = features.featurize([["a", "\u0301"], []], None, tokenizer, SEQ,
                             STRIDE)
  assert feats.num_windows == 1 and feats.sentence_lengths == [2, 0]
  assert (feats.arrays[features.LABEL_IDS] == features.IGNORED).all()
  assert feats.by_sentence(["x", "y"]) == [["x", "y"], []]


TRICKY = ["Héllo  wörld!", "naïve café\tRÉSUMÉ", "emoji 😀👍🏽 ok❤️ end",
          "北京欢迎你，Beijing！", "  lots   of    spaces  ", "e\u0301 \u0301x",
          "zero\u200bwidth nbsp\u00a0here", "$100 3.14 a-b 'q'", "", "   "]


@pytest.mark.parametrize("text", TRICKY)
def test_words_and_their_character_offsets(text):
  words = word_splitting.split_words(text)
  for word in words:
    assert text[word.start:word.end] == word.word
    assert not any(c.isspace() for c in word.word)
  kept = "".join(c for c in text if not c.isspace())
  assert "".join(w.word for w in words) == kept
  for word in words:  # punctuation, symbols and ideographs stand alone
    if any(word_splitting.is_own_word(c) for c in word.word):
      assert len(word.word) == 1


def test_words_of_a_mixed_text():
  assert [w.word for w in word_splitting.split_words(
      "Anna's 2 cafés, 北京 😀!")] == [
          "Anna", "'", "s", "2", "cafés", ",", "北", "京", "😀", "!"]
