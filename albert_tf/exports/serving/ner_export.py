"""SavedModel of a fine-tuned NER model that returns entities from raw text.

`export_ner(...)` writes one SavedModel whose `serving_default` signature
takes `text` (tf.string [batch]) and runs, in-graph, what fine-tuning does
in Python for raw text (albert_tf.exports.serving.ner_serving): words split
as data_pipeline.tasks.ner.word_splitting (whitespace and punctuation; one
word per CJK character), each word's pieces, the windows of fine-tuning,
each word's tag from its max-context window, and seqeval's entities.

Outputs, padded to the batch's most entities (E):
  entity_label  tf.string [batch, E]: the entity type ("PER"), "" padding;
  entity_start, entity_end  int32 [batch, E]: Unicode character offsets,
                -1 padding: in Python, text[start:end] is the entity;
  entity_score  float32 [batch, E]: mean probability of its words' tags.
Signature `token_ids`: the model alone, int32 input_word_ids, input_mask,
input_type_ids [batch, seq] -> `tag_logits`, `tag_probabilities` float32
[batch, seq, labels] (token_ids.py; tools.export_tflite converts it).

Assets: the vocabulary, albert_config.json, labels.txt (one tag a line,
index = logit), labels.json (data_pipeline.tasks.label_list, with the
scheme) and ner_settings.json (seq_length, doc_stride: the windows, so a
reader of the token-ids signature, tools.predict's ONNX and LiteRT
runtimes, cuts them as serving_default does). `load_ner(export_dir)`
wraps the signature for Python callers.
"""

import json
from typing import Callable, Dict, List, Sequence

import tensorflow as tf
import tf_keras

from albert_common import file_io
from albert_tf.exports import atomic_export
from albert_tf.exports import token_ids
from albert_tf.exports.options import check_export_dir_free
from albert_tf.exports.saved_model_loading import load_saved_model
from albert_tf.exports.serving.ner_serving import NerServing
from data_pipeline.tasks import label_list
from data_pipeline.tasks import length_buckets as length_buckets_lib
from data_pipeline.tokenization import factory as tokenizer_factory
from data_pipeline.tokenization import tf_sentencepiece
from data_pipeline.tokenization import tf_wordpiece
from data_pipeline.tokenization import wordpiece_tokenizer

# The windowing a reader needs to feed the token-ids signature as
# serving_default does (tools.predict's ONNX and LiteRT runtimes).
NER_SETTINGS_FILE = "ner_settings.json"


def export_ner(model: tf_keras.Model, export_dir: str,
               labels: label_list.LabelList, seq_length: int,
               doc_stride: int, spm_model_file: str = "",
               vocab_file: str = "", do_lower_case: bool = True,
               albert_config_file: str = "",
               length_buckets: Sequence[int] = ()) -> str:
  """Writes the raw-text serving SavedModel of a fine-tuned NER model.

  Args:
    model: an AlbertTokenClassifier.
    export_dir: must not exist; written under a temporary name and renamed
      (any filesystem).
    labels: the run's LabelList (tags in logit order, and their scheme).
    seq_length, doc_stride: as in fine-tuning.
    spm_model_file: the SentencePiece model, or
    vocab_file: a WordPiece vocab.txt (used when spm_model_file is empty).
    do_lower_case: as in fine-tuning.
    albert_config_file: copied as an asset when given.
    length_buckets: windows run at the smallest that holds them.

  Returns:
    export_dir.
  """
  check_export_dir_free(export_dir)
  python_tokenizer = tokenizer_factory.make_tokenizer(
      spm_model_file or None, None if spm_model_file else vocab_file,
      do_lower_case)
  control_ids = (python_tokenizer.cls_id, python_tokenizer.sep_id,
                 python_tokenizer.pad_id, python_tokenizer.unk_id)
  if spm_model_file:
    tokenizer = tf_sentencepiece.TFSentencePieceTokenizer(
        file_io.read_bytes(spm_model_file), do_lower_case=do_lower_case)
  else:
    tokenizer = tf_wordpiece.TFWordPieceTokenizer(
        wordpiece_tokenizer.load_vocab(vocab_file),
        do_lower_case=do_lower_case)

  def build(unused_vocab_copy):
    serving = NerServing(model, tokenizer, control_ids, labels.labels,
                         labels.scheme, seq_length, doc_stride,
                         length_buckets)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def serving_default(text):
      return serving.tag(text)

    return serving, {
        "serving_default": serving_default,
        token_ids.TOKEN_IDS: token_ids.token_ids_signature(serving.tag_ids)}

  return atomic_export.save_serving_model(
      export_dir, spm_model_file or vocab_file, build, albert_config_file,
      text_assets=[
          ("labels_file", "labels.txt", "\n".join(labels.labels) + "\n"),
          ("label_list_file", label_list.FILE_NAME,
           json.dumps(labels.to_dict(), indent=2) + "\n"),
          ("ner_settings_file", NER_SETTINGS_FILE,
           json.dumps({"seq_length": seq_length,
                       "doc_stride": doc_stride}) + "\n"),
          length_buckets_lib.export_asset(
              seq_length, length_buckets)],
      vocab_attribute="sp_model_file" if spm_model_file else "vocab_file",
      do_lower_case=do_lower_case)


def load_ner(export_dir: str) -> Callable[[Sequence[str]], List[List[Dict]]]:
  """The entities of raw texts, from a run_ner --export_dir.

  Returns:
    A function: texts (list of str) -> per text, a list of
    {"label": str, "start": int, "end": int, "text": str, "score": float}
    in order, where text[start:end] == entity["text"] (Unicode characters).

  Raises:
    UserInputError: export_dir is not a SavedModel.
  """
  signature = load_saved_model(export_dir).signatures["serving_default"]

  def tag(texts: Sequence[str]) -> List[List[Dict]]:
    texts = list(texts)
    if not texts:
      return []
    outputs = signature(text=tf.constant(texts, tf.string))
    labels = outputs["entity_label"].numpy()
    starts = outputs["entity_start"].numpy()
    ends = outputs["entity_end"].numpy()
    scores = outputs["entity_score"].numpy()
    result = []
    for i, text in enumerate(texts):
      result.append([
          dict(label=labels[i, e].decode("utf-8"), start=int(starts[i, e]),
               end=int(ends[i, e]), text=text[starts[i, e]:ends[i, e]],
               score=float(scores[i, e]))
          for e in range(labels.shape[1]) if starts[i, e] >= 0])
    return result
  return tag
