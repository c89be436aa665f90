"""benchmarks.investigations.clip_norm's three norms on a crafted gradient:
a row gathered twice, in a word table and in another table."""

import types

import numpy as np
import pytest
import tensorflow as tf

from benchmarks.investigations import clip_norm


def test_rows_one_by_one_against_the_dense_sum():
  twice = tf.IndexedSlices(tf.constant([[3.0, 0.0], [3.0, 0.0]]),
                           tf.constant([0, 0]), tf.constant([4, 2]))
  variables = [types.SimpleNamespace(name="enc/word_embeddings/e:0"),
               types.SimpleNamespace(name="enc/token_type_embeddings/e:0"),
               types.SimpleNamespace(name="enc/dense/kernel:0")]
  grads = [twice, twice, tf.constant([[4.0]])]
  (dense, rows, official), sparse = clip_norm.norms(variables, grads)
  # Dense: the row sums to (6, 0) in each table: 36 + 36 + 16.
  assert dense == pytest.approx(np.sqrt(88.0))
  # By rows: 9 + 9 per table, + 16.
  assert rows == pytest.approx(np.sqrt(52.0))
  # Official: the word table by rows (18), the token types dense (36).
  assert official == pytest.approx(np.sqrt(70.0))
  assert sparse == [v.name for v in variables[:2]]
