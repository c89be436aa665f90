"""Length buckets: batches padded to the smallest bucket that holds them.

`--length_buckets` lists sequence lengths, e.g. `32,64,128`. Every example
goes to the smallest bucket at least as long as its tokens (`input_mask`'s
sum; for multiple choice the longest choice), every batch is drawn from one
bucket and its sequence dimension is cut to that bucket's length. Shapes are
static per bucket ([batch, bucket] with drop_remainder for training), so a
compiled step (XLA, TPU) compiles once per bucket, and the encoder computes
no attention or FFN over padding beyond the bucket.

Values of the flag:
  auto (the default): in fine-tuning, at most --max_length_buckets
    boundaries fitted to the training set's lengths (least padded tokens;
    data_pipeline.tasks.bucket_boundaries, which also keeps the choice in
    the run's output directory). Where no data is at hand (the encoder
    export, pretraining), the same as pow2.
  pow2: powers of two from 32 below --max_seq_length, then
    --max_seq_length itself (128 -> 32,64,128; 384 -> 32,64,128,256,384).
  none: one bucket, --max_seq_length: every batch padded to it, as before.
  a comma list of increasing lengths <= --max_seq_length; --max_seq_length
    is added as the last bucket when the list ends below it.

The batching is tf.data's `group_by_window` keyed by bucket (what
`bucket_by_sequence_length` does; it is not used because it pads variable-
length elements, while ours arrive padded to --max_seq_length from the
tasks' existing readers and are cut instead, the same code for GLUE, SQuAD
and RACE). It is deterministic: with a seeded shuffle upstream the batch
stream is the same in every run, so skipping the batches already trained
on resumes it exactly. Evaluation and prediction datasets carry each
example's position (`EXAMPLE_INDEX`) so the runner puts outputs back in
input order.

An export records its buckets as the asset `length_buckets.json`
({"seq_length": 128, "length_buckets": [32, 64, 128]}; one bucket: no
bucketing): `export_asset` writes it, `read_export_record` reads it, so a
reader of the export (tools.predict's batching, a Beam model handler)
batches at the export's own buckets without loading it.

This module imports TensorFlow only inside the dataset functions: the
tools check the flag before TensorFlow loads.
"""

import json
from typing import Optional, Sequence, Tuple

from albert_common import file_io
from albert_common.encoder_inputs import INPUT_MASK
from albert_common.errors import UserInputError

AUTO = "auto"
POW2 = "pow2"
NONE = "none"
# The smallest bucket of `pow2`.
AUTO_MIN = 32
# Feature key of an example's position in an evaluation dataset: int64 [batch].
EXAMPLE_INDEX = "example_index"


def parse_length_buckets(value: str, max_seq_length: int,
                         flag: str = "--length_buckets",
                         max_flag: str = "--max_seq_length"
                         ) -> Tuple[int, ...]:
  """The bucket lengths of a `--length_buckets` value (see module docstring).

  Args:
    value: "auto", "pow2", "none" or a comma list of ints ("auto" is read
      as "pow2" here: bucket_boundaries.choose fits it to data).
    max_seq_length: the longest sequence; the last bucket is always it.
    flag: the name quoted in errors.
    max_flag: the name of max_seq_length's flag, quoted in errors.

  Returns:
    Increasing ints ending with max_seq_length; one value = no bucketing.

  Raises:
    UserInputError: a value that is not a positive int, a list that is not
      strictly increasing, or a value above max_seq_length.
  """
  text = (value or "").strip().lower()
  if text in ("", NONE):
    return (max_seq_length,)
  if text in (AUTO, POW2):
    buckets = []
    length = AUTO_MIN
    while length < max_seq_length:
      buckets.append(length)
      length *= 2
    return tuple(buckets) + (max_seq_length,)
  buckets = []
  for part in text.split(","):
    try:
      length = int(part.strip())
    except ValueError:
      raise UserInputError(f"{flag}={value}: {part.strip()!r} is not an "
                           "integer (give auto, pow2, none or a comma "
                           "list such as 32,64,128)") from None
    if length <= 0:
      raise UserInputError(f"{flag}={value}: lengths must be positive, got "
                           f"{length}")
    if length > max_seq_length:
      raise UserInputError(f"{flag}={value}: {length} exceeds "
                           f"{max_flag}={max_seq_length}")
    if buckets and length <= buckets[-1]:
      raise UserInputError(f"{flag}={value}: lengths must be strictly "
                           f"increasing ({buckets[-1]} then {length})")
    buckets.append(length)
  if buckets[-1] < max_seq_length:
    buckets.append(max_seq_length)
  return tuple(buckets)


EXPORT_FILE = "length_buckets.json"


def export_asset(seq_length: int, buckets: Sequence[int]
                ) -> Tuple[str, str, str]:
  """The (attribute, file name, text) asset recording an export's buckets.

  Args:
    seq_length: the export's packed length.
    buckets: increasing lengths (seq_length is the last); (): none.
  """
  lengths = [int(b) for b in buckets if b < seq_length] + [int(seq_length)]
  text = json.dumps({"seq_length": int(seq_length),
                     "length_buckets": lengths}) + "\n"
  return ("length_buckets_file", EXPORT_FILE, text)


def read_export_record(asset_dir: str) -> Optional[Tuple[int, ...]]:
  """The buckets an export recorded in `asset_dir` (its assets/ folder):
  increasing lengths ending with its seq_length; None for an export
  written before exports recorded them.

  Raises:
    UserInputError: a record that is not increasing positive lengths.
  """
  path = file_io.join(asset_dir, EXPORT_FILE)
  if not file_io.exists(path):
    return None
  values = file_io.read_json_object(path, "length buckets record")
  lengths = values.get("length_buckets")
  if (not isinstance(lengths, list) or not lengths or
      not all(isinstance(n, int) and n > 0 for n in lengths) or
      any(b <= a for a, b in zip(lengths, lengths[1:])) or
      lengths[-1] != values.get("seq_length")):
    raise UserInputError(
        f"{path} is not a length buckets record ({{\"seq_length\": N, "
        "\"length_buckets\": [increasing lengths ending with N]})")
  return tuple(lengths)


def is_bucketed(buckets: Sequence[int]) -> bool:
  """Whether `buckets` (from parse_length_buckets) has more than one."""
  return len(buckets or ()) > 1


def _example_length(features):
  """int64 scalar: tokens of one example (its longest row for [C, seq])."""
  import tensorflow as tf
  mask = tf.reshape(features[INPUT_MASK], [-1, tf.shape(
      features[INPUT_MASK])[-1]])
  return tf.cast(tf.reduce_max(tf.reduce_sum(mask, axis=-1)), tf.int64)


def _cut(structure, length, max_seq_length: int):
  """Every tensor whose static last dimension is max_seq_length, cut to
  its first `length` positions (the rest is padding in a bucket's batch)."""
  import tensorflow as tf

  def cut(x):
    if x.shape.rank and x.shape[-1] == max_seq_length:
      return x[..., :length]
    return x
  return tf.nest.map_structure(cut, structure)


def batch_by_length(dataset, buckets: Sequence[int], batch_size: int,
                    drop_remainder: bool, sequence_labels: bool = False):
  """Batches `dataset` by length bucket.

  Args:
    dataset: unbatched tf.data.Dataset of feature dicts (with INPUT_MASK,
      int32 [seq] or [choices, seq]), or (features, labels) tuples. Every
      feature whose last dimension is max_seq_length (= buckets[-1]) is a
      sequence and gets cut; other features (positions) and the labels are
      kept (a multi-label target may have max_seq_length entries), but
      with `sequence_labels` (one label per token, NER) whose labels are
      cut as the features are.
    buckets: increasing lengths ending with max_seq_length.
    batch_size: examples per batch; every batch comes from one bucket.
    drop_remainder: drop each bucket's last partial batch (training).

  Returns:
    tf.data.Dataset of batches; a batch of bucket b has sequence tensors
    [batch, b] (or [batch, choices, b]); element_spec leaves that length
    unknown (None), the tensors themselves have it.
  """
  import tensorflow as tf
  max_seq_length = buckets[-1]
  boundaries = tf.constant(list(buckets), tf.int64)

  def key(*element):
    length = _example_length(element[0])  # element: (features[, labels])
    # The first bucket >= length.
    return tf.reduce_sum(tf.cast(boundaries < length, tf.int64))

  def reduce(bucket, window):
    length = boundaries[bucket]

    def cut(*batch):
      # Only the features are cut: labels keep their shape (a multi-label
      # target may have max_seq_length entries).
      features = _cut(batch[0], length, max_seq_length)
      labels = (_cut(batch[1:], length, max_seq_length) if sequence_labels
                else batch[1:])
      return (features,) + tuple(labels) if len(batch) > 1 else features

    return window.batch(batch_size, drop_remainder=drop_remainder).map(cut)

  return dataset.group_by_window(key, reduce, window_size=batch_size)


def batch(dataset, buckets: Sequence[int], batch_size: int,
          drop_remainder: bool = False, keep_order: bool = False,
          sequence_labels: bool = False):
  """`dataset.batch(batch_size, drop_remainder)`, by length bucket when
  `buckets` has more than one (batch_by_length); then, with `keep_order`
  (evaluation: feature dicts only), each example carries EXAMPLE_INDEX.
  `sequence_labels`: see batch_by_length."""
  if not is_bucketed(buckets):
    return dataset.batch(batch_size, drop_remainder=drop_remainder)
  if keep_order:
    dataset = with_example_index(dataset)
  return batch_by_length(dataset, buckets, batch_size, drop_remainder,
                         sequence_labels)


def with_example_index(dataset):
  """Adds EXAMPLE_INDEX (int64 scalar: position in `dataset`) to every
  feature dict of an unbatched dataset of dicts."""
  import tensorflow as tf
  indices = tf.data.Dataset.range(2**62)
  return tf.data.Dataset.zip((dataset, indices)).map(
      lambda features, index: dict(features, **{EXAMPLE_INDEX: index}))
