"""Rows -> batches of similar length -> output rows: the per-batch step.

`predictions` is a pure function of a list of good InputRows (and the
predict function): it sorts them by length (so a batch's rows are alike
and the export's length buckets cut its padding), calls `predict` once per
batch and returns one prediction per input row, in input order; no file
I/O. `predict_rows` adds the key columns (the in-process path); the Beam
ModelHandler (beam_handler.py) runs `predictions` on each batch Beam
makes. The order of the sort is fixed (length, then position), so the
same rows give the same batches and the same numbers in every run.

Rows are sorted by their length in tokens (lengths.TokenCounter, when
the export records its seq_length and has its vocabulary in its assets;
else by characters) and cut every batch_size rows (`batches`). Where the
predictor runs each batch at its own longest row (its `own_length`:
classifier, regression, multi-label and encoder exports fed token ids,
ONNX files; own_length.py) that is all: a batch across one of the
export's length buckets (exported_model.length_buckets) is cut to its
longest row anyway, so breaking batches there would only add partial
ones. Where the export pads a batch to its bucket (serving_default: NER,
SQuAD, multiple choice; LiteRT files) a batch never mixes two buckets, so
none runs at a larger bucket than its rows need.
"""

from typing import Any, Callable, Dict, List, Optional, Sequence

from albert_tf.prediction.inputs import InputRow

# texts_a, texts_b (None for one text)[, choices] -> one dict per text.
PredictFn = Callable[[Sequence[str], Optional[Sequence[str]]],
                     List[Dict[str, Any]]]


def row_key(row: InputRow, path: str, id_column: str) -> Dict[str, Any]:
  """The key columns of an output row: the id under its own name, else
  the input file and the record's number."""
  if id_column:
    return {id_column: row.record_id}
  return {"file": path, "row": row.row}


def text_length(row: InputRow) -> int:
  """A row's characters (its texts, its longest choice): the sort key
  when the export records no buckets."""
  return (len(row.text_a) + (len(row.text_b) if row.text_b is not None
                             else 0) +
          (max(map(len, row.choices)) if row.choices else 0))


def bucket_of(length: int, buckets: Sequence[int]) -> int:
  """The smallest bucket holding `length` tokens (the last one: longer
  rows are truncated to it), as the export's signature picks it."""
  return next((b for b in buckets if b >= length), buckets[-1])


def own_length(predictor: Any) -> bool:
  """Whether `predictor` runs each batch at its own longest row (its
  `own_length`: exported_model.Predictor's, converted_model's; a stand-in
  without one: False, batches kept within a bucket)."""
  return bool(getattr(predictor, "own_length", False))


def batches(lengths: Sequence[int], batch_size: int,
            buckets: Sequence[int] = (),
            at_own_length: bool = False) -> List[List[int]]:
  """Row indices in batches of at most batch_size, sorted by length (then
  position). Batches run at their own longest row (`at_own_length`), or
  no buckets: cut every batch_size rows, ceil(rows / batch_size) batches.
  Else, with buckets (more than one, `lengths` in tokens), a batch never
  mixes two buckets, so each runs at its rows' own bucket.

  Args:
    lengths: one per row.
    batch_size: rows per batch.
    buckets: the export's (exported_model.length_buckets), or ().
    at_own_length: the predictor cuts each batch to its longest row
      (own_length), so a batch may cross a bucket.
  """
  order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
  if at_own_length or len(buckets) < 2:
    return [order[i:i + batch_size] for i in range(0, len(order),
                                                   batch_size)]
  out: List[List[int]] = []
  current = None
  for i in order:
    bucket = bucket_of(lengths[i], buckets)
    if not out or len(out[-1]) == batch_size or bucket != current:
      out.append([])
      current = bucket
    out[-1].append(i)
  return out


CountTokens = Callable[[Sequence[InputRow]], List[int]]


def predictions(rows: Sequence[InputRow], predict: PredictFn,
                batch_size: int, buckets: Sequence[int] = (),
                count_tokens: Optional[CountTokens] = None,
                at_own_length: bool = False) -> List[Dict[str, Any]]:
  """The predictions (no key columns) of good rows, in their order.

  Args:
    rows: good rows (no problem).
    predict: texts -> predictions (exported_model.Predictor.predict;
      multiple choice: also each row's choices).
    batch_size: rows per call.
    buckets: the export's length buckets (exported_model.length_buckets).
    count_tokens: rows -> their lengths in tokens
      (lengths.TokenCounter.lengths): rows are sorted by them (with
      buckets and not at_own_length, batches stay within one bucket:
      batches). None: rows are sorted by characters and cut every
      batch_size rows.
    at_own_length: the predictor runs each batch at its own longest row
      (own_length(predictor)): batches may cross buckets.
  """
  if count_tokens is not None:
    groups = batches(count_tokens(rows), batch_size, buckets, at_own_length)
  else:
    groups = batches([text_length(row) for row in rows], batch_size)
  outputs: List[Optional[Dict[str, Any]]] = [None] * len(rows)
  pair = bool(rows) and rows[0].text_b is not None
  choices = bool(rows) and rows[0].choices is not None
  for batch in groups:
    texts_a = [rows[i].text_a for i in batch]
    texts_b = [rows[i].text_b for i in batch] if pair else None
    if choices:
      predicted = predict(texts_a, texts_b, [rows[i].choices for i in batch])
    else:
      predicted = predict(texts_a, texts_b)
    for i, prediction in zip(batch, predicted):
      outputs[i] = prediction
  return outputs


def predict_rows(rows: Sequence[InputRow], predict: PredictFn,
                 batch_size: int, path: str = "", id_column: str = "",
                 buckets: Sequence[int] = (),
                 count_tokens: Optional[CountTokens] = None,
                 at_own_length: bool = False) -> List[Dict[str, Any]]:
  """One output row (key columns, then the predictions) per input row:
  `predictions`' arguments, and path and id_column for the key columns
  (row_key)."""
  return [dict(row_key(row, path, id_column), **prediction)
          for row, prediction in zip(rows, predictions(
              rows, predict, batch_size, buckets, count_tokens,
              at_own_length))]
