"""SQuAD post-processing: per-window model outputs -> answer texts.

As google-research/albert `squad_utils.py` (`accumulate_predictions_v1/v2`,
`write_predictions_v1/v2`):

  * v1 (span labeler): the `n_best_size` best starts and ends of every
    window; keep spans inside the paragraph part, starting at a piece that
    has its maximum context in this window, end >= start, at most
    `max_answer_length` pieces; rank by start + end logit; drop duplicate
    texts; keep `n_best_size`.
  * v2 (answer-class model): the same on the beam of `start_n_top` starts
    and, per start, `end_n_top` ends; the null odds of an example are the
    smallest answer-class logit over its windows (higher = more likely
    unanswerable).
  * v2 with the BERT-style [CLS] null score (a span labeler trained with
    impossible windows pointing at [CLS]): null odds = min over windows of
    start_logit[0] + end_logit[0], minus the best non-null span score.

A question is answered "" when its null odds exceed
`null_score_diff_threshold`.

Results are dicts keyed by feature unique id holding numpy arrays:
  v1 / cls: start_logits, end_logits [seq];
  v2: start_top_log_probs, start_top_index [start_n_top],
      end_top_log_probs, end_top_index [start_n_top * end_n_top],
      cls_logits (scalar).
"""

import collections
import dataclasses
import functools
import json
import math
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from albert_common import file_io
from data_pipeline.tasks.squad.examples import SquadExample
from data_pipeline.tasks.squad.features import SquadFeature


@dataclasses.dataclass
class Candidate:
  feature_index: int
  start_index: int  # window piece index
  end_index: int
  start_score: float
  end_score: float

  @property
  def score(self) -> float:
    return self.start_score + self.end_score


@dataclasses.dataclass
class SquadPredictions:
  """Post-processing output, one entry per question id.

  Attributes:
    predictions: qid -> answer text ("" = no answer).
    nbest: qid -> list of {"text", "probability", "start_log_prob",
      "end_log_prob"} (the official nbest_predictions.json entries).
    null_odds: qid -> float (v2 only; empty for v1).
  """
  predictions: Dict[str, str]
  nbest: Dict[str, List[dict]]
  null_odds: Dict[str, float]

  def with_threshold(self, threshold: float) -> "SquadPredictions":
    """Predictions answering "" where the null odds exceed `threshold`."""
    predictions = collections.OrderedDict()
    for qid, text in self.best_non_null.items():
      predictions[qid] = "" if self.null_odds[qid] > threshold else text
    return dataclasses.replace(self, predictions=predictions)

  @property
  def best_non_null(self) -> Dict[str, str]:
    return collections.OrderedDict(
        (qid, entries[0]["text"]) for qid, entries in self.nbest.items())

  def write(self, output_dir: str) -> List[str]:
    """Writes predictions.json, nbest_predictions.json (and null_odds.json).

    Each file is written to a temporary name and renamed.
    """
    files = [("predictions.json", self.predictions),
             ("nbest_predictions.json", self.nbest)]
    if self.null_odds:
      files.append(("null_odds.json", self.null_odds))
    paths = []
    for name, content in files:
      path = file_io.join(output_dir, name)
      file_io.write_atomic(path, json.dumps(content, indent=4) + "\n")
      paths.append(path)
    return paths


def _best_indexes(scores: Sequence[float], n_best_size: int) -> List[int]:
  """Indexes of the `n_best_size` largest scores, best first (stable)."""
  order = sorted(range(len(scores)), key=lambda i: scores[i], reverse=True)
  return order[:n_best_size]


def _softmax(scores: Sequence[float]) -> List[float]:
  if not scores:
    return []
  top = max(scores)
  exps = [math.exp(s - top) for s in scores]
  total = sum(exps)
  return [e / total for e in exps]


def _valid(feature: SquadFeature, start: int, end: int,
           max_answer_length: int) -> Optional[Tuple[int, int]]:
  """Window piece indexes of input positions start..end, or None if invalid."""
  s, e = feature.doc_index(start), feature.doc_index(end)
  if s is None or e is None or e < s:
    return None
  if not feature.token_is_max_context[s]:
    return None
  if e - s + 1 > max_answer_length:
    return None
  return s, e


def _group(examples, features):
  by_example = collections.defaultdict(list)
  for feature in features:
    by_example[feature.example_index].append(feature)
  return [by_example[i] for i in range(len(examples))]


def answer_characters(example: SquadExample, feature: SquadFeature,
                      candidate: Candidate) -> Tuple[int, int]:
  """[start, end) of a candidate's answer in `example.paragraph_text`
  (Unicode characters): its pieces' characters without whitespace at
  either end (the n-best's text is paragraph_text[start:end])."""
  first = feature.tok_start_to_orig_index[candidate.start_index]
  raw = example.paragraph_text[
      first:feature.tok_end_to_orig_index[candidate.end_index] + 1]
  start = first + len(raw) - len(raw.lstrip())
  return start, start + len(raw.strip())


def ranked_candidates(examples: Sequence[SquadExample],
                      features: Sequence[SquadFeature],
                      results: Mapping[int, Mapping[str, np.ndarray]],
                      n_best_size: int = 20, max_answer_length: int = 30,
                      beam: bool = False
                     ) -> List[Tuple[List[SquadFeature], List[Candidate]]]:
  """Per example, its features and its valid spans best first (the order
  the n-best is cut from; equal scores keep window, start, end order).

  Args:
    examples, features, results, n_best_size, max_answer_length: as
      `postprocess_v1`.
    beam: results of the SQuAD v2.0 answer-class model (`postprocess_v2`).
  """
  window_candidates = (
      functools.partial(_beam_candidates,
                        max_answer_length=max_answer_length) if beam else
      functools.partial(_span_candidates, n_best_size=n_best_size,
                        max_answer_length=max_answer_length))
  ranked = []
  for feats in _group(examples, features):
    candidates = []
    for fi, feature in enumerate(feats):
      candidates.extend(window_candidates(fi, feature,
                                          results[feature.unique_id])[0])
    ranked.append((feats, sorted(candidates, key=lambda c: c.score,
                                 reverse=True)))
  return ranked


def _nbest(example: SquadExample, features: Sequence[SquadFeature],
           candidates: List[Candidate], n_best_size: int,
           empty: Tuple[str, float]) -> List[dict]:
  """Ranked, text-deduplicated n-best entries of one example."""
  candidates = sorted(candidates, key=lambda c: c.score, reverse=True)
  seen, entries = set(), []
  for c in candidates:
    if len(entries) >= n_best_size:
      break
    start, end = answer_characters(example, features[c.feature_index], c)
    text = example.paragraph_text[start:end]
    if text in seen:
      continue
    seen.add(text)
    entries.append(dict(text=text, start_log_prob=c.start_score,
                        end_log_prob=c.end_score))
  if not entries:
    # No valid span (rare): a placeholder, as the official code.
    entries.append(dict(text=empty[0], start_log_prob=empty[1],
                        end_log_prob=empty[1]))
  probs = _softmax([e["start_log_prob"] + e["end_log_prob"] for e in entries])
  return [collections.OrderedDict(
      text=e["text"], probability=p, start_log_prob=e["start_log_prob"],
      end_log_prob=e["end_log_prob"]) for e, p in zip(entries, probs)]


def postprocess_v1(examples: Sequence[SquadExample],
                   features: Sequence[SquadFeature],
                   results: Mapping[int, Mapping[str, np.ndarray]],
                   n_best_size: int = 20, max_answer_length: int = 30,
                   cls_null_score: bool = False,
                   null_score_diff_threshold: float = 0.0
                  ) -> SquadPredictions:
  """Answers from start / end logits (span labeler).

  Args:
    examples, features: as read by `squad_examples` and converted by
      `squad_features`.
    results: unique_id -> {"start_logits": [seq], "end_logits": [seq]}.
    n_best_size, max_answer_length: see the module docstring.
    cls_null_score: SQuAD v2.0 with the BERT-style [CLS] null score: compute
      null odds and answer "" above `null_score_diff_threshold`.
  """
  out = _postprocess(
      examples, features, results, n_best_size, empty=("empty", 0.0),
      window_candidates=functools.partial(
          _span_candidates, n_best_size=n_best_size,
          max_answer_length=max_answer_length),
      null_odds=_cls_null_odds if cls_null_score else None)
  if cls_null_score:
    out = out.with_threshold(null_score_diff_threshold)
  return out


def postprocess_v2(examples: Sequence[SquadExample],
                   features: Sequence[SquadFeature],
                   results: Mapping[int, Mapping[str, np.ndarray]],
                   n_best_size: int = 20, max_answer_length: int = 30,
                   null_score_diff_threshold: Optional[float] = None
                  ) -> SquadPredictions:
  """Answers from the beam of the SQuAD v2.0 model.

  Args:
    results: unique_id -> {"start_top_log_probs", "start_top_index"
      [start_n_top], "end_top_log_probs", "end_top_index"
      [start_n_top * end_n_top] (row i: the ends for start i), "cls_logits"}.
    null_score_diff_threshold: answer "" where the null odds exceed it;
      None never answers "" (the first pass of the official evaluation).
  """
  out = _postprocess(
      examples, features, results, n_best_size, empty=("", -1e6),
      window_candidates=functools.partial(
          _beam_candidates, max_answer_length=max_answer_length),
      null_odds=_class_null_odds)
  if null_score_diff_threshold is not None:
    out = out.with_threshold(null_score_diff_threshold)
  return out


def _postprocess(examples, features, results, n_best_size: int,
                 empty: Tuple[str, float], window_candidates,
                 null_odds=None) -> SquadPredictions:
  """The n-best answers (and null odds) of every example.

  Args:
    examples, features, results, n_best_size: as `postprocess_v1`.
    empty: (text, log prob) of the placeholder when no span is valid.
    window_candidates: (feature index, feature, result) -> (list of
      Candidate, the window's null score).
    null_odds: (lowest null score of the windows, n-best entries) -> the
      example's null odds; None: no null odds (v1).
  """
  predictions, nbest_json, null_odds_json = (collections.OrderedDict(),
                                             collections.OrderedDict(),
                                             collections.OrderedDict())
  for example, feats in zip(examples, _group(examples, features)):
    candidates, score_null = [], math.inf
    for fi, feature in enumerate(feats):
      found, window_null = window_candidates(fi, feature,
                                             results[feature.unique_id])
      candidates.extend(found)
      score_null = min(score_null, window_null)
    entries = _nbest(example, feats, candidates, n_best_size, empty=empty)
    nbest_json[example.qas_id] = entries
    predictions[example.qas_id] = entries[0]["text"]
    if null_odds is not None:
      null_odds_json[example.qas_id] = null_odds(score_null, entries)
  return SquadPredictions(predictions, nbest_json, null_odds_json)


def _span_candidates(fi: int, feature: SquadFeature, result,
                     n_best_size: int, max_answer_length: int):
  """v1: spans of the best starts and ends; null score at [CLS].

  Only the window's own positions (len(feature.tokens)) are ranked: no span
  starts or ends in padding, and padding's logits would take n-best places
  (the official code ranks them too), so that the n-best would depend on how
  far the batch was padded (length buckets pad less)."""
  length = len(feature.tokens)
  start_logits = np.asarray(result["start_logits"], np.float64)[:length]
  end_logits = np.asarray(result["end_logits"], np.float64)[:length]
  candidates = []
  for start in _best_indexes(start_logits, n_best_size):
    for end in _best_indexes(end_logits, n_best_size):
      span = _valid(feature, start, end, max_answer_length)
      if span is not None:
        candidates.append(Candidate(fi, span[0], span[1],
                                    float(start_logits[start]),
                                    float(end_logits[end])))
  return candidates, start_logits[0] + end_logits[0]


def _beam_candidates(fi: int, feature: SquadFeature, result,
                     max_answer_length: int):
  """v2: spans of the model's start / end beam; null score its class logit."""
  start_top = np.asarray(result["start_top_index"])
  start_lp = np.asarray(result["start_top_log_probs"], np.float64)
  end_top = np.asarray(result["end_top_index"])
  end_lp = np.asarray(result["end_top_log_probs"], np.float64)
  end_n_top = len(end_top) // len(start_top)
  candidates = []
  for i in range(len(start_top)):
    for j in range(end_n_top):
      k = i * end_n_top + j
      span = _valid(feature, int(start_top[i]), int(end_top[k]),
                    max_answer_length)
      if span is not None:
        candidates.append(Candidate(fi, span[0], span[1],
                                    float(start_lp[i]), float(end_lp[k])))
  return candidates, float(result["cls_logits"])


def _cls_null_odds(score_null, entries: List[dict]) -> float:
  """[CLS] null score minus the best non-null span's."""
  best = entries[0]["start_log_prob"] + entries[0]["end_log_prob"]
  return float(score_null - best)


def _class_null_odds(score_null: float, entries: List[dict]) -> float:
  """The answer-class logit (the lowest over the windows)."""
  del entries
  return score_null
