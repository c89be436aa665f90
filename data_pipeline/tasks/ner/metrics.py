"""NER metrics: entity-level precision, recall and F1 by seqeval, and token
accuracy.

The scheme's mode (tag_schemes.seqeval_options: strict for IOBES,
conlleval's for IOB2 / IOB1) is used, so `f1` is exactly
`seqeval.metrics.f1_score(gold, predicted, **options)` of the written
predictions.

Keys: precision, recall, f1 (micro over all entities), accuracy (words
whose tag is right), and per entity type TYPE_precision, TYPE_recall,
TYPE_f1, TYPE_number (gold entities of the type), as Hugging Face's seqeval
metric names them.
"""

from typing import Dict, Sequence

from data_pipeline.tasks.ner import tag_schemes


def evaluate(gold: Sequence[Sequence[str]],
             predicted: Sequence[Sequence[str]],
             scheme: str) -> Dict[str, float]:
  """Metrics of predicted tag sequences against the gold ones (module
  docstring)."""
  from seqeval import metrics
  gold = [list(tags) for tags in gold]
  predicted = [list(tags) for tags in predicted]
  options = tag_schemes.seqeval_options(scheme)
  results = {
      "precision": metrics.precision_score(gold, predicted, zero_division=0,
                                           **options),
      "recall": metrics.recall_score(gold, predicted, zero_division=0,
                                     **options),
      "f1": metrics.f1_score(gold, predicted, zero_division=0, **options),
      "accuracy": metrics.accuracy_score(gold, predicted),
  }
  report = metrics.classification_report(gold, predicted, output_dict=True,
                                         zero_division=0, **options)
  for kind, values in report.items():
    if kind.endswith(" avg"):
      continue
    results[f"{kind}_precision"] = values["precision"]
    results[f"{kind}_recall"] = values["recall"]
    results[f"{kind}_f1"] = values["f1-score"]
    results[f"{kind}_number"] = values["support"]
  return {k: float(v) for k, v in results.items()}
