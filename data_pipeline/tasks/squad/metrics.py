"""SQuAD EM / F1 with the official evaluation scripts of tf-models-official.

`official/nlp/tools/squad_evaluate_v1_1.py` and `squad_evaluate_v2_0.py`
are the official SQuAD scripts (answer normalisation, max over gold answers,
HasAns / NoAns split, best no-answer threshold). Two presentation changes
only: v1.1 is reported in percent under the official names `exact_match` and
`f1` (the tf-models copy returns fractions and calls F1 `final_f1`), and the
v2.0 threshold search is reported as the official script names it,
`best_exact`, `best_exact_thresh`, `best_f1`, `best_f1_thresh` (tf-models
says `final_*`).
"""

from typing import Dict, List, Mapping, Optional

from official.nlp.tools import squad_evaluate_v1_1
from official.nlp.tools import squad_evaluate_v2_0


def evaluate_v1(dataset: List[dict], predictions: Mapping[str, str]
               ) -> Dict[str, float]:
  """SQuAD v1.1 EM and F1 (percent) of `predictions` (qid -> text).

  Args:
    dataset: the `data` list of the SQuAD JSON file.
    predictions: qid -> predicted text; a missing qid scores 0.
  """
  result = squad_evaluate_v1_1.evaluate(dataset, dict(predictions))
  return {"exact_match": 100.0 * result["exact_match"],
          "f1": 100.0 * result["final_f1"]}


def evaluate_v2(dataset: List[dict], predictions: Mapping[str, str],
                na_probs: Optional[Mapping[str, float]] = None
               ) -> Dict[str, float]:
  """The official SQuAD v2.0 evaluation.

  Args:
    dataset: the `data` list of the SQuAD JSON file; only questions with a
      prediction are scored (as the official script).
    predictions: qid -> predicted text, "" for no answer.
    na_probs: qid -> no-answer score (e.g. null odds); None = all 0.

  Returns:
    exact, f1, total, HasAns_exact/_f1/_total, NoAns_exact/_f1/_total (those
    present), best_exact, best_exact_thresh, best_f1, best_f1_thresh (the
    best scores when answering "" above a threshold on `na_probs`), and the
    precision-recall `pr_*` entries when na_probs are given.
  """
  result = squad_evaluate_v2_0.evaluate(
      dataset, dict(predictions),
      None if na_probs is None else dict(na_probs))
  out = {}
  for key, value in result.items():
    if key.startswith("final_"):
      key = "best_" + key[len("final_"):]
    out[key] = float(value)
  return out


def evaluate_v2_with_threshold(dataset: List[dict], squad_predictions,
                               threshold: Optional[float] = None):
  """Official ALBERT v2.0 evaluation: pick the null threshold, then score.

  As google-research/albert `evaluate_v2`: the best-F1 no-answer threshold
  is found on non-null predictions with their null odds (unless `threshold`
  is given), predictions above it become "", and those are scored.

  Args:
    squad_predictions: a `squad_postprocess.SquadPredictions` with
      null_odds.
    threshold: a fixed null-odds threshold, or None to tune it here.

  Returns:
    (metrics dict, thresholded SquadPredictions). The metrics hold the
    scores of the thresholded predictions, the `best_*` search on the
    non-null ones and `null_score_diff_threshold`.
  """
  non_null = squad_predictions.best_non_null
  search = evaluate_v2(dataset, non_null, squad_predictions.null_odds)
  if threshold is None:
    threshold = search["best_f1_thresh"]
  final = squad_predictions.with_threshold(threshold)
  metrics = {k: v for k, v in evaluate_v2(dataset, final.predictions).items()
             if not k.startswith(("best_", "pr_"))}
  metrics.update((k, v) for k, v in search.items()
                 if k.startswith(("best_", "pr_")))
  metrics["null_score_diff_threshold"] = float(threshold)
  return metrics, final
