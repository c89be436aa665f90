"""Metrics and predictions of one's own classification, regression and
multi-label tasks, computed with scikit-learn and SciPy.

  classification  accuracy, macro_f1, mcc (sklearn.metrics accuracy_score,
                  f1_score, matthews_corrcoef), per class precision/<name>,
                  recall/<name>, f1/<name>, support/<name>
                  (precision_recall_fscore_support), loss (log_loss)
  regression      pearson, spearman (scipy.stats.pearsonr, spearmanr),
                  mse = loss (mean_squared_error)
  multi_label     micro_f1, macro_f1 (f1_score), subset_accuracy (every
                  label right: accuracy_score), per label precision/recall/
                  f1/support, loss (mean binary cross-entropy: log_loss)

The best checkpoint is the one with the highest MAIN_METRIC of its task
type. Predictions (`test_predictions.jsonl`, `dev_predictions.jsonl`): one
JSON object per input record, in input order, with the record's id (if its
file has an id column) and
  classification  "label": name, "probabilities": {name: p}
  multi_label     "labels": [names above the threshold],
                  "probabilities": {name: p}
  regression      "score": value
"""

import json
from typing import Dict, List, Optional, Sequence
import warnings

import numpy as np

from albert_common import file_io
from data_pipeline.tasks.label_list import LabelList

MAIN_METRIC = {"classification": "accuracy", "regression": "pearson",
               "multi_label": "micro_f1"}


def softmax(logits: np.ndarray) -> np.ndarray:
  logits = np.asarray(logits, np.float64)
  exp = np.exp(logits - logits.max(-1, keepdims=True))
  return exp / exp.sum(-1, keepdims=True)


def sigmoid(logits: np.ndarray) -> np.ndarray:
  return 1.0 / (1.0 + np.exp(-np.asarray(logits, np.float64)))


def probabilities(label_list: LabelList, logits: np.ndarray) -> np.ndarray:
  """float64 [N, labels]: softmax (classification) or per-label sigmoid
  (multi_label) of the model's logits [N, labels]."""
  if label_list.task_type == "multi_label":
    return sigmoid(logits)
  return softmax(logits)


def multi_label_predictions(label_list: LabelList,
                            logits: np.ndarray) -> np.ndarray:
  """int [N, labels]: 1 where a label's probability is above the list's
  threshold."""
  threshold = 0.5 if label_list.threshold is None else label_list.threshold
  return (sigmoid(logits) > threshold).astype(np.int64)


def _per_class(names: Sequence[str], precision, recall, f1, support
              ) -> Dict[str, float]:
  out = {}
  for i, name in enumerate(names):
    out[f"precision/{name}"] = float(precision[i])
    out[f"recall/{name}"] = float(recall[i])
    out[f"f1/{name}"] = float(f1[i])
    out[f"support/{name}"] = float(support[i])
  return out


def compute_metrics(label_list: LabelList, targets: np.ndarray,
                    logits: np.ndarray) -> Dict[str, float]:
  """The metrics of the module docstring.

  Args:
    label_list: the run's labels.
    targets: as own_data.features.label_targets: int [N], float [N] or
      0/1 [N, labels].
    logits: the model's outputs, float [N, labels] ([N, 1] regression).
  """
  from sklearn import metrics
  logits = np.asarray(logits, np.float64)
  task_type = label_list.task_type
  if task_type == "regression":
    from scipy import stats
    scores = logits.reshape(-1)
    targets = np.asarray(targets, np.float64)
    constant = np.all(scores == scores[0]) or np.all(targets == targets[0])
    return dict(
        pearson=0.0 if constant else float(stats.pearsonr(scores,
                                                          targets)[0]),
        spearman=0.0 if constant else float(
            stats.spearmanr(scores, targets)[0]),
        mse=float(metrics.mean_squared_error(targets, scores)),
        loss=float(metrics.mean_squared_error(targets, scores)))
  classes = list(range(len(label_list.labels)))
  if task_type == "multi_label":
    targets = np.asarray(targets).astype(np.int64)
    predicted = multi_label_predictions(label_list, logits)
    precision, recall, f1, support = metrics.precision_recall_fscore_support(
        targets, predicted, labels=classes, zero_division=0)
    return dict(
        micro_f1=float(metrics.f1_score(targets, predicted, average="micro",
                                        zero_division=0)),
        macro_f1=float(metrics.f1_score(targets, predicted, average="macro",
                                        zero_division=0)),
        subset_accuracy=float(metrics.accuracy_score(targets, predicted)),
        loss=float(metrics.log_loss(targets.reshape(-1),
                                    sigmoid(logits).reshape(-1),
                                    labels=[0, 1])),
        **_per_class(label_list.labels, precision, recall, f1, support))
  targets = np.asarray(targets).astype(np.int64)
  predicted = logits.argmax(-1)
  precision, recall, f1, support = metrics.precision_recall_fscore_support(
      targets, predicted, labels=classes, zero_division=0)
  with warnings.catch_warnings():  # one class in a tiny dev set: MCC 0
    warnings.simplefilter("ignore", UserWarning)
    mcc = float(metrics.matthews_corrcoef(targets, predicted))
  return dict(
      accuracy=float(metrics.accuracy_score(targets, predicted)),
      macro_f1=float(metrics.f1_score(targets, predicted, labels=classes,
                                      average="macro", zero_division=0)),
      mcc=mcc,
      loss=float(metrics.log_loss(targets, softmax(logits), labels=classes)),
      **_per_class(label_list.labels, precision, recall, f1, support))


def prediction_records(label_list: LabelList, logits: np.ndarray,
                       record_ids: Optional[Sequence[Optional[str]]] = None
                      ) -> List[Dict]:
  """One dict per input, as the predictions file holds them (module
  docstring); "id" only where `record_ids` has one."""
  logits = np.asarray(logits, np.float64)
  records = []
  if label_list.task_type == "regression":
    records = [{"score": float(v)} for v in logits.reshape(-1)]
  else:
    names = label_list.labels
    probs = probabilities(label_list, logits)
    if label_list.task_type == "multi_label":
      chosen = multi_label_predictions(label_list, logits)
      for row, on in zip(probs, chosen):
        records.append({
            "labels": [n for n, flag in zip(names, on) if flag],
            "probabilities": dict(zip(names, map(float, row)))})
    else:
      for row in probs:
        records.append({"label": names[int(row.argmax())],
                        "probabilities": dict(zip(names, map(float, row)))})
  if record_ids is not None:
    records = [({"id": i} if i is not None else {}) | r
               for i, r in zip(record_ids, records)]
  return records


def write_predictions(path: str, records: Sequence[Dict]) -> str:
  """The records as JSON lines (UTF-8, not escaped), published
  atomically; returns path."""
  file_io.write_atomic(path, "".join(
      json.dumps(r, ensure_ascii=False) + "\n" for r in records))
  return path
