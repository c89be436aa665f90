"""Documents -> ALBERT pretraining instances: segment pairs and SOP labels.

The instance half of google-research/albert `create_pretraining_data.py`, on
token ids instead of token strings (masking is `mlm_masking`):

* Segments. Per document, `target_seq_length` is `max_seq_length - 3`, or
  with probability `short_seq_prob` uniform in [2, max_seq_length - 3].
  Sentences accumulate into a chunk until it reaches the target or the
  document ends; A is the chunk's first `a_end` sentences (`a_end` uniform in
  [1, n - 1]), B the rest.
* Sentence order prediction. A and B are swapped with probability 0.5;
  `next_sentence_labels` is 1 when swapped. With `random_next_sentence` (the
  official flag) the task is NSP instead: with probability 0.5 B comes from a
  random document (label 1) and the unused sentences are put back.
* A chunk of one sentence. The official code always gives it a B from a
  random document, labelled 1: an NSP negative inside SOP data
  (google-research/albert issue #234). Here, by default, the sentence is split
  in two at a random word start (any token if it is one word) and the halves
  go through SOP like any pair; a one-token chunk is dropped. The official
  behaviour is kept behind `single_segment_random_document=True` (and is what
  NSP mode, `random_next_sentence=True`, always does).
* Truncation as `truncate_seq_pair`: trim the longer of A and B (B on ties)
  one token at a time, from the front or the back with probability 0.5 each.

Random documents (NSP mode and the official single-sentence rule) are drawn
from the documents of the same input piece (see `pretraining_writer`), not
from the whole corpus, so memory does not grow with the corpus.

Every random draw for a document comes from its own `numpy.random.Generator`
(`document_rng`), seeded from (random_seed, dupe index, document key), and the
masking randoms of an instance are drawn from it when the instance is made
(`InstanceSpans.draws`), so the output does not depend on how documents are
spread over processes.
"""

from typing import List, NamedTuple, Optional, Sequence

import numpy as np

from data_pipeline.pretraining.instance_options import InstanceOptions
from data_pipeline.pretraining.instance_options import VocabInfo

# Uniform draws each instance takes for masking: [4, max_seq_length], rows are
# candidate order keys, n-gram draws, 80/10/10 draws, random-token draws.
NUM_MASK_DRAWS = 4


class Document(NamedTuple):
  """A tokenised document inside a piece's token pool.

  Attributes:
    starts: int list, pool offset of each sentence (sentences are contiguous).
    lengths: int list, tokens per sentence (all >= 1).
    key: int, a corpus-wide unique key (seeds the document's Generator).
  """
  starts: List[int]
  lengths: List[int]
  key: int


class InstanceSpans(NamedTuple):
  """Instances before masking: token ranges of the pool, plus their randoms.

  Attributes:
    a_start, a_len, b_start, b_len: int64 [n], segment A and B ranges.
    label: int64 [n], next_sentence_labels.
    draws: float32 [n, 4, max_seq_length], the masking randoms.
  """
  a_start: np.ndarray
  a_len: np.ndarray
  b_start: np.ndarray
  b_len: np.ndarray
  label: np.ndarray
  draws: np.ndarray


def document_rng(random_seed: int, dupe: int,
                 document_key: int) -> np.random.Generator:
  """The Generator of one (dupe, document): Philox keyed by the three ints."""
  key = [random_seed % (1 << 64), document_key % (1 << 64)]
  return np.random.Generator(
      np.random.Philox(key=key, counter=[0, 0, 0, dupe % (1 << 64)]))


def shuffle_rng(random_seed: int, piece_key: int) -> np.random.Generator:
  """The Generator that shuffles a piece's instances."""
  key = [random_seed % (1 << 64), piece_key % (1 << 64)]
  return np.random.Generator(np.random.Philox(key=key, counter=[0, 0, 1, 0]))


def _truncation(len_a: int, len_b: int, max_tokens: int,
                rng: np.random.Generator):
  """Tokens removed by `truncate_seq_pair`: (a_front, a_back, b_front, b_back).

  The official loop trims the longer segment (B on ties) one token per step,
  from the front with probability 0.5. The side of every step follows from the
  lengths alone: |A - B| steps on the longer one, then B, A, B, A, ...
  """
  excess = len_a + len_b - max_tokens
  if excess <= 0:
    return 0, 0, 0, 0
  first = min(abs(len_a - len_b), excess)
  front = rng.random(excess) < 0.5
  alternating = front[first:]
  head_front = int(np.count_nonzero(front[:first]))
  a_alt_front = int(np.count_nonzero(alternating[1::2]))
  b_alt_front = int(np.count_nonzero(alternating[0::2]))
  a_alt = alternating.size // 2
  b_alt = alternating.size - a_alt
  if len_a > len_b:
    a_front, a_steps = head_front + a_alt_front, first + a_alt
    b_front, b_steps = b_alt_front, b_alt
  else:
    a_front, a_steps = a_alt_front, a_alt
    b_front, b_steps = head_front + b_alt_front, first + b_alt
  return a_front, a_steps - a_front, b_front, b_steps - b_front


class _DocumentRngs:
  """Hands out `document_rng` generators, reusing one bit generator.

  Setting a Philox state costs a quarter of building a new Generator; the
  result is the same stream. A returned Generator is valid until the next
  call.
  """

  def __init__(self):
    self._philox = np.random.Philox(key=[0, 0])
    self._generator = np.random.Generator(self._philox)
    self._template = self._philox.state

  def __call__(self, random_seed: int, dupe: int,
               document_key: int) -> np.random.Generator:
    state = dict(self._template)
    state["state"] = {
        "counter": np.array([0, 0, 0, dupe % (1 << 64)], np.uint64),
        "key": np.array([random_seed % (1 << 64), document_key % (1 << 64)],
                        np.uint64)}
    self._philox.state = state
    return self._generator


class _SpanCollector:
  """Accumulates instance ranges and their masking draws."""

  def __init__(self, options: InstanceOptions):
    self.options = options
    self.rows: List[tuple] = []
    self.draws: List[np.ndarray] = []

  def add(self, a_start, a_len, b_start, b_len, label, rng):
    a_front, a_back, b_front, b_back = _truncation(
        a_len, b_len, self.options.max_seq_length - 3, rng)
    self.rows.append((a_start + a_front, a_len - a_front - a_back,
                      b_start + b_front, b_len - b_front - b_back, label))
    self.draws.append(rng.random(
        (NUM_MASK_DRAWS, self.options.max_seq_length), dtype=np.float32))

  def spans(self) -> InstanceSpans:
    rows = np.array(self.rows, dtype=np.int64).reshape(-1, 5)
    draws = (np.stack(self.draws) if self.draws else np.zeros(
        (0, NUM_MASK_DRAWS, self.options.max_seq_length), np.float32))
    return InstanceSpans(*(rows[:, i] for i in range(5)), draws=draws)


def _random_document_b(documents, index, target_b_length, rng):
  """(start, length) of B taken from a random other document (official)."""
  for _ in range(10):
    other = int(rng.integers(len(documents)))
    if other != index:
      break
  doc = documents[other]
  first = int(rng.integers(len(doc.starts)))
  length = 0
  for j in range(first, len(doc.starts)):
    length += doc.lengths[j]
    if length >= target_b_length:
      break
  return doc.starts[first], length


def _split_single_segment(start, length, word_starts, rng):
  """Splits one sentence at a random word start: (a_len) or 0 if too short."""
  if length < 2:
    return 0
  starts = np.flatnonzero(word_starts[start + 1:start + length]) + 1
  if starts.size:
    return int(starts[rng.integers(starts.size)])
  return int(rng.integers(1, length))


def _add_document_instances(collector: _SpanCollector,
                            documents: Sequence[Document], index: int,
                            word_starts: np.ndarray,
                            rng: np.random.Generator) -> int:
  """Appends one document's instances; returns how many chunks were dropped."""
  options = collector.options
  doc = documents[index]
  max_num_tokens = options.max_seq_length - 3
  target = max_num_tokens
  if rng.random() < options.short_seq_prob:
    target = int(rng.integers(2, max_num_tokens + 1))
  dropped = 0
  lengths = doc.lengths
  num_segments = len(lengths)
  chunk_first = 0
  current_length = 0
  i = 0
  while i < num_segments:
    current_length += lengths[i]
    if i == num_segments - 1 or current_length >= target:
      n = i - chunk_first + 1
      a_end = 1 if n < 2 else int(rng.integers(1, n))
      a_start = doc.starts[chunk_first]
      a_len = sum(lengths[chunk_first:chunk_first + a_end])
      rest_start = a_start + a_len
      rest_len = current_length - a_len
      nsp = options.random_next_sentence
      if n == 1 and not nsp and not options.single_segment_random_document:
        split = _split_single_segment(a_start, a_len, word_starts, rng)
        if split:
          a_len, rest_start, rest_len = split, a_start + split, a_len - split
          label = int(rng.random() < 0.5)
          if label:
            a_start, a_len, rest_start, rest_len = (
                rest_start, rest_len, a_start, a_len)
          collector.add(a_start, a_len, rest_start, rest_len, label, rng)
        else:
          dropped += 1
      elif n == 1 or (nsp and rng.random() < 0.5):
        b_start, b_len = _random_document_b(documents, index, target - a_len,
                                            rng)
        collector.add(a_start, a_len, b_start, b_len, 1, rng)
        i -= n - a_end  # Put the unused sentences back.
      elif not nsp and rng.random() < 0.5:
        collector.add(rest_start, rest_len, a_start, a_len, 1, rng)
      else:
        collector.add(a_start, a_len, rest_start, rest_len, 0, rng)
      chunk_first = i + 1
      current_length = 0
    i += 1
  return dropped


def create_instance_spans(documents: Sequence[Document], pool: np.ndarray,
                          options: InstanceOptions, vocab: VocabInfo,
                          random_seed: int, dupe_factor: int,
                          word_starts: Optional[np.ndarray] = None):
  """Instances of every document, for every dupe, in (dupe, document) order.

  Args:
    documents: the documents of one piece.
    pool: int32 [num_tokens], the piece's token ids, sentences back to back.
    options: InstanceOptions.
    vocab: VocabInfo.
    random_seed: the run's seed.
    dupe_factor: how many times each document is used (new randoms each time).
    word_starts: optional bool [num_tokens], True where a pool token starts
      a word (a word segmenter's, see `word_segmentation`); default
      `vocab.start_piece[pool]`.

  Returns:
    (InstanceSpans, number of dropped one-token chunks).
  """
  if word_starts is None:
    word_starts = vocab.start_piece[pool]
  collector = _SpanCollector(options)
  rngs = _DocumentRngs()
  dropped = 0
  for dupe in range(dupe_factor):
    for index, doc in enumerate(documents):
      rng = rngs(random_seed, dupe, doc.key)
      dropped += _add_document_instances(collector, documents, index,
                                         word_starts, rng)
  return collector.spans(), dropped
