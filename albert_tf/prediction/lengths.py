"""A row's length in tokens, for batching rows of alike lengths.

An export's raw-text signature cuts each batch to the smallest of its
length buckets (exported_model.length_buckets) that holds the batch's
longest row. A batch whose rows fall in one bucket runs at that bucket; a
batch that straddles two runs every row at the larger. Where tools.predict
feeds token ids (own_length.py), a batch runs at its own longest row. So
the batching (batching.py) sorts rows by their packed length in tokens
(and, for a predictor that runs at the buckets, cuts batches there),
counted here with
the export's own vocabulary (the SentencePiece model or WordPiece
vocabulary in its assets):

  one text         [CLS] a [SEP]                  pieces(a) + 2
  a pair, SQuAD    [CLS] a [SEP] b [SEP]          pieces(a) + pieces(b) + 3
  multiple choice  [CLS] context [SEP] question choice [SEP], its longest
                   choice (the export scores a question's choices as one
                   batch row)

each capped at the export's seq_length (longer texts are truncated, or
windowed by NER and SQuAD, to it). Lowercasing is assumed (the tools'
default): only the batching depends on the count, and the
model's outputs do not depend on the batching at all.

Imports no TensorFlow.
"""

from typing import List, Optional, Sequence

from albert_common import file_io
from albert_tf.prediction.inputs import InputRow
from data_pipeline.tokenization.factory import make_tokenizer


def _vocabulary(asset_dir: str) -> Optional[str]:
  """The export's SentencePiece model, else WordPiece vocab, in assets/."""
  if not file_io.isdir(asset_dir):
    return None
  names = sorted(file_io.listdir(asset_dir))
  for name in names:
    if name.endswith(".model"):
      return file_io.join(asset_dir, name)
  for name in names:
    if name.endswith(".txt") and name != "labels.txt":
      return file_io.join(asset_dir, name)
  return None


class TokenCounter:
  """Packed token counts of rows (module docstring).

  Args:
    asset_dir: the export's assets/ folder (the encoder's: its
      preprocessor's).
    seq_length: the export's packed length (the last length bucket).
  """

  def __init__(self, asset_dir: str, seq_length: int):
    vocabulary = _vocabulary(asset_dir)
    if vocabulary is None:
      raise ValueError(f"no vocabulary in {asset_dir}")
    sentencepiece = vocabulary.endswith(".model")
    self.tokenizer = make_tokenizer(vocabulary if sentencepiece else None,
                                    None if sentencepiece else vocabulary)
    self.seq_length = seq_length

  def _pieces(self, texts: Sequence[str]) -> List[int]:
    return [len(ids) for ids in self.tokenizer.encode_batch(
        list(texts), num_threads=1)]

  def lengths(self, rows: Sequence[InputRow]) -> List[int]:
    """Each row's packed length in tokens, at most seq_length."""
    if not rows:
      return []
    a = self._pieces([row.text_a for row in rows])
    if rows[0].choices is not None:
      counts = []
      for row, context in zip(rows, a):
        qa = self._pieces([f"{row.text_b} {c}" for c in row.choices])
        counts.append(context + max(qa) + 3)
    elif rows[0].text_b is not None:
      b = self._pieces([row.text_b for row in rows])
      counts = [x + y + 3 for x, y in zip(a, b)]
    else:
      counts = [x + 2 for x in a]
    return [min(n, self.seq_length) for n in counts]

  def __call__(self, row: InputRow) -> int:
    """One row's length (a Beam batch_length_fn)."""
    return self.lengths([row])[0]


def token_counter(path: str, buckets: Sequence[int],
                  encoder: bool = False) -> Optional[TokenCounter]:
  """The TokenCounter of the export at `path` (--model), None when it
  records no buckets (no seq_length to cap at) or has no vocabulary.

  Args:
    path: the export.
    buckets: exported_model.length_buckets(path).
    encoder: an export_savedmodel folder (its preprocessor's assets).
  """
  if not buckets:
    return None
  assets = file_io.join(file_io.join(path, "preprocessor") if encoder
                        else path, "assets")
  if _vocabulary(assets) is None:
    return None
  return TokenCounter(assets, buckets[-1])
