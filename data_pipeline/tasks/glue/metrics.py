"""GLUE dev metrics and test submission files.

Metrics (as the GLUE leaderboard): Matthews correlation (CoLA), accuracy,
F1 of the positive class + accuracy (MRPC, QQP), Pearson + Spearman (STS-B).
Submissions: one `index<TAB>prediction` TSV per test split, named as the
leaderboard expects (`CoLA.tsv`, `MNLI-m.tsv`, ...).
"""

from typing import Dict, List, Sequence

import numpy as np

from albert_common import file_io
from data_pipeline.tasks.glue.examples import GlueTask


def accuracy(labels, predictions) -> float:
  labels, predictions = np.asarray(labels), np.asarray(predictions)
  return float(np.mean(labels == predictions))


def f1_score(labels, predictions, positive=1) -> float:
  """F1 of the positive class (0 when it is never predicted nor present)."""
  labels, predictions = np.asarray(labels), np.asarray(predictions)
  tp = np.sum((predictions == positive) & (labels == positive))
  fp = np.sum((predictions == positive) & (labels != positive))
  fn = np.sum((predictions != positive) & (labels == positive))
  denominator = 2 * tp + fp + fn
  return float(2 * tp / denominator) if denominator else 0.0


def matthews_corr(labels, predictions) -> float:
  """Matthews correlation of binary labels (0 when undefined, as sklearn)."""
  labels = np.asarray(labels).astype(bool)
  predictions = np.asarray(predictions).astype(bool)
  tp = float(np.sum(predictions & labels))
  tn = float(np.sum(~predictions & ~labels))
  fp = float(np.sum(predictions & ~labels))
  fn = float(np.sum(~predictions & labels))
  denominator = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
  return float((tp * tn - fp * fn) / denominator) if denominator else 0.0


def pearson(x, y) -> float:
  x = np.asarray(x, np.float64) - np.mean(x)
  y = np.asarray(y, np.float64) - np.mean(y)
  denominator = np.sqrt(np.sum(x * x) * np.sum(y * y))
  return float(np.sum(x * y) / denominator) if denominator else 0.0


def _average_ranks(x) -> np.ndarray:
  """Ranks 1..n, ties sharing their mean rank (as scipy.stats.rankdata)."""
  x = np.asarray(x, np.float64)
  order = np.argsort(x, kind="mergesort")
  sorted_x = x[order]
  starts = np.r_[0, np.flatnonzero(np.diff(sorted_x)) + 1]
  ends = np.r_[starts[1:], len(x)]
  ranks = np.empty(len(x), np.float64)
  for start, end in zip(starts, ends):
    ranks[order[start:end]] = (start + end + 1) / 2.0
  return ranks


def spearman(x, y) -> float:
  return pearson(_average_ranks(x), _average_ranks(y))


def compute_metrics(task: GlueTask, labels: np.ndarray,
                    outputs: np.ndarray) -> Dict[str, float]:
  """Dev metrics from model outputs (logits [N, C]; regression [N] or [N, 1]).

  Returns {metric: value} including `loss` (cross-entropy or mean squared
  error) and the task's main metric.
  """
  outputs = np.asarray(outputs, np.float64)
  labels = np.asarray(labels)
  if task.is_regression:
    predictions = outputs.reshape(-1)
    return dict(pearson=pearson(predictions, labels),
                spearman=spearman(predictions, labels),
                loss=float(np.mean((predictions - labels) ** 2)))
  logits = outputs - outputs.max(axis=-1, keepdims=True)
  log_probs = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
  predictions = outputs.argmax(axis=-1)
  label_log_probs = log_probs[np.arange(len(labels)), labels]
  results = dict(accuracy=accuracy(labels, predictions),
                 loss=float(-np.mean(label_log_probs)))
  if task.name == "CoLA":
    results["matthews_corr"] = matthews_corr(labels, predictions)
  if task.name in ("MRPC", "QQP"):
    results["f1"] = f1_score(labels, predictions)
  return results


def prediction_labels(task: GlueTask, outputs: np.ndarray) -> List[str]:
  """Label names (or scores for STS-B) as GLUE submissions expect."""
  outputs = np.asarray(outputs)
  if task.is_regression:
    return [f"{v:.3f}" for v in outputs.reshape(-1)]
  return [task.labels[i] for i in outputs.argmax(axis=-1)]


def write_submission(task: GlueTask, split: str, guids: Sequence[str],
                     outputs: np.ndarray, output_dir: str) -> str:
  """Writes `<output_dir>/<CoLA.tsv|MNLI-m.tsv|...>` with `index\\tprediction`
  rows (the test file's index, label name / score); returns its path."""
  labels = prediction_labels(task, outputs)
  if len(labels) != len(guids):
    raise ValueError(f"{len(guids)} test examples, {len(labels)} predictions")
  path = file_io.join(output_dir, task.submission_file(split))
  file_io.write_atomic(path, "index\tprediction\n" + "".join(
      f"{guid}\t{label}\n" for guid, label in zip(guids, labels)))
  return path
