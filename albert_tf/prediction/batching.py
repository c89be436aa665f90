"""Rows -> batches of similar length -> output rows: the per-batch step.

`predict_rows` is a pure function of a list of good InputRows (and the
predict function): it sorts them by length (so a batch's rows are alike
and the export's length buckets cut its padding), calls `predict` once per
batch and returns one output row per input row, in input order. No file
I/O: a Beam ModelHandler's `run_inference` can wrap it as it is. The
order of the sort is fixed (length, then position), so the same rows give
the same batches and the same numbers in every run.
"""

from typing import Any, Callable, Dict, List, Optional, Sequence

from albert_tf.prediction.inputs import InputRow

# texts_a, texts_b (None for one text) -> one dict per text.
PredictFn = Callable[[Sequence[str], Optional[Sequence[str]]],
                     List[Dict[str, Any]]]


def row_key(row: InputRow, path: str, id_column: str) -> Dict[str, Any]:
  """The key columns of an output row: the id under its own name, else
  the input file and the record's number."""
  if id_column:
    return {id_column: row.record_id}
  return {"file": path, "row": row.row}


def _length(row: InputRow) -> int:
  return len(row.text_a) + (len(row.text_b) if row.text_b is not None
                            else 0)


def predict_rows(rows: Sequence[InputRow], predict: PredictFn,
                 batch_size: int, path: str = "", id_column: str = ""
                ) -> List[Dict[str, Any]]:
  """One output row (key columns, then the predictions) per input row.

  Args:
    rows: good rows (no problem).
    predict: texts -> predictions (exported_model.Predictor.predict).
    batch_size: rows per call.
    path, id_column: for the key columns (row_key).
  """
  order = sorted(range(len(rows)), key=lambda i: (_length(rows[i]), i))
  outputs: List[Optional[Dict[str, Any]]] = [None] * len(rows)
  pair = bool(rows) and rows[0].text_b is not None
  for start in range(0, len(order), batch_size):
    batch = order[start:start + batch_size]
    predictions = predict([rows[i].text_a for i in batch],
                          [rows[i].text_b for i in batch] if pair else None)
    for i, prediction in zip(batch, predictions):
      outputs[i] = dict(row_key(rows[i], path, id_column), **prediction)
  return outputs
