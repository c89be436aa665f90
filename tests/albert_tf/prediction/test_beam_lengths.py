"""Beam's length-aware batching keys each row by the bucket the in-process
batching gives it: the handler's length function counts tokens with the
export's own tokenizer (its assets' SentencePiece model), not characters."""

import os
import pickle
import shutil

from apache_beam.transforms.util import WithLengthBucketKey
import numpy as np

from albert_tf.prediction import batching
from albert_tf.prediction import beam_handler
from albert_tf.prediction import lengths
from albert_tf.prediction.exported_model import ExportDescription
from albert_tf.prediction.inputs import InputRow

BUCKETS = (16, 32, 64)


def _rows(english_corpus, pair, n=80):
  """n rows of 1-70 words, every fifth with accents and CJK characters."""
  with open(english_corpus, encoding="utf-8") as f:
    words = f.read().split()[:5000]
  rng = np.random.default_rng(int(pair))

  def text(high):
    start = int(rng.integers(len(words) - high))
    return " ".join(words[start:start + int(rng.integers(1, high))])
  return [InputRow(i, "in.jsonl:1",
                   text(70) + (" Café à Paris 北京东京" if i % 5 == 0 else ""),
                   text(6) if pair else None)
          for i in range(n)]


def _beam_buckets(model, description, rows):
  """The bucket index Beam's stateful batching keys each row by, through
  the handler's length function as a worker gets it (pickled)."""
  handler = beam_handler.ExportModelHandler(model, description, "pooled", 4,
                                            BUCKETS)
  kwargs = handler.batch_elements_kwargs()
  length_fn = pickle.loads(pickle.dumps(kwargs["length_fn"]))
  keyer = WithLengthBucketKey(length_fn, kwargs["bucket_boundaries"])
  return [keyer._get_bucket(length_fn((("shard", i), row)))
          for i, row in enumerate(rows)]


def test_beam_keys_rows_by_the_in_process_bucket(spm_model, english_corpus,
                                                 tmp_path):
  model = str(tmp_path / "export")
  os.makedirs(os.path.join(model, "assets"))
  shutil.copy(spm_model, os.path.join(model, "assets", "albert_2k.model"))
  counter = lengths.token_counter(model, BUCKETS)
  for pair in (False, True):
    rows = _rows(english_corpus, pair)
    description = ExportDescription("classifier", pair=pair,
                                    length_buckets=BUCKETS)
    in_process = [BUCKETS.index(batching.bucket_of(n, BUCKETS))
                  for n in counter.lengths(rows)]
    assert set(in_process) == {0, 1, 2}  # every bucket is exercised
    assert _beam_buckets(model, description, rows) == in_process
    # The in-process batches: each within one of these buckets.
    for batch in batching.batches(counter.lengths(rows), 4, BUCKETS):
      assert len({in_process[i] for i in batch}) == 1
    # The characters/4 estimate this replaces puts some rows elsewhere.
    estimated = [sum(beam_handler.estimated_tokens(r) >= b for b in
                     beam_handler.beam_boundaries(BUCKETS)) for r in rows]
    assert estimated != in_process


def test_without_a_vocabulary_the_length_is_estimated(english_corpus,
                                                      tmp_path):
  rows = _rows(english_corpus, False, n=10)
  description = ExportDescription("classifier", pair=False,
                                  length_buckets=BUCKETS)
  handler = beam_handler.ExportModelHandler(str(tmp_path / "none"),
                                            description, "pooled", 4,
                                            BUCKETS)
  length_fn = handler.batch_elements_kwargs()["length_fn"]
  assert [length_fn((None, r)) for r in rows] == [
      beam_handler.estimated_tokens(r) for r in rows]
