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
(XLA, TPU) compiles once. Rows are filled from windows of the (seeded,
repeated) example stream, first fit decreasing: longest first, each
example goes into the first row with room for its tokens and a free slot
(1.3% padding on SST-2-like lengths, 4.5% on MRPC-like pairs, against
5% and 11% when the stream is packed in its order). A window's rows are
shuffled, so that a batch mixes long and short examples, and batches take
`rows` rows in turn, across windows. The number of examples a step trains
on therefore varies around `train_batch_size`; `plan` picks `rows` from
the training lengths so that their mean is train_batch_size (and `slots`
as many as a row ever took). The loss of a step is the mean over its
examples, as without packing.

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
from typing import List, Sequence

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
# Examples packed together: rows are filled from windows of at least this
# many (and 4 x train_batch_size); a larger window packs a little tighter.
WINDOW_EXAMPLES = 256


def first_fit_decreasing(lengths: Sequence[int], max_seq_length: int,
                         slots: int) -> List[List[int]]:
  """Packs one window of examples into rows, as `packed_batches` does.

  Longest first (ties in window order), each example goes into the first
  row with room for its tokens and a free slot, or opens a row.

  Args:
    lengths: int [W], each example's tokens (<= max_seq_length).
    max_seq_length, slots: a row's tokens and example slots.

  Returns:
    The rows in the order they opened, each the window indices of its
    examples in slot order.
  """
  lengths = np.asarray(lengths)
  fill = np.zeros(len(lengths), np.int64)
  count = np.zeros(len(lengths), np.int64)
  rows = [[] for _ in lengths]
  for i in np.argsort(-lengths, kind="stable"):
    r = int(np.argmax((fill + lengths[i] <= max_seq_length) &
                      (count < slots)))
    rows[r].append(int(i))
    fill[r] += lengths[i]
    count[r] += 1
  return [row for row in rows if row]


@dataclasses.dataclass(frozen=True)
class PackingPlan:
  """The static shape of packed batches and what they hold.

  Attributes:
    rows: rows of max_seq_length a packed batch has.
    slots: example slots a row has.
    max_seq_length: tokens a row has.
    window: examples packed together (see `packed_batches`).
    examples_per_step: mean examples a packed batch holds.
    min_examples, max_examples: the fewest and most seen in planning.
    padded_share: share of padding positions in packed batches.
  """

  rows: int
  slots: int
  max_seq_length: int
  window: int
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
  window = max(WINDOW_EXAMPLES, 4 * batch_size)
  sample = rng.choice(lengths, max(examples, 5 * window))
  # The rows of the sample's windows, each window's rows in a random order
  # as packed_batches shuffles them; as many slots as a row then takes.
  row_sizes = []
  for start in range(0, len(sample) - window + 1, window):
    rows = first_fit_decreasing(sample[start:start + window], max_seq_length,
                                MAX_SLOTS)
    row_sizes.extend(rng.permutation([len(row) for row in rows]))
  row_sizes = np.array(row_sizes)
  per_row = row_sizes.mean()
  guess = max(1, round(batch_size / per_row))
  candidates = {_round_up(r, rows_multiple)
                for r in range(max(1, guess - 1), guess + 2)}
  rows = min(candidates, key=lambda r: (abs(r * per_row - batch_size), r))
  steps = len(row_sizes) // rows
  sizes = row_sizes[:steps * rows].reshape(steps, rows).sum(axis=1)
  packed_tokens = sample[:len(sample) // window * window].sum()
  padded = 1.0 - packed_tokens / (len(row_sizes) * max_seq_length)
  return PackingPlan(rows, int(row_sizes.max()), max_seq_length, window,
                     float(sizes.mean()), int(sizes.min()), int(sizes.max()),
                     float(padded))


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
      packing.max_seq_length, the mask's ones first), label a scalar or
      any fixed shape.
    packing: from `plan`.
    pad_id: the padding token id.

  Returns:
    tf.data.Dataset of packed (features, labels) batches, static shapes.
    An infinite (repeated) input gives an infinite stream; a finite one
    drops its last, incomplete batch.
  """
  import tensorflow as tf
  windows = dataset.batch(packing.window).enumerate()
  rows = windows.map(
      lambda index, window: _pack_window(index, window, packing, pad_id),
      num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  return rows.unbatch().batch(packing.rows, drop_remainder=True)


def _first_fit_decreasing_graph(lengths, max_seq_length: int, slots: int):
  """first_fit_decreasing in the graph, for examples already longest
  first: int32 [W] lengths -> each example's (row, offset, slot), int32
  [W] each."""
  import tensorflow as tf
  n = tf.size(lengths)
  placed = [tf.TensorArray(tf.int32, size=n) for _ in range(3)]

  def place(i, fill, count, placed):
    length = lengths[i]
    fits = tf.logical_and(fill + length <= max_seq_length, count < slots)
    row = tf.argmax(tf.cast(fits, tf.int32), output_type=tf.int32)
    placed = [array.write(i, value) for array, value in
              zip(placed, (row, fill[row], count[row]))]
    one_hot = tf.one_hot(row, n, dtype=tf.int32)
    return i + 1, fill + one_hot * length, count + one_hot, placed

  zeros = tf.zeros([n], tf.int32)
  _, _, _, placed = tf.while_loop(lambda i, *_: i < n, place,
                                  (0, zeros, zeros, placed))
  return [array.stack() for array in placed]


def _pack_window(index, window, packing: PackingPlan, pad_id: int):
  """The packed rows of one window of examples, in a random order seeded
  by the window's index: (features [rows, seq] / [rows, slots], labels
  [rows, slots, ...]) with a varying number of rows."""
  import tensorflow as tf
  features, labels = window
  mask = features[INPUT_MASK]
  order = tf.argsort(-tf.reduce_sum(mask, axis=1), stable=True)
  mask = tf.gather(mask, order)
  row, offset, slot = _first_fit_decreasing_graph(
      tf.reduce_sum(mask, axis=1), packing.max_seq_length, packing.slots)
  rows = tf.reduce_max(row) + 1
  shuffled = tf.argsort(tf.random.stateless_uniform(
      [rows], seed=tf.stack([index, tf.constant(0, tf.int64)])))
  row = tf.gather(tf.math.invert_permutation(shuffled), row)
  # Every real token: (example, position) in the window -> in the rows.
  token = tf.cast(tf.where(mask > 0), tf.int32)
  example, position = token[:, 0], token[:, 1]
  source = tf.stack([tf.gather(order, example), position], axis=1)
  target = tf.stack([tf.gather(row, example),
                     tf.gather(offset, example) + position], axis=1)
  shape = tf.stack([rows, packing.max_seq_length])

  def scatter(values):
    return tf.scatter_nd(target, values, shape)

  in_mask = scatter(tf.ones_like(position))
  packed = {
      INPUT_WORD_IDS: scatter(tf.gather_nd(features[INPUT_WORD_IDS], source))
                      + pad_id * (1 - in_mask),
      INPUT_TYPE_IDS: scatter(tf.gather_nd(features[INPUT_TYPE_IDS], source)),
      INPUT_MASK: in_mask,
      INPUT_POSITIONS: scatter(position),
      EXAMPLE_SLOT_IDS: scatter(tf.gather(slot, example) + 1)}
  at_slot = tf.stack([row, slot], axis=1)
  slots = tf.stack([rows, packing.slots])
  packed[EXAMPLE_STARTS] = tf.scatter_nd(at_slot, offset, slots)
  packed[EXAMPLE_WEIGHTS] = tf.scatter_nd(
      at_slot, tf.ones_like(offset, tf.float32), slots)
  labels = tf.gather(labels, order)
  labels = tf.scatter_nd(at_slot, labels,
                         tf.concat([slots, tf.shape(labels)[1:]], axis=0))
  return packed, labels


def unpack(values: np.ndarray, weights: np.ndarray) -> List:
  """The real examples' values of packed slots, row by row ([rows, slots,
  ...] -> [examples, ...]; tests and tools)."""
  return list(np.asarray(values)[np.asarray(weights) > 0])
