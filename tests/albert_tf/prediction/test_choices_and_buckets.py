"""tools.predict on multiple-choice exports (own and RACE): rows equal the
export's serving_default; exports record their length buckets; the
batching keeps each batch within one of them where the export pads to
them, and cuts sorted rows every batch_size rows where it runs at each
batch's own longest row."""

import csv
import json
import os
import shutil

import numpy as np
import pytest

from albert_tf.prediction import batching
from albert_tf.prediction import exported_model
from albert_tf.prediction import lengths
from albert_tf.prediction import own_length
from albert_tf.prediction import runner
from albert_tf.prediction.inputs import InputRow
from albert_tf.prediction.options import PredictOptions


def _questions(english_corpus, n, num_choices, seed=0):
  """n records {id, context, question, choices}: contexts of 5-50 words
  (some past the export's 64 tokens), questions with a blank `_` in
  every third."""
  with open(english_corpus, encoding="utf-8") as f:
    words = f.read().split()[:4000]
  rng = np.random.default_rng(seed)

  def text(low, high):
    start = int(rng.integers(len(words) - high))
    return " ".join(words[start:start + int(rng.integers(low, high))])
  return [{"id": f"q{i}", "context": text(5, 50),
           "question": text(2, 8) + (" _ ." if i % 3 == 0 else ""),
           "choices": [text(1, 6) for _ in range(num_choices)]}
          for i in range(n)]


def _serving_default(path, records, names):
  """The export's own outputs on all records at once."""
  import tensorflow as tf

  from albert_tf.exports import load_saved_model
  serve = load_saved_model(path).signatures["serving_default"]
  context, question, choices = names
  out = serve(**{context: tf.constant([r["context"] for r in records]),
                 question: tf.constant([r["question"] for r in records]),
                 choices: tf.constant([r["choices"] for r in records])})
  return {k: v.numpy() for k, v in out.items()}


def _rows(folder):
  return [json.loads(line) for name in sorted(os.listdir(folder))
          if name.startswith("part")
          for line in open(os.path.join(folder, name), encoding="utf-8")]


@pytest.mark.slow
@pytest.mark.parametrize("kind,layout", [("multiple_choice", "jsonl"),
                                         ("multiple_choice", "csv"),
                                         ("race", "jsonl")])
def test_choice_rows_equal_the_exports_own_outputs(
    kind, layout, prediction_exports, english_corpus, tmp_path):
  path = prediction_exports[kind]
  description = exported_model.describe(path)
  assert description.kind == "multiple_choice"
  assert description.num_choices == (3 if kind == "multiple_choice" else 4)
  records = _questions(english_corpus, 21, description.num_choices,
                       seed=len(kind + layout))
  if layout == "csv":  # SWAG's layout: sent1, sent2, ending0..ending2
    name = str(tmp_path / "in.csv")
    with open(name, "w", newline="", encoding="utf-8") as f:
      writer = csv.writer(f)
      writer.writerow(["id", "sent1", "sent2", "ending0", "ending1",
                       "ending2"])
      writer.writerows([[r["id"], r["context"], r["question"]] +
                        r["choices"] for r in records])
  else:
    name = str(tmp_path / "in.jsonl")
    with open(name, "w", encoding="utf-8") as f:
      f.writelines(json.dumps(r) + "\n" for r in records)
  manifest = runner.predict_files(PredictOptions(
      model=path, input_file=name, output_dir=str(tmp_path / "out"),
      id_column="id", rows_per_shard=8, batch_size=4))
  assert manifest["kind"] == "multiple_choice"
  assert manifest["rows"] == len(records)
  rows = _rows(str(tmp_path / "out"))
  assert [r["id"] for r in rows] == [r["id"] for r in records]
  want = _serving_default(path, records, description.choice_inputs)
  np.testing.assert_allclose([r["probabilities"] for r in rows],
                             want["probabilities"], atol=1e-5)
  assert [r["choice_index"] for r in rows] == list(want["answer_index"])
  chosen = want["choice" if kind == "multiple_choice" else "option"]
  assert [r["choice"] for r in rows] == [c.decode() for c in chosen]
  assert all(r["choice"] == rec["choices"][r["choice_index"]]
             for r, rec in zip(rows, records))
  if kind == "race":
    assert [r["answer"] for r in rows] == [a.decode() for a in
                                           want["answer"]]


@pytest.mark.slow
def test_a_question_with_another_number_of_choices_is_a_bad_row(
    prediction_exports, tmp_path):
  name = str(tmp_path / "in.jsonl")
  with open(name, "w", encoding="utf-8") as f:
    f.write(json.dumps({"question": "q", "choices": ["a", "b", "c"]}) + "\n")
    f.write(json.dumps({"question": "q", "choices": ["a", "b"]}) + "\n")
  options = PredictOptions(model=prediction_exports["multiple_choice"],
                           input_file=name, output_dir=str(tmp_path / "o"))
  with pytest.raises(Exception, match=r"in.jsonl:2: 2 choices; the export "
                     "takes 3"):
    runner.predict_files(options)
  assert not os.path.exists(tmp_path / "o")


@pytest.mark.slow  # the session's exports (~1 min to build)
def test_exports_record_their_length_buckets(prediction_exports, tmp_path):
  buckets = exported_model.length_buckets
  assert buckets(prediction_exports["classifier"]) == (16, 32, 64)
  assert buckets(prediction_exports["multiple_choice"]) == (32, 64)
  for kind in ("regression", "ner", "squad", "race", "encoder"):
    assert buckets(prediction_exports[kind]) == (64,), kind
  # An export written before the record: no buckets, today's batching.
  old = str(tmp_path / "old")
  shutil.copytree(prediction_exports["classifier"], old)
  os.remove(os.path.join(old, "assets", "length_buckets.json"))
  assert buckets(old) == ()
  assert exported_model.describe(old).length_buckets == ()
  assert lengths.token_counter(old, ()) is None


def test_batches_never_mix_two_buckets():
  lengths_ = [5, 40, 17, 16, 64, 33, 3, 15, 30, 31, 32, 50]
  groups = batching.batches(lengths_, 3, (16, 32, 64))
  assert sorted(i for g in groups for i in g) == list(range(12))
  for group in groups:
    assert len(group) <= 3
    assert len({batching.bucket_of(lengths_[i], (16, 32, 64))
                for i in group}) == 1
  # Sorted by length, cut at each bucket's end.
  assert [[lengths_[i] for i in g] for g in groups] == [
      [3, 5, 15], [16], [17, 30, 31], [32], [33, 40, 50], [64]]
  # No buckets: the rows alone cut the batches (as before).
  assert [len(g) for g in batching.batches(lengths_, 5)] == [5, 5, 2]


def test_batches_at_own_length_cross_buckets():
  """A predictor at its own longest row: sorted rows cut every batch_size
  rows, ceil(n / batch_size) batches, across the buckets (where the
  bucket rule above makes 6 batches of these 12 rows, 4 of them short)."""
  lengths_ = [5, 40, 17, 16, 64, 33, 3, 15, 30, 31, 32, 50]
  groups = batching.batches(lengths_, 3, (16, 32, 64), at_own_length=True)
  assert [[lengths_[i] for i in g] for g in groups] == [
      [3, 5, 15], [16, 17, 30], [31, 32, 33], [40, 50, 64]]
  assert len(groups) == -(-len(lengths_) // 3)
  # Two buckets only (16 | 32): 10 rows across them, batches of 4.
  crafted = [20, 9, 31, 12, 16, 25, 17, 2, 30, 14]
  groups = batching.batches(crafted, 4, (16, 32), at_own_length=True)
  assert [len(g) for g in groups] == [4, 4, 2]
  flat = [crafted[i] for g in groups for i in g]
  assert flat == sorted(crafted)
  assert any(len({batching.bucket_of(crafted[i], (16, 32)) for i in g}) == 2
             for g in groups)
  # At the buckets (serving_default) the same rows never mix two.
  at_buckets = batching.batches(crafted, 4, (16, 32))
  assert [[crafted[i] for i in g] for g in at_buckets] == [
      [2, 9, 12, 14], [16], [17, 20, 25, 30], [31]]
  # Ties keep the rows' order.
  assert batching.batches([7, 7, 7], 2, (8, 16), at_own_length=True) == [
      [0, 1], [2]]


def test_predictions_ask_the_predictor_whether_it_runs_at_own_length():
  """batching.own_length reads the predictor's flag (a stand-in without
  one: at the buckets); predictions batch accordingly."""
  tokens = {"a": 5, "b": 40, "c": 17, "d": 16, "e": 64, "f": 33}
  rows = [InputRow(i, "x", t) for i, t in enumerate(tokens)]

  class Stand:
    def __init__(self, own):
      if own is not None:
        self.own_length = own
      self.seen = []

    def predict(self, texts_a, texts_b=None):
      self.seen.append([tokens[t] for t in texts_a])
      return [{"text": t} for t in texts_a]

  count = lambda rs: [tokens[r.text_a] for r in rs]  # noqa: E731
  seen = {}
  for own in (True, False, None):
    stand = Stand(own)
    out = batching.predictions(rows, stand.predict, 3, (16, 32, 64), count,
                               batching.own_length(stand))
    assert [o["text"] for o in out] == list(tokens)
    seen[own] = stand.seen
  assert seen[True] == [[5, 16, 17], [33, 40, 64]]
  assert seen[False] == seen[None] == [[5, 16], [17], [33, 40, 64]]


@pytest.mark.slow  # the session's exports
def test_token_counts_equal_the_preprocessors_input_mask(
    prediction_exports, english_corpus):
  """The counter's lengths are what the export's packing makes of a row."""
  import tensorflow as tf

  from albert_tf.exports import load_saved_model
  path = prediction_exports["encoder"]
  counter = lengths.TokenCounter(
      os.path.join(path, "preprocessor", "assets"), 64)
  with open(english_corpus, encoding="utf-8") as f:
    texts = [line.strip() for line in f if line.strip()][:40]
  texts += ["Café à Paris 北京", "a, b,c 1,000 words"]
  pre = load_saved_model(os.path.join(path, "preprocessor"))
  one = pre.signatures["serving_default"](sentences=tf.constant(texts))
  rows = [InputRow(i, "x", t) for i, t in enumerate(texts)]
  assert counter.lengths(rows) == list(
      one["input_mask"].numpy().sum(-1))
  two = pre.signatures["two_segments"](text_a=tf.constant(texts),
                                       text_b=tf.constant(texts[::-1]))
  rows = [InputRow(i, "x", a, b) for i, (a, b) in
          enumerate(zip(texts, texts[::-1]))]
  counted = np.array(counter.lengths(rows))
  packed = two["input_mask"].numpy().sum(-1)
  # Equal where nothing is truncated (the pair truncation is the export's).
  assert (counted[counted < 64] == packed[counted < 64]).all()
  assert (packed[counted == 64] == 64).all()


def _words_texts(english_corpus, n, seed=3):
  """n texts of 1-45 words (some past the export's 64 tokens)."""
  with open(english_corpus, encoding="utf-8") as f:
    words = f.read().split()[:3000]
  rng = np.random.default_rng(seed)
  return [" ".join(words[s:s + int(k)]) for s, k in zip(
      rng.integers(0, 2000, n), rng.integers(1, 45, n))]


def test_padded_length_is_the_longest_row_within_its_bucket():
  assert [own_length.padded_length(n, 64) for n in (1, 3, 9, 57, 64)] == [
      1, 3, 9, 57, 64]
  assert own_length.padded_length(20, 16) == 16  # never past the bucket
  assert [own_length.padded_length(n, 64, multiple=8) for n in (
      1, 8, 9, 30, 57, 63)] == [8, 8, 16, 32, 64, 64]


def test_rows_are_sorted_by_tokens_with_one_bucket_too():
  """An export of one bucket (its seq_length) still batches rows of alike
  token counts (each batch then runs at its own longest row)."""
  tokens = {"a": 5, "b": 40, "c": 17, "d": 16, "e": 64, "f": 33}
  rows = [InputRow(i, "x", t) for i, t in enumerate(tokens)]
  seen = []

  def predict(texts_a, texts_b=None):
    seen.append([tokens[t] for t in texts_a])
    return [{"text": t} for t in texts_a]

  out = batching.predictions(rows, predict, 3, (64,), lambda rs: [
      tokens[r.text_a] for r in rs])
  assert [o["text"] for o in out] == list(tokens)
  assert seen == [[5, 16, 17], [33, 40, 64]]


@pytest.mark.slow  # the session's exports
def test_each_batch_runs_at_its_own_longest_row(
    prediction_exports, english_corpus, tmp_path):
  """Through the runner, counted at the model call: every batch of the
  classifier export (buckets 16, 32, 64) is fed at its longest row,
  within its bucket (own_length.padded_length), rows
  sorted by tokens and cut every 8 rows across buckets (batching.batches);
  fewer tokens than at the buckets; the rows are the export's own
  serving_default outputs."""
  path = prediction_exports["classifier"]
  texts = _words_texts(english_corpus, 60)
  name = str(tmp_path / "in.txt")
  with open(name, "w", encoding="utf-8") as f:
    f.writelines(t + "\n" for t in texts)
  description = exported_model.describe(path)
  predictor = exported_model.Predictor(path, description)
  fed = []  # (rows, length) of each model call
  call = predictor.model_call

  def counting(**inputs):
    fed.append(tuple(inputs["input_word_ids"].shape))
    return call(**inputs)

  predictor.model_call = counting
  assert predictor.own_length
  runner.predict_files(PredictOptions(
      model=path, input_file=name, output_dir=str(tmp_path / "out"),
      rows_per_shard=30, batch_size=8), lambda *_: predictor, description)
  counter = lengths.token_counter(path, description.length_buckets)
  want, at_buckets = [], 0
  for shard in (texts[:30], texts[30:]):
    counts = sorted(counter.lengths([InputRow(0, "x", t) for t in shard]))
    groups = batching.batches(counts, 8, (16, 32, 64), at_own_length=True)
    assert len(groups) == 4  # 30 rows: no partial batch at a bucket
    for group in groups:
      longest = max(counts[i] for i in group)
      bucket = batching.bucket_of(longest, (16, 32, 64))
      want.append((len(group), own_length.padded_length(longest, bucket)))
      at_buckets += len(group) * bucket
  assert fed == want
  fed_tokens = sum(n * length for n, length in fed)
  assert fed_tokens < at_buckets, (fed_tokens, at_buckets)
  rows = _rows(str(tmp_path / "out"))
  import tensorflow as tf
  want_p = predictor._serve(sentences=tf.constant(texts))
  got = [[r["probabilities"][n] for n in ("billing", "other", "shipping")]
         for r in rows]
  np.testing.assert_allclose(got, want_p["probabilities"].numpy(),
                             atol=1e-5)
  assert [r["label"] for r in rows] == [
      v.decode() for v in want_p["label"].numpy()]


@pytest.mark.slow  # the session's exports
@pytest.mark.parametrize("kind", ["classifier", "regression", "encoder"])
def test_a_rows_outputs_do_not_depend_on_its_batch(
    kind, prediction_exports, english_corpus):
  """A short row alone (fed at its own length) and beside a 64-token row
  (fed at 64): the same outputs to float rounding (the attention mask
  keeps the padding out)."""
  path = prediction_exports[kind]
  predictor = exported_model.Predictor(path, exported_model.describe(path))
  widths, call = [], predictor.model_call

  def counting(**inputs):
    widths.append(int(inputs["input_word_ids"].shape[-1]))
    return call(**inputs)

  predictor.model_call = counting
  short, long_ = "a short row.", " ".join(_words_texts(english_corpus, 4))
  pair = kind == "regression"
  alone = predictor.raw_outputs([short], [short] if pair else None)
  mixed = predictor.raw_outputs([short, long_],
                                [short, long_] if pair else None)
  assert widths[0] <= 16 and widths[1] == 64, widths
  for key in {"encoder": ("pooled_output",), "classifier": (
      "probabilities", "logits"), "regression": ("predictions",)}[kind]:
    # Measured on this project's machine: at most 3.9e-7 apart (logits;
    # pooled 3.5e-7, the regression's value 2.4e-7, probabilities 6e-8):
    # float32 rounding of matmuls of another width.
    np.testing.assert_allclose(alone[key][0], mixed[key][0], atol=2e-6)
