"""SQuAD reading, alignment, windows, post-processing and official metrics."""

import json

import numpy as np
from official.nlp.tools import squad_evaluate_v1_1
from official.nlp.tools import squad_evaluate_v2_0
import pytest

from albert_common.errors import UserInputError
from data_pipeline.tasks.squad import examples as squad_examples
from data_pipeline.tasks.squad import features as squad_features
from data_pipeline.tasks.squad import metrics as squad_metrics
from data_pipeline.tasks.squad import postprocess as squad_postprocess
from data_pipeline.tokenization import sentencepiece_offsets
from data_pipeline.tokenization.sentencepiece_tokenizer import (
  SentencePieceTokenizer,
)

CONTEXT = ("  The  Café   Münster, opened in 1,000 BC,  serves \ufb01ne "
           "``crêpes'' and nai\u0308ve   tea to Ελληνικά guests.  ")
ANSWERS = ["The", "Café", "Münster", "1,000 BC", "serves \ufb01ne",
           "``crêpes''", "nai\u0308ve   tea", "Ελληνικά", "guests"]


@pytest.fixture(scope="module")
def tokenizer(spm_model):
  return SentencePieceTokenizer(spm_model, do_lower_case=True)


def _write(tmp_path, content, name="squad.json"):
  path = tmp_path / name
  path.write_text(json.dumps(content), encoding="utf-8")
  return str(path)


def _answer_spans(features, examples):
  """The answer text each training feature's target points at ("" = none)."""
  out = []
  for f in features:
    if f.is_impossible:
      out.append("")
      continue
    example = examples[f.example_index]
    s, e = f.doc_index(f.start_position), f.doc_index(f.end_position)
    out.append(example.paragraph_text[f.tok_start_to_orig_index[s]:
                                      f.tok_end_to_orig_index[e] + 1].strip())
  return out


def _squad(context, answers, v2=False):
  qas = []
  for i, text in enumerate(answers):
    qa = {"id": f"q{i}", "question": f"where is answer {i}?",
          "answers": [{"text": text, "answer_start": context.index(text)}]}
    if v2:
      qa["is_impossible"] = False
    qas.append(qa)
  return {"data": [{"title": "t", "paragraphs": [{"context": context,
                                                  "qas": qas}]}]}


def test_normalize_with_offsets_matches_preprocess_text():
  from data_pipeline.tokenization.sentencepiece_tokenizer import preprocess_text
  for text in (CONTEXT, "ΟΔΟΣ  x", "a\u0301b", "  ''q''  "):
    normalized, offsets = sentencepiece_offsets.normalize_with_offsets(text)
    assert normalized == preprocess_text(text, lower=True)
    assert len(offsets) == len(normalized)
    assert offsets == sorted(offsets)


def test_pieces_map_back_to_original_text(tokenizer):
  para = squad_features.tokenize_paragraph(tokenizer, CONTEXT)
  for t, piece in enumerate(para.pieces):
    covered = CONTEXT[para.tok_start_to_orig_index[t]:
                      para.tok_end_to_orig_index[t] + 1]
    normalized = sentencepiece_offsets.normalize_with_offsets(covered)[0]
    # Equal, except where return original char (the "\ufb01" ligature) splits
    # into several pieces: then the piece is part of it.
    assert piece.lstrip("\u2581") in normalized.replace(" ", ""), piece
    if "\ufb01" not in covered:
      assert normalized.replace(" ", "") == piece.lstrip("\u2581"), piece
  # Every original non-space character belongs to exactly return piece.
  assert len(para.orig_to_tok_index) == len(CONTEXT)


@pytest.mark.parametrize("max_seq_length,doc_stride", [(64, 16), (24, 3)])
def test_answer_span_maps_back_to_exact_answer(tmp_path, tokenizer,
                                               max_seq_length, doc_stride):
  path = _write(tmp_path, _squad(CONTEXT, ANSWERS))
  examples = squad_examples.read_squad_examples(path, is_training=True)
  features = squad_features.convert_examples_to_features(
      examples, tokenizer, max_seq_length, doc_stride, max_query_length=8,
      is_training=True)
  spans = _answer_spans(features, examples)
  found = {}
  edges = set()
  for feature, text in zip(features, spans):
    assert len(feature.input_ids) == max_seq_length
    if feature.is_impossible:
      assert feature.start_position == feature.end_position == 0
      continue
    assert text == examples[feature.example_index].answer_text
    found[feature.example_index] = True
    window = len(feature.tok_start_to_orig_index)
    if feature.doc_index(feature.start_position) == 0:
      edges.add("first")
    if feature.doc_index(feature.end_position) == window - 1:
      edges.add("last")
  assert sorted(found) == list(range(len(ANSWERS)))
  if max_seq_length == 24:  # several windows: answers sit on their edges
    assert len(features) > 3 * len(ANSWERS)
    assert edges == {"first", "last"}


def test_windows_cover_paragraph_with_stride(tmp_path, tokenizer):
  path = _write(tmp_path, _squad(CONTEXT, ["guests"]))
  examples = squad_examples.read_squad_examples(path, is_training=False)
  features = squad_features.convert_examples_to_features(
      examples, tokenizer, max_seq_length=20, doc_stride=4,
      max_query_length=5, is_training=False)
  para = squad_features.tokenize_paragraph(tokenizer, CONTEXT)
  assert len(features[0].tokens) == 20  # full window: 1 + 5 + 1 + 12 + 1
  assert features[0].tokens[:2] == ["[CLS]", "\u2581where"]
  assert features[0].tokens[6] == "[SEP]"
  starts = [f.tok_start_to_orig_index[0] for f in features]
  assert starts == [para.tok_start_to_orig_index[4 * i]
                    for i in range(len(features))]
  f = features[1]
  assert f.p_mask[:8] == [0, 1, 1, 1, 1, 1, 1, 0]
  assert f.segment_ids[:8] == [0] * 7 + [1]
  # Every piece has its max context in exactly return window.
  count = {}
  for f in features:
    for k, is_max in enumerate(f.token_is_max_context):
      pos = para.tok_start_to_orig_index.index(f.tok_start_to_orig_index[k])
      count[pos] = count.get(pos, 0) + int(is_max)
  assert set(count.values()) == {1}


def test_reader_errors_name_file_and_question(tmp_path):
  with pytest.raises(UserInputError, match="'data' list"):
    squad_examples.read_squad_examples(_write(tmp_path, {"version": "1.1"}),
                                       True)
  bad = _squad(CONTEXT, ["Café"])
  bad["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["answer_start"] += 3
  path = _write(tmp_path, bad, "bad.json")
  with pytest.raises(UserInputError, match=r"bad\.json.*question q0.*not in "
                     "the context"):
    squad_examples.read_squad_examples(path, is_training=True)
  # eval: texts only
  squad_examples.read_squad_examples(path, is_training=False)
  v2 = _squad(CONTEXT, ["Café"], v2=True)
  v2["data"][0]["paragraphs"][0]["qas"][0].update(is_impossible=True,
                                                   answers=[])
  path = _write(tmp_path, v2, "v2.json")
  with pytest.raises(UserInputError, match="--version_2_with_negative"):
    squad_examples.read_squad_examples(path, is_training=True)
  examples = squad_examples.read_squad_examples(path, True, True)
  assert examples[0].is_impossible and examples[0].answer_start == -1
  (tmp_path / "broken.json").write_text("{", encoding="utf-8")
  with pytest.raises(UserInputError, match="broken.json"):
    squad_examples.read_squad_examples(str(tmp_path / "broken.json"), True)


# --- post-processing on crafted logits ------------------------------------


def _one_window(tmp_path, tokenizer, context):
  path = _write(tmp_path, _squad(context, ["value"]))
  examples = squad_examples.read_squad_examples(path, is_training=False)
  features = squad_features.convert_examples_to_features(
      examples, tokenizer, max_seq_length=32, doc_stride=8,
      max_query_length=8, is_training=False)
  assert len(features) == 1
  return examples, features


def _position_of(feature, word):
  for k, piece in enumerate(feature.tokens):
    if k >= feature.doc_offset and piece.lstrip("\u2581") == word:
      return k
  raise AssertionError(word)


def test_postprocess_v1_picks_best_valid_span(tmp_path, tokenizer):
  examples, (f,) = _one_window(tmp_path, tokenizer,
                               "return value file list data")
  seq = len(f.input_ids)
  start, end = np.zeros(seq), np.zeros(seq)
  # Highest raw logits in the question and reversed spans: invalid.
  start[1], end[1] = 50.0, 50.0
  start[_position_of(f, "data")], end[_position_of(f, "value")] = 40.0, 40.0
  start[_position_of(f, "file")] = 10.0
  end[_position_of(f, "list")] = 10.0
  out = squad_postprocess.postprocess_v1(
      examples, [f], {f.unique_id: dict(start_logits=start, end_logits=end)},
      n_best_size=5, max_answer_length=5)
  assert out.predictions == {"q0": "file list"}
  nbest = out.nbest["q0"]
  assert len({e["text"] for e in nbest}) == len(nbest) <= 5
  assert abs(sum(e["probability"] for e in nbest) - 1.0) < 1e-6
  # max_answer_length 1 rules the value-word span out.
  out = squad_postprocess.postprocess_v1(
      examples, [f], {f.unique_id: dict(start_logits=start, end_logits=end)},
      n_best_size=5, max_answer_length=1)
  assert len(out.predictions["q0"].split()) == 1


def test_postprocess_v2_beam_and_null_threshold(tmp_path, tokenizer):
  examples, (f,) = _one_window(tmp_path, tokenizer,
                               "return value file list data")
  p3, p4, p5 = (_position_of(f, w) for w in ("file", "list", "data"))
  result = dict(
      start_top_log_probs=np.array([-0.1, -2.0]),
      start_top_index=np.array([p3, p5]),
      # start file: ends data (-0.5), value (invalid: before start);
      # start data: end data (-0.1).
      end_top_log_probs=np.array([-0.5, -0.2, -0.1, -3.0]),
      end_top_index=np.array([p5, p3 - 1, p5, p4]),
      cls_logits=np.array(1.5))
  out = squad_postprocess.postprocess_v2(
      examples, [f], {f.unique_id: result}, n_best_size=3,
      max_answer_length=5)
  assert out.predictions == {"q0": "file list data"}  # -0.6 beats -2.1
  assert [e["text"] for e in out.nbest["q0"]] == ["file list data", "data"]
  assert out.null_odds == {"q0": 1.5}
  assert out.with_threshold(1.0).predictions == {"q0": ""}
  assert out.with_threshold(2.0).predictions == {"q0": "file list data"}


def test_postprocess_cls_null_score(tmp_path, tokenizer):
  examples, (f,) = _one_window(tmp_path, tokenizer,
                               "return value file list data")
  seq = len(f.input_ids)
  start, end = np.zeros(seq), np.zeros(seq)
  start[0], end[0] = 3.0, 3.0  # null score 6
  start[_position_of(f, "value")], end[_position_of(f, "value")] = 2.0, 2.5
  out = squad_postprocess.postprocess_v1(
      examples, [f], {f.unique_id: dict(start_logits=start, end_logits=end)},
      cls_null_score=True, null_score_diff_threshold=0.0)
  assert out.null_odds["q0"] == pytest.approx(6.0 - 4.5)
  assert out.predictions == {"q0": ""}
  assert out.best_non_null == {"q0": "value"}
  assert out.with_threshold(2.0).predictions == {"q0": "value"}


def test_write_predictions_files(tmp_path):
  out = squad_postprocess.SquadPredictions(
      {"a": "x"}, {"a": [{"text": "x", "probability": 1.0,
                          "start_log_prob": 0.0, "end_log_prob": 0.0}]},
      {"a": -1.0})
  out.write(str(tmp_path))
  assert json.loads((tmp_path / "predictions.json").read_text()) == {"a": "x"}
  assert json.loads((tmp_path / "null_odds.json").read_text()) == {"a": -1.0}
  assert (tmp_path / "nbest_predictions.json").exists()
  assert not list(tmp_path.glob("*.tmp"))


# --- metrics ----------------------------------------------------------------


def _dataset(qas):
  return [{"paragraphs": [{"context": "c", "qas": [
      {"id": qid, "question": "?", "answers": [{"text": t} for t in answers]}
      for qid, answers in qas]}]}]


def test_metrics_v1_hand_computed_and_official():
  dataset = _dataset([("a", ["the Big Cat", "cat"]), ("b", ["red fox"]),
                      ("c", ["blue"]), ("d", ["x y z w"])])
  predictions = {"a": "big cat.", "b": "fox", "c": "green", "d": "x y"}
  result = squad_metrics.evaluate_v1(dataset, predictions)
  # a: EM after normalisation; b: F1 2*(1*.5)/1.5 = 2/3; c: 0; d: P=1 R=.5.
  assert result["exact_match"] == pytest.approx(25.0)
  assert result["f1"] == pytest.approx(100 * (1 + 2 / 3 + 0 + 2 / 3) / 4)
  official = squad_evaluate_v1_1.evaluate(dataset, predictions)
  assert result["exact_match"] == pytest.approx(100 * official["exact_match"])
  assert result["f1"] == pytest.approx(100 * official["final_f1"])
  # A missing prediction scores 0.
  assert squad_metrics.evaluate_v1(dataset, {"a": "cat"})["exact_match"] == 25


def test_metrics_v2_has_no_ans_and_best_threshold():
  dataset = _dataset([("a", ["cat"]), ("b", ["dog"]), ("n1", []),
                      ("n2", [])])
  predictions = {"a": "cat", "b": "bird", "n1": "", "n2": "fish"}
  result = squad_metrics.evaluate_v2(dataset, predictions)
  assert result["exact"] == pytest.approx(50.0)
  assert result["HasAns_exact"] == pytest.approx(50.0)
  assert result["NoAns_exact"] == pytest.approx(50.0)
  assert result["HasAns_total"] == 2 and result["NoAns_total"] == 2
  # Null odds ascending a, b, n1, n2; the score counts no-answers as right
  # (2), then adds a (+1), b (+0: wrong), n1 (0), n2 (-1: "fish"): best
  # 3 of 4, first reached after a, so the threshold is a's odds 0.1.
  na = {"a": 0.1, "b": 0.2, "n1": 0.8, "n2": 0.9}
  result = squad_metrics.evaluate_v2(dataset, predictions, na)
  official = squad_evaluate_v2_0.evaluate(dataset, predictions, na)
  assert result["best_exact"] == pytest.approx(75.0)
  assert result["best_exact_thresh"] == pytest.approx(0.1)
  assert result["best_exact"] == official["final_exact"]
  assert result["best_f1_thresh"] == official["final_f1_thresh"]
  # The ALBERT flow: tune on non-null predictions, then answer "" above.
  out = squad_postprocess.SquadPredictions(
      predictions={}, null_odds=na,
      nbest={q: [{"text": t or "w"}] for q, t in predictions.items()})
  metrics, final = squad_metrics.evaluate_v2_with_threshold(dataset, out)
  assert final.predictions == {"a": "cat", "b": "", "n1": "", "n2": ""}
  assert metrics["exact"] == pytest.approx(75.0)
  assert metrics["null_score_diff_threshold"] == pytest.approx(0.1)
  assert metrics["NoAns_exact"] == pytest.approx(100.0)
