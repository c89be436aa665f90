"""Packing short examples (`--pack_examples`): several examples a row.

Sentence-level tasks (GLUE, one's own classification files) have examples
far shorter than --max_seq_length: SST-2's average 25 tokens of 128. Length
buckets cut a batch to its bucket; packing instead puts several examples
into one row of --max_seq_length, each with its own [CLS], segment ids and
positions restarting at 0, and an attention mask that keeps each example
to itself (albert_tf.networks.albert_encoder.packed_pooled_output), so
that every example's logits are those it has alone.

A packed batch has a static shape, `rows` x --max_seq_length tokens and
`rows` x `slots` example slots (empty slots weigh 0), so a compiled step
(XLA, TPU) compiles once. It is filled from the (seeded, repeated) example
stream in order, first fit: each example goes into the first row with
room for its tokens and a free slot; the first example that fits nowhere
closes the batch and opens the next. The number of examples a step trains
on therefore varies a little around `train_batch_size`; `plan` picks
`rows` from the training lengths so that their mean is train_batch_size
(and `slots` as many as a row ever took). The loss of a step is the mean
over its examples, as without packing.

A packed batch, (features, labels):
  input_word_ids, input_type_ids, input_mask: int32 [rows, seq]
  input_positions: int32 [rows, seq], 0 at every example's [CLS]
  example_slot_ids: int32 [rows, seq], 1 + the token's slot, 0 = padding
  example_starts: int32 [rows, slots], each slot's [CLS] position
  example_weights: float32 [rows, slots], 1 = an example, 0 = empty
  labels: [rows, slots] (+ the label's own shape), 0 in empty slots

The stream is deterministic (same seed, same batches), so a resumed run
skips the packed batches already trained on, as an unpacked one does.

This module imports TensorFlow only inside the dataset functions.
"""

import dataclasses
from typing import List, Sequence, Tuple

import numpy as np

from albert_common.encoder_inputs import EXAMPLE_SLOT_IDS
from albert_common.encoder_inputs import EXAMPLE_STARTS
from albert_common.encoder_inputs import EXAMPLE_WEIGHTS
from albert_common.encoder_inputs import INPUT_MASK
from albert_common.encoder_inputs import INPUT_POSITIONS
from albert_common.encoder_inputs import INPUT_TYPE_IDS
from albert_common.encoder_inputs import INPUT_WORD_IDS

# Example slots a row holds at most.
MAX_SLOTS = 32
# Examples `plan` packs (the training set, repeated or sampled to this).
PLAN_EXAMPLES = 10_000


def first_fit_stream(lengths: Sequence[int], rows: int, max_seq_length: int,
                     slots: int) -> List[List[Tuple[int, int, int, int]]]:
  """Packs a stream of examples into batches, as `packed_batches` does.

  Args:
    lengths: int [N], each example's tokens (<= max_seq_length), in stream
      order.
    rows, max_seq_length, slots: a batch's rows, a row's tokens and slots.

  Returns:
    The closed batches (the last, open one is dropped), each a list of
    (example index, row, offset, slot).
  """
  batches, current = [], []
  fill = np.zeros(rows, np.int64)
  count = np.zeros(rows, np.int64)
  for i, length in enumerate(lengths):
    fits = np.flatnonzero((fill + length <= max_seq_length) & (count < slots))
    if not fits.size:
      batches.append(current)
      current = []
      fill[:] = 0
      count[:] = 0
      r = 0
    else:
      r = int(fits[0])
    current.append((i, r, int(fill[r]), int(count[r])))
    fill[r] += length
    count[r] += 1
  return batches


@dataclasses.dataclass(frozen=True)
class PackingPlan:
  """The static shape of packed batches and what they hold.

  Attributes:
    rows: rows of max_seq_length a packed batch has.
    slots: example slots a row has.
    max_seq_length: tokens a row has.
    examples_per_step: mean examples a packed batch holds.
    min_examples, max_examples: the fewest and most seen in planning.
    padded_share: share of padding positions in packed batches.
  """

  rows: int
  slots: int
  max_seq_length: int
  examples_per_step: float
  min_examples: int
  max_examples: int
  padded_share: float

  def describe(self) -> str:
    return (f"{self.rows} rows x {self.max_seq_length} tokens, up to "
            f"{self.slots} examples a row: {self.examples_per_step:.1f} "
            f"examples a step ({self.min_examples}-{self.max_examples}), "
            f"{100 * self.padded_share:.1f}% padding")


def plan(lengths: Sequence[int], batch_size: int, max_seq_length: int,
         seed: int = 0, examples: int = PLAN_EXAMPLES,
         rows_multiple: int = 1) -> PackingPlan:
  """Rows and slots of packed batches for these training lengths: the rows
  whose batches hold train_batch_size examples on average (see the module
  docstring).

  Args:
    lengths: int [N], every training example's tokens.
    batch_size: the examples a step should average (train_batch_size).
    max_seq_length: tokens a row.
    seed: the sample packed; the plan depends only on these arguments.
    examples: how many examples to pack (a sample of `lengths`).
    rows_multiple: rows is a multiple of it (the replicas a batch is split
      over, each taking rows / rows_multiple).
  """
  lengths = np.asarray(lengths, np.int64)
  rng = np.random.default_rng(seed)
  sample = rng.choice(lengths, max(examples, 20 * batch_size))

  def sizes(batches):
    return np.array([len(b) for b in batches])

  guess = max(1, round(batch_size * sample.mean() / max_seq_length))
  # As many slots as a row takes when they are not limited.
  unlimited = first_fit_stream(sample, guess, max_seq_length, MAX_SLOTS)
  slots = max(int(np.bincount([r for _, r, _, _ in b]).max())
              for b in unlimited)
  best = None
  for rows in sorted({_round_up(r, rows_multiple)
                      for r in range(max(1, guess - 1), guess + 3)}):
    batches = first_fit_stream(sample, rows, max_seq_length, slots)
    key = (abs(sizes(batches).mean() - batch_size), rows)
    if best is None or key < best[0]:
      best = (key, rows, batches)
  _, rows, batches = best
  tokens = sum(int(sample[i]) for b in batches for i, _, _, _ in b)
  padded = 1.0 - tokens / (len(batches) * rows * max_seq_length)
  return PackingPlan(rows, slots, max_seq_length,
                     float(sizes(batches).mean()), int(sizes(batches).min()),
                     int(sizes(batches).max()), padded)


def cached_plan(cache: dict, lengths, batch_size: int, max_seq_length: int,
                rows_multiple: int = 1) -> PackingPlan:
  """`plan` of `lengths()` (a callable, read when first needed), kept in
  `cache` per (batch_size, rows_multiple) and logged once."""
  key = (batch_size, rows_multiple)
  if key not in cache:
    from absl import logging
    cache[key] = plan(lengths(), batch_size, max_seq_length,
                      rows_multiple=rows_multiple)
    logging.info("--pack_examples: %s", cache[key].describe())
  return cache[key]


def _round_up(value: int, multiple: int) -> int:
  return -(-value // multiple) * multiple


def packed_batches(dataset, packing: PackingPlan, pad_id: int = 0):
  """Packs a stream of examples into batches (module docstring).

  Args:
    dataset: unbatched tf.data.Dataset of (features, label): features
      input_word_ids, input_mask, input_type_ids int32 [seq] (padded to
      packing.max_seq_length), label a scalar or any fixed shape.
    packing: from `plan`.
    pad_id: the padding token id.

  Returns:
    tf.data.Dataset of packed (features, labels) batches, static shapes.
    An infinite (repeated) input gives an infinite stream; a finite one
    drops its last, open batch.
  """
  import tensorflow as tf
  label_spec = dataset.element_spec[1]
  empty = _empty_batch(packing, label_spec, pad_id)
  state = (tf.zeros([packing.rows], tf.int32),
           tf.zeros([packing.rows], tf.int32), empty)

  def step(state, element):
    return _add_example(state, element, packing, empty)

  dataset = dataset.scan(state, step)
  return dataset.filter(lambda closed, batch: closed).map(
      lambda closed, batch: batch)


def _empty_batch(packing: PackingPlan, label_spec, pad_id: int):
  """A packed batch with no example: (features, labels) of zeros."""
  import tensorflow as tf
  tokens = [packing.rows, packing.max_seq_length]
  slots = [packing.rows, packing.slots]
  features = {name: tf.zeros(tokens, tf.int32) for name in (
      INPUT_TYPE_IDS, INPUT_MASK, INPUT_POSITIONS, EXAMPLE_SLOT_IDS)}
  features[INPUT_WORD_IDS] = tf.fill(tokens, tf.constant(pad_id, tf.int32))
  features[EXAMPLE_STARTS] = tf.zeros(slots, tf.int32)
  features[EXAMPLE_WEIGHTS] = tf.zeros(slots, tf.float32)
  labels = tf.zeros(slots + label_spec.shape.as_list(), label_spec.dtype)
  return features, labels


def _add_example(state, element, packing: PackingPlan, empty):
  """One scan step: places an example, closing the batch first when it
  fits nowhere. Returns (new state, (closed, the closed batch))."""
  import tensorflow as tf
  fill, count, batch = state
  features, label = element
  seq = packing.max_seq_length
  length = tf.reduce_sum(features[INPUT_MASK])
  fits = tf.logical_and(fill + length <= seq, count < packing.slots)
  closes = tf.logical_not(tf.reduce_any(fits))
  closed = batch
  if_closed = lambda new, old: tf.nest.map_structure(  # noqa: E731
      lambda a, b: tf.where(closes, a, b), new, old)
  batch = if_closed(empty, batch)
  zeros = tf.zeros_like(fill)
  fill, count = if_closed(zeros, fill), if_closed(zeros, count)
  row = tf.argmax(tf.cast(
      tf.logical_and(fill + length <= seq, count < packing.slots), tf.int32),
      output_type=tf.int32)
  offset, slot = fill[row], count[row]
  batch = _place(batch, features, label, row, offset, slot, length)
  fill = tf.tensor_scatter_nd_add(fill, [[row]], [length])
  count = tf.tensor_scatter_nd_add(count, [[row]], [1])
  return (fill, count, batch), (closes, closed)


def _place(batch, features, label, row, offset, slot, length):
  """`batch` with one example's tokens at [row, offset:offset + length]
  and its label in [row, slot]."""
  import tensorflow as tf
  tokens, labels = batch
  positions = tf.range(length)
  at = tf.stack([tf.fill([length], row), offset + positions], axis=1)
  values = {
      INPUT_WORD_IDS: features[INPUT_WORD_IDS][:length],
      INPUT_TYPE_IDS: features[INPUT_TYPE_IDS][:length],
      INPUT_MASK: tf.ones([length], tf.int32),
      INPUT_POSITIONS: positions,
      EXAMPLE_SLOT_IDS: tf.fill([length], slot + 1)}
  tokens = dict(tokens)
  for name, value in values.items():
    tokens[name] = tf.tensor_scatter_nd_update(tokens[name], at, value)
  at_slot = [[row, slot]]
  tokens[EXAMPLE_STARTS] = tf.tensor_scatter_nd_update(
      tokens[EXAMPLE_STARTS], at_slot, [offset])
  tokens[EXAMPLE_WEIGHTS] = tf.tensor_scatter_nd_update(
      tokens[EXAMPLE_WEIGHTS], at_slot, [1.0])
  labels = tf.tensor_scatter_nd_update(labels, at_slot,
                                       tf.expand_dims(label, 0))
  return tokens, labels


def unpack(values: np.ndarray, weights: np.ndarray) -> List:
  """The real examples' values of packed slots, row by row ([rows, slots,
  ...] -> [examples, ...]; tests and tools)."""
  return list(np.asarray(values)[np.asarray(weights) > 0])
