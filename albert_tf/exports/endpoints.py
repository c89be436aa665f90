"""Endpoints that Keras 3's `keras.layers.TFSMLayer` can call.

A SavedModel *signature* takes keyword arguments only, so `TFSMLayer(path,
call_endpoint="serving_default")` cannot pass it the encoder's input dict
("too many positional arguments"). These endpoints are plain tf.functions
attached to the exported object, each taking ONE argument (the input dict,
or the strings), as TFSMLayer calls them:

encoder
  `serve`, `call_inference` and `serving_default`: dict of int32 [batch, seq]
  `input_word_ids`, `input_mask`, `input_type_ids` -> dict `sequence_output`
  [batch, seq, H], `pooled_output` [batch, H], `default` (= pooled_output),
  `encoder_outputs` (list of L [batch, seq, H]); dropout off.
  `call_training`: the same with dropout on, for
  `TFSMLayer(..., call_training_endpoint="call_training")`.
preprocessor
  `serve`, `call_inference` and `serving_default`: tf.string [batch] ->
  the encoder's input dict for one segment (`[CLS] a [SEP]`).
  `two_segments`: dict `text_a`, `text_b` (tf.string [batch]) -> the
  encoder's input dict for `[CLS] a [SEP] b [SEP]`.
  With length buckets, both give [batch, the smallest bucket holding the
  request's longest example] (albert_tf.exports.bucketing).

`serving_default` and `two_segments` have the names of the SavedModel
signatures (for TF Serving) so either name works in both worlds; `serve` is
TFSMLayer's default endpoint name, `call_inference` / `call_training` the
names its documentation uses. The functions wrap the tf_keras objects, so
they use the very variables `hub.KerasLayer(trainable=True)` trains.
"""

from typing import Sequence

import tensorflow as tf

from albert_common.encoder_inputs import ENCODER_INPUT_NAMES
from albert_tf.exports.preprocessor import pack_one
from albert_tf.exports.preprocessor import pack_two


def _encoder_input_signature():
  return [{name: tf.TensorSpec([None, None], tf.int32, name=name)
           for name in ENCODER_INPUT_NAMES}]


def _encoder_outputs(outputs):
  return {"sequence_output": outputs["sequence_output"],
          "pooled_output": outputs["pooled_output"],
          "default": outputs["pooled_output"],
          "encoder_outputs": list(outputs["encoder_outputs"])}


def add_encoder_endpoints(core) -> None:
  """Attaches the Keras 3 endpoints (module docstring) to `core` before save.

  Args:
    core: the tf_keras encoder export model
      (`encoder.build_encoder_export_model`).
  """

  @tf.function(input_signature=_encoder_input_signature())
  def call_inference(inputs):
    return _encoder_outputs(core(inputs, training=False))

  @tf.function(input_signature=_encoder_input_signature())
  def call_training(inputs):
    return _encoder_outputs(core(inputs, training=True))

  core.serve = call_inference
  core.call_inference = call_inference
  core.serving_default = call_inference
  core.call_training = call_training


def add_preprocessor_endpoints(preprocessor,
                               length_buckets: Sequence[int] = ()) -> None:
  """Attaches the Keras 3 endpoints (module docstring) to the preprocessor.

  Args:
    preprocessor: the tf_keras model of `preprocessor.build_preprocessor`,
      with its `tokenize` and `bert_pack_inputs` attributes.
    length_buckets: increasing lengths ending with its seq_length; more
      than one: a request is cut to the smallest that holds it.
  """
  text = tf.TensorSpec([None], tf.string)

  @tf.function(input_signature=[text])
  def call_inference(sentences):
    return pack_one(preprocessor, sentences, length_buckets)

  @tf.function(input_signature=[{"text_a": text, "text_b": text}])
  def two_segments(inputs):
    return pack_two(preprocessor, inputs["text_a"], inputs["text_b"],
                    length_buckets)

  preprocessor.serve = call_inference
  preprocessor.call_inference = call_inference
  preprocessor.serving_default = call_inference
  preprocessor.two_segments = two_segments
