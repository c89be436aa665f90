"""Each batch padded to its own longest row, not to the export's bucket.

An export's raw-text signature (serving_default) packs a request to its
seq_length and cuts it to the smallest length bucket holding the longest
row (albert_tf.exports.bucketing): with buckets 32, 64, 128 a batch of
33-token rows computes 64 positions a row. Where the export lets a caller
feed token ids, tools.predict does the packing itself and cuts each batch
to its own longest row instead:

  classifier, regression, multi_label   the export's own in-graph
      preprocessor (the SavedModel's `preprocessor.tokenize` and
      `.bert_pack_inputs`, what serving_default calls: the same ids), the
      cut, then its `token_ids` signature (the same model and head);
      `serving_outputs` names the outputs as serving_default does (label
      by the largest logit, multi-label names over labels.json's
      threshold);
  encoder    its preprocessor's signature, the cut, then the encoder.

NER, SQuAD and multiple choice keep serving_default (their windows and
span decoding run in that graph), at the export's buckets.

The cut is the batch's longest row (input_mask), rounded up to a
multiple of PAD_MULTIPLE, never past the bucket serving_default would run
the batch at (the smallest holding its longest row). So the batching
(batching.py) sorts rows by length and cuts them every batch_size rows,
a batch across a bucket boundary included (the predictor's `own_length`):
breaking batches at the buckets would only add partial batches. Each
batch runs at about its own length and never at more than
serving_default would. A run sees at most seq_length / PAD_MULTIPLE shapes; the
signature's sequence axis is dynamic, so none is traced again. The
attention mask keeps padding out, so a row's outputs depend neither on
the cut nor on the other rows of its batch, to float rounding.

Imports TensorFlow only in the functions that run it.
"""

from typing import Any, Dict, Optional, Sequence

import numpy as np

from albert_common.encoder_inputs import INPUT_MASK

# The cut is rounded up to a multiple of this (module docstring). 1: the
# longest row itself. Measured once (ALBERT-base classifier export, 150
# stdlib paragraphs in sorted batches of 32, 2 threads, 3 alternated
# rounds on a loaded 2-core machine): 1.17x the rows/s of a multiple of
# 8, whose extra positions cost more than odd shapes do.
PAD_MULTIPLE = 1
# The kinds whose token-ids signature gives serving_default's outputs.
TOKEN_IDS_KINDS = ("classifier", "regression", "multi_label")
TOKEN_IDS = "token_ids"  # albert_tf.exports.token_ids.TOKEN_IDS


def padded_length(longest: int, width: int,
                  multiple: int = PAD_MULTIPLE) -> int:
  """The length a batch whose longest row has `longest` tokens runs at,
  its inputs being `width` wide (its bucket, or the export's seq_length)."""
  return min(width, -(-max(longest, 1) // multiple) * multiple)


def cut_to_longest(inputs: Dict[str, Any], buckets: Sequence[int] = (),
                   multiple: int = PAD_MULTIPLE) -> Dict[str, Any]:
  """Encoder inputs (int32 [batch, width] tensors) cut to padded_length of
  their longest row, at most the smallest of `buckets` holding it
  (albert_tf.exports.bucketing.cut_to_bucket); in a tf.function or
  eagerly."""
  import tensorflow as tf

  from albert_tf.exports.bucketing import cut_to_bucket
  inputs = cut_to_bucket(inputs, buckets)
  mask = inputs[INPUT_MASK]
  longest = tf.maximum(tf.reduce_max(tf.reduce_sum(mask, axis=-1)), 1)
  length = tf.minimum(tf.shape(mask)[-1],
                      (longest + multiple - 1) // multiple * multiple)
  return {k: v[..., :length] for k, v in inputs.items()}


def can_feed_token_ids(loaded, kind: str) -> bool:
  """Whether the loaded export (exported_model.Predictor's SavedModel) has
  what the token-ids path needs: a kind of TOKEN_IDS_KINDS, its `token_ids`
  signature, and its preprocessor's tokenize and pack functions."""
  preprocessor = getattr(loaded, "preprocessor", None)
  return (kind in TOKEN_IDS_KINDS and TOKEN_IDS in loaded.signatures and
          hasattr(preprocessor, "tokenize") and
          hasattr(preprocessor, "bert_pack_inputs"))


def packer(loaded, pair: bool, buckets: Sequence[int] = (),
           multiple: int = PAD_MULTIPLE):
  """A tf.function: tf.string [batch] texts (and their pair) -> encoder
  inputs int32 [batch, length], packed by the export's own preprocessor
  as its serving_default packs them, cut by cut_to_longest (at most at
  `buckets`, the export's length buckets)."""
  import tensorflow as tf
  preprocessor = loaded.preprocessor
  text = tf.TensorSpec([None], tf.string)

  def pack(segments):
    tokens = [preprocessor.tokenize(s) for s in segments]
    return cut_to_longest(preprocessor.bert_pack_inputs(tokens), buckets,
                          multiple)

  if pair:
    return tf.function(lambda a, b: pack([a, b]),
                       input_signature=[text, text])
  return tf.function(lambda a: pack([a]), input_signature=[text])


def serving_outputs(kind: str, outputs: Dict[str, np.ndarray],
                    labels: Sequence[str], threshold: Optional[float]
                   ) -> Dict[str, np.ndarray]:
  """A token_ids signature's outputs (numpy) with what serving_default
  adds to them: `label` (classifier: the name of the largest logit),
  `labels` (multi_label: each name whose probability is over `threshold`,
  "" where not; None: 0.5), `score` (regression)."""
  outputs = dict(outputs)
  if kind == "regression":
    outputs["score"] = outputs["predictions"].reshape(-1)
  elif kind == "classifier":
    names = np.array([n.encode("utf-8") for n in labels])
    outputs["label"] = names[np.argmax(outputs["logits"], -1)]
  elif kind == "multi_label":
    names = np.array([n.encode("utf-8") for n in labels])
    limit = np.float32(0.5 if threshold is None else threshold)
    outputs["labels"] = np.where(outputs["probabilities"] > limit,
                                 names[None, :], b"")
  return outputs
