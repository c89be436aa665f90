"""The preprocessor: raw strings -> encoder inputs, in-graph.

The TF Hub preprocessor convention (tensorflow.org/hub/
common_saved_model_apis/text): calling it on a tf.string [batch] gives the
encoder inputs for one segment, `[CLS] a [SEP]`, padded / truncated to
`seq_length`. `.tokenize(strings)` -> int32 RaggedTensor [batch, (tokens)]
(ALBERT normalisation + SentencePiece + digit-comma rule, in-graph, ids
equal to those of `SentencePieceTokenizer.encode` in
data_pipeline.tokenization.sentencepiece_tokenizer);
`.bert_pack_inputs([tokens_a, tokens_b], seq_length=...)` packs one or two
segments as `[CLS] a [SEP] b [SEP]` (type ids 0 for a, 1 for b), trimming
the longer segment first (round robin) as the official `_truncate_seq_pair`.
Signatures: `serving_default` (`sentences`) and `two_segments`
(`text_a`, `text_b`), both at `seq_length`; with length buckets
(`preprocessor_signatures(..., length_buckets)`), at the smallest bucket
that holds the request's longest example (albert_tf.exports.bucketing).
Calling the model itself (`hub.KerasLayer`, TF Hub's convention) and
`.bert_pack_inputs(..., seq_length=N)` always give the fixed length.

Exported as <export_dir>/preprocessor (encoder.py) and inside the
classifier's serving model (classifier.py).
"""

from typing import Sequence

import tensorflow as tf
import tf_keras

from albert_tf.exports.bucketing import cut_to_bucket


def build_preprocessor(spm_model_file: str, do_lower_case: bool = True,
                       seq_length: int = 128,
                       vocab_file: str = None) -> tf_keras.Model:
  """The preprocessor (see module docstring) as a tf_keras model.

  With `spm_model_file` None, WordPiece from `vocab_file` (BERT's basic
  tokenizer + WordPiece in-graph, ids equal to
  data_pipeline.tokenization.wordpiece_tokenizer.WordPieceTokenizer.encode).
  """
  from official.nlp.modeling import layers as garden_layers
  from official.nlp.tools import export_tfhub_lib

  from data_pipeline.tokenization import factory as tokenizer_factory
  python_tokenizer = tokenizer_factory.make_tokenizer(
      spm_model_file, vocab_file, do_lower_case=do_lower_case)
  special = dict(start_of_sequence_id=python_tokenizer.cls_id,
                 end_of_segment_id=python_tokenizer.sep_id,
                 padding_id=python_tokenizer.pad_id,
                 mask_id=python_tokenizer.mask_id,
                 vocab_size=python_tokenizer.vocab_size)
  if spm_model_file:
    from data_pipeline.tokenization.tf_sentencepiece import (
      TFSentencePieceTokenizer,
    )
    tokenizer = TFSentencePieceTokenizer.from_file(
        spm_model_file, do_lower_case=do_lower_case, name="tokenize")
  else:
    from data_pipeline.tokenization.tf_wordpiece import TFWordPieceTokenizer
    tokenizer = TFWordPieceTokenizer(python_tokenizer.tokens,
                                     do_lower_case=do_lower_case,
                                     name="tokenize")
  sentences = tf_keras.Input(shape=(), dtype=tf.string, name="sentences")
  tokens = tokenizer(sentences)  # [batch, (tokens)]
  pack = garden_layers.BertPackInputs(
      seq_length=seq_length,
      special_tokens_dict={k: special[k] for k in (
          "start_of_sequence_id", "end_of_segment_id", "padding_id")})
  preprocessor = tf_keras.Model(sentences, pack(tokens), name="preprocessor")
  preprocessor.tokenize = tf_keras.Model(sentences, tokens)
  preprocessor.tokenize.get_special_tokens_dict = tf.train.Checkpoint()
  preprocessor.tokenize.get_special_tokens_dict.__call__ = tf.function(
      lambda: {k: tf.constant(v) for k, v in special.items()},
      input_signature=[])
  preprocessor.bert_pack_inputs = (
      export_tfhub_lib.BertPackInputsSavedModelWrapper(pack))
  return preprocessor


def pack_one(preprocessor, sentences, length_buckets: Sequence[int] = ()):
  """`[CLS] a [SEP]` of tf.string [batch], cut to the smallest bucket."""
  return cut_to_bucket(preprocessor(sentences), length_buckets)


def pack_two(preprocessor, text_a, text_b,
             length_buckets: Sequence[int] = ()):
  """`[CLS] a [SEP] b [SEP]`, cut to the smallest bucket."""
  # The wrapper's __call__ is an instance attribute (a tf.function).
  packed = preprocessor.bert_pack_inputs.__call__(
      [preprocessor.tokenize(text_a), preprocessor.tokenize(text_b)])
  return cut_to_bucket(packed, length_buckets)


def preprocessor_signatures(preprocessor, length_buckets: Sequence[int] = ()):
  """The SavedModel signatures `serving_default` and `two_segments`.

  Args:
    preprocessor: the model of `build_preprocessor`.
    length_buckets: increasing lengths ending with its seq_length; more
      than one: a request is cut to the smallest that holds it.
  """
  text = tf.TensorSpec([None], tf.string)

  @tf.function(input_signature=[text])
  def serving_default(sentences):
    return pack_one(preprocessor, sentences, length_buckets)

  @tf.function(input_signature=[text, text])
  def two_segments(text_a, text_b):
    return pack_two(preprocessor, text_a, text_b, length_buckets)

  return {"serving_default": serving_default, "two_segments": two_segments}
