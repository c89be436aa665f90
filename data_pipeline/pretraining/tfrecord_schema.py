"""The pretraining TFRecord schema, shared by the writer and the reader.

Feature names and dtypes are those of google-research/albert
`create_pretraining_data.py` / `run_pretraining.py`, so files interchange with
the official scripts both ways:

| feature | dtype | length |
| --- | --- | --- |
| input_ids, input_mask, segment_ids, token_boundary | int64 | max_seq_length |
| masked_lm_positions, masked_lm_ids | int64 | max_predictions_per_seq |
| masked_lm_weights | float32 | max_predictions_per_seq |
| next_sentence_labels | int64 | 1 (1 = segments swapped) |

This module does not import TensorFlow at import time.
"""

from typing import Dict, NamedTuple


class FeatureSpec(NamedTuple):
  """One fixed-length feature.

  Attributes:
    name: the official feature name.
    dtype: "int64" or "float32".
    length: "seq" (max_seq_length), "pred" (max_predictions_per_seq) or 1.
    model_name: the model input name the reader maps it to.
  """
  name: str
  dtype: str
  length: object
  model_name: str


# In the official writer's order (the order features are serialised in).
FEATURES = (
    FeatureSpec("input_ids", "int64", "seq", "input_word_ids"),
    FeatureSpec("input_mask", "int64", "seq", "input_mask"),
    FeatureSpec("segment_ids", "int64", "seq", "input_type_ids"),
    FeatureSpec("token_boundary", "int64", "seq", "token_boundary"),
    FeatureSpec("masked_lm_positions", "int64", "pred", "masked_lm_positions"),
    FeatureSpec("masked_lm_ids", "int64", "pred", "masked_lm_ids"),
    FeatureSpec("masked_lm_weights", "float32", "pred", "masked_lm_weights"),
    FeatureSpec("next_sentence_labels", "int64", 1, "next_sentence_labels"),
)

FEATURE_NAMES = tuple(f.name for f in FEATURES)


def feature_lengths(max_seq_length: int,
                    max_predictions_per_seq: int) -> Dict[str, int]:
  """{official feature name: number of values per example}."""
  sizes = {"seq": max_seq_length, "pred": max_predictions_per_seq}
  return {f.name: sizes.get(f.length, f.length) for f in FEATURES}


def name_to_features(max_seq_length: int, max_predictions_per_seq: int):
  """The official parsing spec: {name: tf.io.FixedLenFeature}.

  Equal to `run_pretraining.input_fn_builder`'s `name_to_features`.
  """
  import tensorflow as tf
  lengths = feature_lengths(max_seq_length, max_predictions_per_seq)
  return {
      f.name: tf.io.FixedLenFeature(
          [lengths[f.name]], tf.int64 if f.dtype == "int64" else tf.float32)
      for f in FEATURES
  }
