"""The pure parts of benchmarks.pretraining.domain_adaptation: whole-word
MLM scoring on crafted cases, the code corpus (docstrings out, a split with
no file on both sides) and the balanced snippet task; its goal checks on
crafted figures."""

import numpy as np
import pytest

from benchmarks.pretraining import code_corpus
from benchmarks.pretraining import domain_adaptation_report as report
from benchmarks.pretraining import domain_figures
from benchmarks.pretraining import whole_word_mlm as ww

CLS, SEP, MASK = 2, 3, 4


def test_mask_whole_words_masks_every_piece_of_the_chosen_words():
  # Words spelled in 1, 3, 2 and 1 pieces; words 1 and 2 masked.
  word_ids = [[10], [11, 12, 13], [14, 15], [16]]
  s = ww.mask_whole_words(word_ids, [1, 2], CLS, SEP, MASK, seq_length=9)
  assert s.input_ids == [CLS, 10, MASK, MASK, MASK, MASK, MASK, 16, SEP]
  assert s.positions == [2, 3, 4, 5, 6]
  assert s.labels == [11, 12, 13, 14, 15]
  assert s.words == [(0, 3), (3, 5)]
  # One id too many for the sequence: none.
  assert ww.mask_whole_words(word_ids, [1], CLS, SEP, MASK, 8) is None


def test_a_word_counts_only_when_every_piece_is_predicted():
  s = ww.mask_whole_words([[10], [11, 12, 13], [14, 15], [16]], [0, 1, 2],
                          CLS, SEP, MASK, seq_length=16)
  # Word 0 right; word 1 wrong in its last piece only; word 2 right.
  assert ww.words_correct(s, [10, 11, 12, 99, 14, 15]) == [True, False, True]
  # Token accuracy would be 5/6 here; whole-word accuracy is 2/3.
  assert ww.words_correct(s, [10, 11, 12, 13, 14, 15]) == [True] * 3


class _Pretrainer:
  """Predicts the true id at every masked position of the sequences it
  knows (found by their input ids), except at (sequence, position) in
  `wrong`."""

  def __init__(self, seqs, seq_length, wrong):
    self.truth = {}
    for index, s in enumerate(seqs):
      key = tuple(s.input_ids + [0] * (seq_length - len(s.input_ids)))
      self.truth[key] = (index, dict(zip(s.positions, s.labels)))
    self.wrong = wrong

  def __call__(self, inputs, training):
    assert not training
    positions = inputs["masked_lm_positions"]
    logits = np.zeros(positions.shape + (50,), np.float32)
    for row, ids in enumerate(inputs["input_word_ids"]):
      index, truth = self.truth[tuple(ids.tolist())]
      for col, position in enumerate(positions[row].tolist()):
        wrong = (index, position) in self.wrong
        logits[row, col, 49 if wrong else truth.get(position, 0)] = 1.0
    return {"mlm_logits": logits}


def test_whole_word_accuracy_of_a_model_over_batches():
  seqs = [ww.mask_whole_words([[10, 11], [12]], [0], CLS, SEP, MASK, 8),
          ww.mask_whole_words([[13], [14, 15, 16]], [0, 1], CLS, SEP, MASK,
                              8),
          ww.mask_whole_words([[17], [18]], [1], CLS, SEP, MASK, 8)]
  # Sequence 1's second word misses one of its three pieces (position 3).
  model = _Pretrainer(seqs, 8, wrong={(1, 3)})
  result = ww.whole_word_accuracy(model, seqs, seq_length=8, batch_size=2)
  assert result == {"accuracy": pytest.approx(3 / 4), "words": 4}
  perfect = ww.whole_word_accuracy(_Pretrainer(seqs, 8, set()), seqs, 8, 2)
  assert perfect["accuracy"] == 1.0


class _WordTokenizer:
  """Spells a word in as many pieces as it has characters (ids 10+)."""
  cls_id, sep_id, mask_id, unk_id = CLS, SEP, MASK, 1

  def encode(self, text):
    return [10 + (ord(c) % 30) for c in text.replace(" ", "")]


def test_masked_words_depend_on_the_words_and_seed_only():
  window = ["short", "a" * 13, "x", "y", "zz", "w", "v"]
  chosen = ww.masked_words(window, seed=5)
  assert chosen == ww.masked_words(window, seed=5)
  assert len(chosen) == 1 and 1 not in chosen  # 13 characters: never masked
  assert ww.masked_words(["a" * 13], seed=5) == []
  # Only identifier-like words are masked, whatever the seed.
  code = ["self.close()", "return", "x[0]", "_name", "2nd", "+=", "if"]
  masked = {i for seed in range(200) for i in ww.masked_words(code, seed)}
  assert masked == {1, 3, 6}
  # Windows that do not fit under one of the tokenizers are left out.
  windows = [["ab", "cd"], ["abcdefgh", "ij"]]
  assert ww.fitting_windows(windows, [_WordTokenizer()], seq_length=6) == [0]


def test_unknown_rate_counts_unk_pieces():
  class Tokenizer:
    unk_id = 1

    def encode(self, text):
      return [1 if c == "?" else 5 for c in text]

  assert ww.unknown_rate(Tokenizer(), ["ab?", "?c"]) == pytest.approx(2 / 5)


SOURCE = '''"""Module docstring,
two lines."""
import os


class A:
  """Class docstring."""

  def f(self):
    """One line."""
    # a comment stays
    return "not a docstring"
'''


def test_code_lines_drop_docstrings_and_keep_code_and_comments():
  assert code_corpus.code_lines(SOURCE) == [
      "import os", "class A:", "def f(self):", "# a comment stays",
      'return "not a docstring"']
  assert code_corpus.code_lines("def (:\n") == []


def test_split_by_file_puts_no_file_on_both_sides():
  paths = [f"pkg/module_{i}.py" for i in range(23)]
  train, heldout = code_corpus.split_by_file(paths, every=5)
  assert not set(train) & set(heldout)
  assert sorted(train + heldout) == sorted(paths)
  assert len(heldout) == 5  # every 5th of 23, the first included
  assert code_corpus.split_by_file(["one.py"]) == ([], ["one.py"])


@pytest.fixture(scope="module")
def domain():
  return code_corpus.build_domain()


def test_domain_split_by_file_and_no_docstring_sentence(domain):
  for package, splits in domain.files.items():
    train = {p for p, _ in splits["train"]}
    heldout = {p for p, _ in splits["heldout"]}
    assert heldout and not train & heldout, package
  lines = {line for doc in domain.documents("train") for line in doc}
  assert "import os" in lines or "import sys" in lines
  # A sentence of the docstring corpus: asyncio.sleep's docstring.
  assert "Coroutine that completes after a given time (in seconds)." not in (
      lines)


def test_snippet_task_is_balanced_and_dev_comes_from_heldout_files(domain):
  dev = code_corpus.snippet_rows(domain, "heldout", per_class=20, seed=1)
  train = code_corpus.snippet_rows(domain, "train", per_class=30, seed=0)
  for rows, count in ((dev, 20), (train, 30)):
    labels = [r["label"] for r in rows]
    assert {p: labels.count(p) for p in code_corpus.TASK_PACKAGES} == {
        p: count for p in code_corpus.TASK_PACKAGES}
  heldout_text = {package: {s for _, lines in domain.files[package]["heldout"]
                            for s in code_corpus.snippets(lines)}
                  for package in code_corpus.TASK_PACKAGES}
  assert all(r["text"] in heldout_text[r["label"]] for r in dev)
  with pytest.raises(ValueError, match="fewer than"):
    code_corpus.snippet_rows(domain, "heldout", per_class=10**6, seed=1)


def _figures(step0_mlm_loss=1.0, ppw_new=1.5, extended=(0.80, 0.82, 0.81),
             general=(0.398, 0.401, 0.399)):
  """Crafted figures: old vocab's test accuracies (0.70, 0.72, 0.71) and
  general-text accuracies after continued pretraining (0.40 each)."""
  def spread(values):
    return report.spread(list(values))
  source_eval = {"mlm_loss": 1.0, "sop_loss": 0.5, "mlm_accuracy": 0.4,
                 "sop_accuracy": 0.9}
  return {"source_eval": source_eval,
          "step0": {"old vocab": {1: dict(source_eval,
                                          mlm_loss=step0_mlm_loss)},
                    "extended": {1: dict(source_eval)}},
          "pieces_per_word": {"old": 2.0, "new": ppw_new,
                              "domain_only": 1.9},
          "downstream": {"old vocab": spread([0.70, 0.72, 0.71]),
                         "extended": spread(extended)},
          "final_general": {"old vocab": spread([0.40, 0.40, 0.40]),
                            "extended": spread(general)},
          "segmentation_change": {"share": 0.125, "words": 8000},
          "general_whole_word": {"source": 0.3, "extended": 0.3},
          "general_same_records": {"source": 0.4, "extended": 0.4}}


def test_goal_checks_on_crafted_figures():
  better, general = ("better downstream (test, paired seeds)",
                     "general text barely moves")
  met = report.goals(_figures())
  assert all(g["met"] for g in met.values()), met
  assert met[better]["figure"].endswith("seed by seed: +10.0, +10.0, +10.0")
  assert "signs +++" in met[better]["figure"]
  assert "12.5% of the general text's 8,000 words" in met[general]["figure"]
  assert not report.goals(_figures(step0_mlm_loss=1.0 + 2e-5))[
      "exact start"]["met"]
  assert not report.goals(_figures(ppw_new=1.51))["fewer pieces"]["met"]
  # Per seed -4, 0, +7 points: a mean of +1 against a paired spread of 11.
  assert not report.goals(_figures(extended=(0.66, 0.72, 0.78)))[
      better]["met"]
  # Per seed +1, +1, +1 points over arms whose own spread is 2 points: met.
  assert report.goals(_figures(extended=(0.71, 0.73, 0.72)))[better]["met"]
  # General text after continued pretraining: the extended model 0.6
  # points below the old vocabulary's on the paired mean is not met.
  assert not report.goals(_figures(general=(0.394, 0.394, 0.394)))[
      general]["met"]
  assert report.goals(_figures(general=(0.396, 0.396, 0.396)))[
      general]["met"]


def test_a_downstream_contender_at_chance_is_refused():
  figures = _figures()
  figures["test_labels"] = ["a", "b", "c", "d", "e", "f"] * 75  # 1/6
  assert report.at_chance(figures) == []
  figures["downstream"]["old vocab"] = report.spread([0.18, 0.19, 0.20])
  (line,) = report.at_chance(figures)
  assert line.startswith("downstream old vocab: test accuracy 0.1900 is "
                         "within 2 binomial standard deviations")


def test_segmentation_change_on_a_crafted_pair_of_sentencepiece_models(
    tmp_path):
  """Two SentencePiece models of one corpus, the second extended by the
  tool's own edit with two pieces: the share of words segmented
  differently equals a count word by word, each word tokenized alone."""
  from data_pipeline.tokenization import sentencepiece_trainer
  from data_pipeline.tokenization import vocabulary_extension as vx
  from data_pipeline.tokenization.sentencepiece_tokenizer import (
    SentencePieceTokenizer,
  )
  words = ["alpha", "beta", "gamma", "delta", "theta", "kappa", "sigma",
           "omega", "lambda", "epsilon"]
  rng = np.random.default_rng(0)
  lines = [" ".join(rng.choice(words, 8)) for _ in range(400)]
  corpus = tmp_path / "corpus.txt"
  corpus.write_text("\n".join(lines) + "\n")
  sentencepiece_trainer.train_sentencepiece(
      str(corpus), str(tmp_path / "old"), vocab_size=30, do_lower_case=True)
  old = SentencePieceTokenizer(str(tmp_path / "old.model"))
  proto = vx.read_model_proto((tmp_path / "old.model").read_bytes(), "old")
  # The two words the old model spells with the most pieces.
  longest = sorted(words, key=lambda w: (-len(old.tokenize(w)), w))[:2]
  chosen = [vx.Candidate(f"\u2581{w}", 100, tuple(old.encode(w)), 0, i)
            for i, w in enumerate(longest)]
  assert all(len(c.spelling) > 1 for c in chosen)  # pieces that change
  (tmp_path / "new.model").write_bytes(vx.extend_sentencepiece(proto,
                                                               chosen))
  new = SentencePieceTokenizer(str(tmp_path / "new.model"))
  general = lines[:50]
  got = domain_figures.segmentation_change(old, new, general)
  every = [w for line in general for w in line.split()]
  changed = sum(old.tokenize(w) != new.tokenize(w) for w in every)
  assert got["words"] == len(every) == 400
  assert got["changed"] == changed == sum(w in longest for w in every)
  assert got["share"] == pytest.approx(changed / 400)
  assert 0 < got["share"] < 1
  same = domain_figures.segmentation_change(old, old, general)
  assert same["changed"] == 0 and same["pieces_old"] == same["pieces_new"]
  assert got["pieces_new"] == got["pieces_old"] - sum(
      (len(c.spelling) - 1) * every.count(c.piece[1:]) for c in chosen)


def test_pieces_per_example_and_the_share_cut():

  class Tokenizer:
    def tokenize(self, text):
      return text.split()
  # 10, 62 (fits [CLS] + 62 + [SEP] = 64) and 70 pieces.
  texts = ["a " * 10, "a " * 62, "a " * 70]
  got = domain_figures.pieces_per_example(Tokenizer(), texts, 64)
  assert got["mean"] == pytest.approx(142 / 3)
  assert got["truncated"] == pytest.approx(1 / 3)
  assert got["kept"] == pytest.approx((10 + 62 + 62) / 3)


def test_dev_and_test_alternate_within_each_label():
  rows = [{"text": str(i), "label": "ab"[i % 2]} for i in range(8)]
  split = domain_figures.split_dev_test(rows)
  assert [r["text"] for r in split["dev"]] == ["0", "1", "4", "5"]
  assert [r["text"] for r in split["test"]] == ["2", "3", "6", "7"]


class _CopyInput:
  """Predicts, at each masked position, the id the input holds there: right
  exactly where the masking kept the original piece (or drew it)."""

  def __call__(self, inputs, training):
    import tensorflow as tf
    assert not training
    seen = tf.gather(inputs["input_word_ids"],
                     inputs["masked_lm_positions"], batch_dims=1)
    return {"mlm_logits": tf.one_hot(seen, 3000) * 5.0}


def test_records_mlm_accuracy_equals_a_count_over_the_raw_records(
    pretraining_records):
  import tensorflow as tf

  class Source:
    max_seq_length = pretraining_records["max_seq_length"]
    max_predictions_per_seq = pretraining_records["max_predictions_per_seq"]
  raws = list(tf.data.TFRecordDataset(pretraining_records["path"]))
  assert len(raws) > 64
  right = total = 0.0
  # Full batches of 64, as run_pretraining's evaluation reads them.
  for raw in raws[:len(raws) // 64 * 64]:
    feature = tf.train.Example.FromString(raw.numpy()).features.feature
    ids = np.array(feature["input_ids"].int64_list.value)
    positions = np.array(feature["masked_lm_positions"].int64_list.value)
    labels = np.array(feature["masked_lm_ids"].int64_list.value)
    weights = np.array(feature["masked_lm_weights"].float_list.value)
    right += float(np.sum(weights * (ids[positions] == labels)))
    total += float(np.sum(weights))
  expected = right / total
  assert 0.02 < expected < 0.5  # kept pieces: about 10% of the masked
  measured = report.records_mlm_accuracy(_CopyInput(),
                                         pretraining_records["path"], Source)
  assert measured == pytest.approx(expected, abs=1e-9)


def test_punctuation_share_counts_pieces_without_letters_or_digits():
  class Tokenizer:
    def tokenize(self, text):
      return {"a": ["\u2581self", ".", "_", "sock", "\u2581(", "1]"],
              "b": ["\u2581", "x"]}[text]

  # ".", "_", "▁(" and the bare "▁": 4 of 8 pieces.
  assert domain_figures.punctuation_share(Tokenizer(), ["a", "b"]) == 0.5


def test_cut_curve_follows_the_tools_choice_and_says_when_supply_ends(
    spm_model):
  """Idioms joining letters to punctuation: more pieces read the held-out
  lines in fewer pieces; without the script split a piece may hold both,
  and the curve says where the domain ran out of candidates."""
  idioms = ["df.loc[", "np.nan", "self._cache[", "os.path.join(", "__init__"]
  names = ["alpha", "beta", "gamma", "delta", "omega", "kappa"]
  lines = [f"{a}{n} = {b}{n}) or {c}" for i, (a, b, c) in enumerate(
      (a, b, c) for a in idioms for b in idioms for c in idioms)
           for n in [names[i % len(names)]]]
  train, held_out = lines[::2] * 4, lines[1::2]
  curve = domain_figures.cut_curve(spm_model, train, held_out, sizes=(0, 5, 30))
  by = {(p["split"], p["n"]): p for p in curve}
  old = by[True, 0]["pieces_per_word"]
  assert by[False, 0]["pieces_per_word"] == old  # no piece added
  crossing = [by[False, n]["pieces_per_word"] for n in (0, 5, 30)]
  assert crossing[0] > crossing[1] > crossing[2], curve
  assert by[False, 5]["chosen"] == 5
  # The recipe's split finds few pieces here (the idioms are punctuation
  # around words the old model has), the crossing ones many more; both
  # run out before 30.
  assert by[True, 30]["chosen"] < by[False, 30]["chosen"] < 30, curve
  assert by[True, 30]["pieces_per_word"] > crossing[2]
  table = domain_figures.curve_table(curve, old)
  assert "all the domain supplies" in table
  assert (f"{crossing[2]:.3f} ({1 - crossing[2] / old:.1%} fewer), "
          f"{by[False, 30]['chosen']:,} pieces" in table)
