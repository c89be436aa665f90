"""NER and SQuAD on an export's ONNX or LiteRT file: what their raw-text
serving_default does in-graph, done host-side around the file's token-ids
model, with the Python code fine-tuning uses for the same steps.

  NER    words and their character offsets (data_pipeline.tasks.ner.
         word_splitting), each word's pieces and the windows of
         fine-tuning (ner.features, the seq_length and doc_stride the
         export recorded in ner_settings.json), the file on the windows,
         each word's tag from its max-context window, the entities
         (ner.entity_spans).
  SQuAD  the question's and context's pieces with their characters and
         the windows (squad.features, through exports.text_runner with the
         settings the export recorded in squad_settings.json), the file on
         the windows, the best valid span (squad.postprocess) and its
         characters in the context.

Both return the export's serving_default outputs (names, dtypes, padding),
so exported_model.Predictor.named makes the same rows of them. The
SavedModel's own graph mirrors these Python steps (ner_serving,
squad_serving); squad_export's docstring lists where its tokenizer can
differ from Python's (~150 rare code points).

Imports no TensorFlow.
"""

import math
from typing import Callable, Dict, Sequence

import numpy as np

from data_pipeline.tasks.label_list import LabelList
from data_pipeline.tasks.ner import entity_spans
from data_pipeline.tasks.ner import features as ner_features
from data_pipeline.tasks.ner import word_splitting
from data_pipeline.tasks.squad import examples as squad_examples
from data_pipeline.tasks.squad import postprocess as squad_postprocess

# int32 inputs [n, seq] -> the file's outputs (converted_model's _run).
RunFn = Callable[[Dict[str, np.ndarray]], Dict[str, np.ndarray]]


def _padded(rows: Sequence[Sequence], fill, dtype) -> np.ndarray:
  """[len(rows), longest row] of `rows`, `fill` after each row's end."""
  width = max((len(r) for r in rows), default=0)
  out = np.full([len(rows), width], fill, dtype)
  for i, row in enumerate(rows):
    out[i, :len(row)] = row
  return out


def ner_outputs(run: RunFn, tokenizer, labels: LabelList, seq_length: int,
                doc_stride: int, texts: Sequence[str]
               ) -> Dict[str, np.ndarray]:
  """ner_export's serving_default outputs of `texts`.

  Args:
    run: the file (tag_logits [windows, seq or a bucket, tags]).
    tokenizer: the export's (data_pipeline.tokenization).
    labels: its tags (labels.json), in logit order, and their scheme.
    seq_length, doc_stride: its windows (ner_settings.json).
    texts: the texts.

  Returns:
    entity_label bytes, entity_start, entity_end int32 (Unicode
    characters), entity_score float32: [batch, most entities], padded
    with b"", -1, -1, 0.
  """
  words = [word_splitting.split_words(t) for t in texts]
  features = ner_features.featurize([[w.word for w in ws] for ws in words],
                                    None, tokenizer, seq_length, doc_stride)
  if features.num_windows:
    logits = run({k: v for k, v in features.arrays.items()
                  if k != ner_features.LABEL_IDS})["tag_logits"]
    probabilities = ner_features.word_probabilities(logits, features)
  else:  # no text has a word
    probabilities = np.zeros([0, len(labels.labels)])
  tags = features.by_sentence([labels.labels[i]
                               for i in probabilities.argmax(-1)])
  scores = features.by_sentence(probabilities.max(-1).tolist())
  entities = [entity_spans.spans(text, w, t, s, labels.scheme)
              for text, w, t, s in zip(texts, words, tags, scores)]
  return dict(
      entity_label=_padded([[e["label"].encode("utf-8") for e in row]
                            for row in entities], b"", object),
      entity_start=_padded([[e["start"] for e in row] for row in entities],
                           -1, np.int32),
      entity_end=_padded([[e["end"] for e in row] for row in entities],
                         -1, np.int32),
      entity_score=_padded([[e["score"] for e in row] for row in entities],
                           0.0, np.float32))


def squad_outputs(run: RunFn, text_runner, contexts: Sequence[str],
                  questions: Sequence[str]) -> Dict[str, np.ndarray]:
  """squad_export's serving_default outputs of (context, question) pairs.

  Args:
    run: the file (start_logits, end_logits; the v2.0 answer-class
      model: its beam and cls_logits).
    text_runner: exports.text_runner.TextRunner of the file (its
      tokenizer, kind "squad" or "squad_beam", and the export's
      squad_settings).
    contexts, questions: one each a row.

  Returns:
    answer bytes, start, end int32 (Unicode characters into the context,
    -1 without an answer), score float32: [batch]; SQuAD v2.0 (the export
    recorded a null_score_diff_threshold) also best_answer, null_odds,
    no_answer_probability.
  """
  examples = [squad_examples.SquadExample(qas_id=str(i), question_text=q,
                                          paragraph_text=c)
              for i, (c, q) in enumerate(zip(contexts, questions))]
  features, inputs = text_runner.squad_features(examples)
  outputs = run(inputs)
  results = {f.unique_id: {k: v[i] for k, v in outputs.items()}
             for i, f in enumerate(features)}
  settings = text_runner.squad_settings
  beam = text_runner.kind == "squad_beam"
  threshold = settings.null_score_diff_threshold
  version_2 = beam or threshold is not None
  threshold = 0.0 if threshold is None else threshold
  arguments = (examples, features, results, settings.n_best_size,
               settings.max_answer_length)
  # Text, score and null odds as predictions.json's; the offsets of the
  # same (first-ranked) span.
  if beam:
    predicted = squad_postprocess.postprocess_v2(*arguments)
  else:
    predicted = squad_postprocess.postprocess_v1(
        *arguments, cls_null_score=version_2)
  ranked = squad_postprocess.ranked_candidates(*arguments, beam=beam)
  rows = {k: [] for k in ("answer", "start", "end", "score", "best_answer",
                          "null_odds", "no_answer_probability")}
  for example, (feats, candidates) in zip(examples, ranked):
    best = predicted.nbest[example.qas_id][0]
    start, end = -1, -1
    if candidates:
      start, end = squad_postprocess.answer_characters(
          example, feats[candidates[0].feature_index], candidates[0])
    text = best["text"]
    if version_2:
      null_odds = predicted.null_odds[example.qas_id]
      rows["best_answer"].append(text.encode("utf-8"))
      rows["null_odds"].append(null_odds)
      rows["no_answer_probability"].append(_sigmoid(null_odds))
      if null_odds > threshold:
        text, start, end = "", -1, -1
    rows["answer"].append(text.encode("utf-8"))
    rows["start"].append(start)
    rows["end"].append(end)
    rows["score"].append(best["start_log_prob"] + best["end_log_prob"])
  dtypes = dict(answer=object, best_answer=object, start=np.int32,
                end=np.int32)
  return {k: np.array(v, dtypes.get(k, np.float32))
          for k, v in rows.items() if v or k in ("answer", "start", "end",
                                                 "score")}


def _sigmoid(x: float) -> float:
  if x >= 0:
    return 1.0 / (1.0 + math.exp(-x))
  z = math.exp(x)
  return z / (1.0 + z)
