"""SavedModels of fine-tuned multiple-choice models that answer from raw
strings: RACE's (`export_race`) and one's own (`export_multiple_choice`).

`export_race(...)` writes one SavedModel whose `serving_default` signature
takes `article`, `question` (tf.string [batch]) and `options` (tf.string
[batch, 4]) and builds in-graph the inputs
`race_features.convert_examples_to_arrays` builds in Python: per option the
question with its blank "_" filled by the option (else "question option"),
its last `max_qa_length` pieces, and `[CLS] article [SEP] question+option
[SEP]` with the article cut to fit `seq_length`; then the multiple-choice
model.

Outputs: `answer` tf.string [batch] ("A".."D"), `answer_index` int32
[batch], `option` tf.string [batch] (the chosen option's text),
`probabilities` float32 [batch, 4] (as test_predictions.json), `logits`.
Signature `token_ids`: the model alone on int32 [batch, 4, seq] inputs ->
`logits`, `probabilities` (token_ids.py).

`export_multiple_choice(...)` (tools.run_multiple_choice) is the same
featurisation over `num_choices` choices; its `serving_default` takes
`context`, `question` (tf.string [batch]; "" when there is none) and
`choices` (tf.string [batch, num_choices]) and returns `answer_index`
int32 [batch], `choice` tf.string [batch] (the chosen choice's text),
`probabilities` float32 [batch, num_choices] and `logits`; `token_ids`
takes int32 [batch, num_choices, seq].

Assets of both: the vocabulary, choice_settings.json (seq_length,
max_qa_length: the packing, for readers that feed `token_ids`) and
length_buckets.json (data_pipeline.tasks.length_buckets).
"""

import json
from typing import Sequence

import tensorflow as tf
import tf_keras

from albert_common import file_io
from albert_common.encoder_inputs import INPUT_MASK
from albert_common.encoder_inputs import INPUT_TYPE_IDS
from albert_common.encoder_inputs import INPUT_WORD_IDS
from albert_tf.exports import atomic_export
from albert_tf.exports import token_ids
from albert_tf.exports.bucketing import cut_to_bucket
from albert_tf.exports.options import check_export_dir_free
from data_pipeline.tasks import length_buckets as length_buckets_lib
from data_pipeline.tasks.race import examples as race_examples
from data_pipeline.tokenization import tf_sentencepiece as tf_tokenization

NUM_CHOICES = len(race_examples.LABELS)


class RaceServing(tf.Module):
  """The in-graph RACE featurisation around an AlbertMultipleChoice.

  Args:
    model: dict of int32 [batch, C, seq] -> dict with `logits` [batch, C].
    model_proto: the SentencePiece model bytes, or None with `vocab_tokens`.
    seq_length, max_qa_length: as in fine-tuning.
    do_lower_case: the tokenizer's.
    vocab_tokens: a WordPiece vocabulary (tokens in id order), used when
      model_proto is None: WordPiece in-graph.
    length_buckets: a request runs at the smallest that holds its longest
      choice (albert_tf.exports.bucketing); () or one: at seq_length.
    num_choices: C, the choices of a question (RACE: 4).
  """

  def __init__(self, model: tf_keras.Model, model_proto: bytes,
               seq_length: int, max_qa_length: int,
               do_lower_case: bool = True, vocab_tokens=None,
               length_buckets: Sequence[int] = (),
               num_choices: int = NUM_CHOICES):
    super().__init__(name="race_serving")
    self.num_choices = num_choices
    self.length_buckets = tuple(length_buckets)
    self.model = model
    if model_proto is None:
      from data_pipeline.tokenization import (
        tf_wordpiece as tf_wordpiece_tokenization,
      )
      self.tokenizer = tf_wordpiece_tokenization.TFWordPieceTokenizer(
          vocab_tokens, do_lower_case=do_lower_case)
      index = {t: i for i, t in enumerate(vocab_tokens)}
      self.cls_id, self.sep_id, self.pad_id = (
          index[t] for t in ("[CLS]", "[SEP]", "[PAD]"))
    else:
      self.tokenizer = tf_tokenization.TFSentencePieceTokenizer(
          model_proto, do_lower_case=do_lower_case)
      import sentencepiece as spm
      sp = spm.SentencePieceProcessor(model_proto=model_proto)
      self.cls_id, self.sep_id, self.pad_id = (
          sp.PieceToId(p) for p in ("[CLS]", "[SEP]", "<pad>"))
    self.seq_length = seq_length
    self.max_qa_length = max_qa_length
    self.letters = tf.constant(list(race_examples.LABELS))

  def inputs(self, article, question, options):
    """Model inputs: dict of int32 [batch, C, seq_length]."""
    batch = tf.shape(article)[0]
    # choice_inputs.question_option_text, per option: every "_" becomes the
    # option.
    questions = tf.repeat(question, self.num_choices)  # [b*C]
    flat_options = tf.reshape(options, [-1])
    parts = tf.strings.split(questions, "_")  # [b*C, (k)]
    with_option = parts.with_flat_values(tf.strings.join(
        [parts.flat_values, tf.repeat(flat_options, parts.row_lengths())]))
    joined = tf.strings.reduce_join(with_option, axis=1)  # one option extra
    filled = tf.strings.substr(
        joined, tf.zeros_like(tf.strings.length(joined)),
        tf.strings.length(joined) - tf.strings.length(flat_options))
    has_blank = parts.row_lengths() > 1
    qa_text = tf.where(has_blank, filled,
                       tf.strings.join([questions, flat_options], " "))
    qa = self.tokenizer(qa_text)  # [b*C, (q)]
    qa_len = tf.minimum(qa.row_lengths(), self.max_qa_length)
    qa = tf.RaggedTensor.from_row_lengths(
        tf.gather(qa.flat_values, _last_k(qa.row_starts(), qa.row_lengths(),
                                          qa_len)), qa_len)
    article_ids = tf.gather(self.tokenizer(article),
                            tf.repeat(tf.range(batch), self.num_choices))
    keep = tf.minimum(article_ids.row_lengths(),
                      self.seq_length - 3 - qa_len)
    context = tf.RaggedTensor.from_row_lengths(
        tf.gather(article_ids.flat_values,
                  _first_k(article_ids.row_starts(), keep)), keep)
    n = batch * self.num_choices
    cls = tf.fill([n, 1], self.cls_id)
    sep = tf.fill([n, 1], self.sep_id)
    ids = tf.concat([tf.RaggedTensor.from_tensor(cls), context,
                     tf.RaggedTensor.from_tensor(sep), qa,
                     tf.RaggedTensor.from_tensor(sep)], axis=1)
    length = ids.row_lengths()
    word_ids = ids.to_tensor(default_value=self.pad_id,
                             shape=[None, self.seq_length])
    position = tf.range(self.seq_length, dtype=tf.int64)[None, :]
    mask = tf.cast(position < length[:, None], tf.int32)
    second = position >= (keep + 2)[:, None]
    type_ids = tf.cast(second, tf.int32) * mask
    shape = [batch, self.num_choices, self.seq_length]
    return {INPUT_WORD_IDS: tf.reshape(word_ids, shape),
            INPUT_MASK: tf.reshape(mask, shape),
            INPUT_TYPE_IDS: tf.reshape(type_ids, shape)}

  def answer_ids(self, inputs):
    """int32 [batch, C, seq] inputs -> logits and probabilities."""
    logits = self.model(inputs, training=False)["logits"]
    return token_ids.classification_outputs(logits, regression=False)

  def answer(self, article, question, options):
    inputs = cut_to_bucket(self.inputs(article, question, options),
                           self.length_buckets)
    logits = tf.cast(self.model(inputs, training=False)["logits"],
                     tf.float32)
    index = tf.argmax(logits, axis=-1, output_type=tf.int32)
    return dict(answer=tf.gather(self.letters, index), answer_index=index,
                option=tf.gather(options, index, batch_dims=1),
                probabilities=tf.nn.softmax(logits, axis=-1), logits=logits)

  def choose(self, context, question, choices):
    """One's own multiple choice: answer_index, choice, probabilities."""
    inputs = cut_to_bucket(self.inputs(context, question, choices),
                           self.length_buckets)
    logits = tf.cast(self.model(inputs, training=False)["logits"],
                     tf.float32)
    index = tf.argmax(logits, axis=-1, output_type=tf.int32)
    return dict(answer_index=index,
                choice=tf.gather(choices, index, batch_dims=1),
                probabilities=tf.nn.softmax(logits, axis=-1), logits=logits)


def _first_k(starts, k):
  """Flat indexes of the first k[i] values of each row (row starts given)."""
  return tf.repeat(starts, k) + _ranges(k)


def _last_k(starts, lengths, k):
  """Flat indexes of the last k[i] values of each row."""
  return tf.repeat(starts + lengths - k, k) + _ranges(k)


def _ranges(k):
  """[0..k0), [0..k1), ... concatenated."""
  return tf.range(tf.reduce_sum(k)) - tf.repeat(tf.cumsum(k, exclusive=True),
                                                k)


# The packing a reader needs to feed the token-ids signature as
# serving_default does (tools.predict's ONNX and LiteRT runtimes).
CHOICE_SETTINGS_FILE = "choice_settings.json"


def _text_assets(seq_length: int, max_qa_length: int,
                 length_buckets: Sequence[int]):
  """The assets recording the export's packing and length buckets."""
  settings = json.dumps({"seq_length": seq_length,
                         "max_qa_length": max_qa_length}) + "\n"
  return [("choice_settings_file", CHOICE_SETTINGS_FILE, settings),
          length_buckets_lib.export_asset(seq_length, length_buckets)]


def _vocabulary(spm_model_file: str, vocab_file: str):
  """(SentencePiece model bytes or None, WordPiece tokens or None)."""
  if spm_model_file:
    return file_io.read_bytes(spm_model_file), None
  from data_pipeline.tokenization import (
    wordpiece_tokenizer as wordpiece_tokenization,
  )
  return None, wordpiece_tokenization.load_vocab(vocab_file)


def export_race(model: tf_keras.Model, export_dir: str, spm_model_file: str,
                seq_length: int, max_qa_length: int,
                do_lower_case: bool = True,
                albert_config_file: str = "", vocab_file: str = "",
                length_buckets: Sequence[int] = ()) -> str:
  """Writes the raw-text serving SavedModel of a fine-tuned RACE model.

  Args:
    model: an AlbertMultipleChoice with 4 choices.
    export_dir: must not exist; written under a temporary name and renamed
      (any filesystem).
    spm_model_file: the model's SentencePiece model.
    seq_length, max_qa_length, do_lower_case: as in fine-tuning.
    albert_config_file: copied as an asset when given.
    vocab_file: a WordPiece vocab.txt, used when spm_model_file is empty.
    length_buckets: see RaceServing.

  Returns:
    export_dir.
  """
  check_export_dir_free(export_dir)
  model_proto, vocab_tokens = _vocabulary(spm_model_file, vocab_file)

  def build(unused_sp_copy):
    serving = RaceServing(model, model_proto, seq_length, max_qa_length,
                          do_lower_case, vocab_tokens, length_buckets)

    @tf.function(input_signature=[
        tf.TensorSpec([None], tf.string), tf.TensorSpec([None], tf.string),
        tf.TensorSpec([None, NUM_CHOICES], tf.string)])
    def serving_default(article, question, options):
      return serving.answer(article, question, options)

    return serving, {
        "serving_default": serving_default,
        token_ids.TOKEN_IDS: token_ids.token_ids_signature(
            serving.answer_ids, num_choices=NUM_CHOICES)}

  return atomic_export.save_serving_model(
      export_dir, spm_model_file or vocab_file, build, albert_config_file,
      text_assets=_text_assets(seq_length, max_qa_length, length_buckets),
      vocab_attribute="sp_model_file" if spm_model_file else "vocab_file",
      do_lower_case=do_lower_case)


def export_multiple_choice(model: tf_keras.Model, export_dir: str,
                           spm_model_file: str, seq_length: int,
                           max_qa_length: int, num_choices: int,
                           do_lower_case: bool = True,
                           albert_config_file: str = "",
                           vocab_file: str = "",
                           length_buckets: Sequence[int] = ()) -> str:
  """Writes the raw-text serving SavedModel of one's own multiple-choice
  model (see the module docstring for its signatures).

  Args:
    model: an AlbertMultipleChoice with `num_choices` choices.
    export_dir: must not exist; written under a temporary name and renamed
      (any filesystem).
    spm_model_file, vocab_file: the model's vocabulary (SentencePiece, else
      WordPiece).
    seq_length, max_qa_length, do_lower_case: as in fine-tuning.
    num_choices: the choices of every question.
    albert_config_file: copied as an asset when given.
    length_buckets: see RaceServing.

  Returns:
    export_dir.
  """
  check_export_dir_free(export_dir)
  model_proto, vocab_tokens = _vocabulary(spm_model_file, vocab_file)

  def build(unused_sp_copy):
    serving = RaceServing(model, model_proto, seq_length, max_qa_length,
                          do_lower_case, vocab_tokens, length_buckets,
                          num_choices)

    @tf.function(input_signature=[
        tf.TensorSpec([None], tf.string), tf.TensorSpec([None], tf.string),
        tf.TensorSpec([None, num_choices], tf.string)])
    def serving_default(context, question, choices):
      return serving.choose(context, question, choices)

    return serving, {
        "serving_default": serving_default,
        token_ids.TOKEN_IDS: token_ids.token_ids_signature(
            serving.answer_ids, num_choices=num_choices)}

  return atomic_export.save_serving_model(
      export_dir, spm_model_file or vocab_file, build, albert_config_file,
      text_assets=_text_assets(seq_length, max_qa_length, length_buckets),
      vocab_attribute="sp_model_file" if spm_model_file else "vocab_file",
      do_lower_case=do_lower_case)
