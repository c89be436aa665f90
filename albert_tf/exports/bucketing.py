"""Serving with length buckets: a request runs at the smallest bucket that
holds its longest example, not at the export's full `seq_length`.

The raw-text endpoints pack a request to `seq_length` (the preprocessor's
fixed-length contract, which TF Hub users rely on, is unchanged) and then
cut the packed inputs to that bucket: everything past it is padding, which
the encoder masks, so the outputs equal the full-length ones (to float
rounding) while a 20-token request at seq_length 128 computes 32 positions.
One concrete function serves every bucket (the cut length is a tensor), so
the SavedModel keeps one signature per endpoint.
"""

from typing import Dict, Sequence

import tensorflow as tf

from albert_common.encoder_inputs import INPUT_MASK


def cut_to_bucket(inputs: Dict[str, tf.Tensor], buckets: Sequence[int]
                 ) -> Dict[str, tf.Tensor]:
  """Encoder inputs cut to the smallest bucket holding the longest example.

  Args:
    inputs: encoder inputs, int32 [batch, seq_length] (or [batch, choices,
      seq_length]); seq_length = buckets[-1].
    buckets: increasing lengths (data_pipeline.tasks.length_buckets); one or
      none: `inputs` unchanged.

  Returns:
    The same dict, each tensor [..., bucket].
  """
  if len(buckets) < 2:
    return inputs
  mask = inputs[INPUT_MASK]
  longest = tf.reduce_max(tf.reduce_sum(mask, axis=-1))
  boundaries = tf.constant(list(buckets), tf.int32)
  index = tf.reduce_sum(tf.cast(boundaries < tf.cast(longest, tf.int32),
                                tf.int32))
  length = tf.gather(boundaries, tf.minimum(index, len(buckets) - 1))
  return {k: v[..., :length] for k, v in inputs.items()}
