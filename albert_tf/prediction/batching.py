"""Rows -> batches of similar length -> output rows: the per-batch step.

`predictions` is a pure function of a list of good InputRows (and the
predict function): it sorts them by length (so a batch's rows are alike
and the export's length buckets cut its padding), calls `predict` once per
batch and returns one prediction per input row, in input order; no file
I/O. `predict_rows` adds the key columns (the in-process path); the Beam
ModelHandler (beam_handler.py) runs `predictions` on each batch Beam
makes. The order of the sort is fixed (length, then position), so the
same rows give the same batches and the same numbers in every run.
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


def text_length(row: InputRow) -> int:
  """A row's characters (both texts): the length batches are sorted by."""
  return len(row.text_a) + (len(row.text_b) if row.text_b is not None
                            else 0)


def predictions(rows: Sequence[InputRow], predict: PredictFn,
                batch_size: int) -> List[Dict[str, Any]]:
  """The predictions (no key columns) of good rows, in their order.

  Args:
    rows: good rows (no problem).
    predict: texts -> predictions (exported_model.Predictor.predict).
    batch_size: rows per call.
  """
  order = sorted(range(len(rows)), key=lambda i: (text_length(rows[i]), i))
  outputs: List[Optional[Dict[str, Any]]] = [None] * len(rows)
  pair = bool(rows) and rows[0].text_b is not None
  for start in range(0, len(order), batch_size):
    batch = order[start:start + batch_size]
    for i, prediction in zip(batch, predict(
        [rows[i].text_a for i in batch],
        [rows[i].text_b for i in batch] if pair else None)):
      outputs[i] = prediction
  return outputs


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
  return [dict(row_key(row, path, id_column), **prediction)
          for row, prediction in zip(
              rows, predictions(rows, predict, batch_size))]
