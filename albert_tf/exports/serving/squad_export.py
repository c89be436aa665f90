"""SavedModel of a fine-tuned SQuAD model that answers from raw strings.

`export_squad(...)` writes one SavedModel whose `serving_default` signature
takes `question` and `context` (tf.string [batch]) and runs, in-graph, what
`run_squad` does in Python for predictions.json:

  1. ALBERT normalisation of the context one character at a time, keeping
     each normalised character's index in the original text
     (`sentencepiece_offsets.normalize_with_offsets`), SentencePiece and
     the digit-comma re-split, and every piece's range of original characters
     (`sentencepiece_offsets.tokenize_paragraph`; squad_serving_context);
  2. the question's first `max_query_length` pieces; windows of the context
     every `doc_stride` pieces; `[CLS] question [SEP] window [SEP]` at
     `seq_length`; each piece's max-context window;
  3. the model on all windows of the question;
  4. the post-processing of `squad_postprocess`: the `n_best_size` best
     starts and ends (v1.1 / [CLS] null score) or the start/end beam (v2.0
     answer-class model), valid spans only, best start + end score; the text
     cut out of the original context and stripped; for v2.0 the null odds
     (minimum answer-class logit over windows, or the [CLS] score minus the
     best span score) and "" above the threshold predictions.json used.

Outputs: `answer` tf.string [batch] (predictions.json's text); `start`,
`end` int32 [batch], its character (code point) offsets in `context`
(`context[start:end] == answer`; -1, -1 for ""); `score` float32 [batch]
(start + end logits, or log-probabilities for v2.0). SQuAD v2.0 also:
`no_answer_probability` (sigmoid of the null odds), `null_odds`,
`best_answer` (the best non-empty span, as nbest_predictions.json's first).
Signature `token_ids`: the model alone on int32 [batch, seq] inputs ->
`start_logits`, `end_logits` (the v2.0 answer-class model: also `p_mask` in,
its beam out; token_ids.py). For v2.0 another signature,
`with_threshold`, also takes `null_score_diff_threshold` (float32 scalar)
to trade answers for abstentions at serving time.

The asset `squad_settings.json` records the fine-tuning values the graph
was built with (doc_stride, max_query_length, n_best_size,
max_answer_length, and for v2.0 null_score_diff_threshold), so a LiteRT
file made from the export (tools.export_tflite) post-processes as it does.

With a WordPiece vocabulary (`vocab_file`), step 1 is BERT's basic
tokenization and WordPiece with offsets instead
(squad_serving_wordpiece.WordPieceSquadServing); the rest is the same.

Where this can differ from the Python path (inherited from the in-graph
tokenizer, see data_pipeline.tokenization.tf_sentencepiece): ~150 code points
that ICU and Python's unicodedata normalise differently; contexts where NFKD
turns a character into a space next to another space (the Python path then falls
back to an approximate alignment).
"""

import json
from typing import Optional, Sequence

import tensorflow as tf
import tf_keras

from albert_common import file_io
from albert_tf.exports import atomic_export
from albert_tf.exports import token_ids
from albert_tf.exports.options import check_export_dir_free
from albert_tf.exports.serving.squad_serving import SquadServing
from albert_tf.exports.serving.squad_serving_wordpiece import (
  WordPieceSquadServing,
)
from data_pipeline.tasks import length_buckets as length_buckets_lib
from data_pipeline.tokenization import (
  wordpiece_tokenizer as wordpiece_tokenization,
)

# The fine-tuning values an export answers with (litert.runner reads it).
SQUAD_SETTINGS_FILE = "squad_settings.json"


def export_squad(model: tf_keras.Model, export_dir: str, spm_model_file: str,
                 seq_length: int, doc_stride: int, max_query_length: int,
                 n_best_size: int, max_answer_length: int, beam: bool,
                 version_2: bool, threshold: Optional[float] = None,
                 do_lower_case: bool = True,
                 albert_config_file: str = "", vocab_file: str = "",
                 length_buckets: Sequence[int] = ()) -> str:
  """Writes the raw-text serving SavedModel of a fine-tuned SQuAD model.

  Args:
    model: AlbertSpanLabeler, or AlbertSquadV2 with `beam`.
    export_dir: must not exist; written under a temporary name and renamed
      (any filesystem).
    spm_model_file: the model's SentencePiece model.
    seq_length ... max_answer_length: as in fine-tuning.
    beam, version_2: the model kind and SQuAD version.
    threshold: v2.0: answer "" where the null odds exceed it (the
      null_score_diff_threshold of predictions.json; None: 0.0).
    do_lower_case: as in fine-tuning.
    albert_config_file: copied as an asset when given.
    vocab_file: a WordPiece vocab.txt, used when spm_model_file is empty
      (squad_serving_wordpiece.WordPieceSquadServing).
    length_buckets: see SquadServing.

  Returns:
    export_dir.
  """
  check_export_dir_free(export_dir)
  settings = (seq_length, doc_stride, max_query_length, n_best_size,
              max_answer_length, beam, version_2,
              0.0 if threshold is None else threshold, do_lower_case)
  if spm_model_file:
    model_proto = file_io.read_bytes(spm_model_file)
  else:
    tokens = wordpiece_tokenization.load_vocab(vocab_file)

  def build(unused_sp_copy):
    if spm_model_file:
      serving = SquadServing(model, model_proto, *settings,
                             length_buckets=length_buckets)
    else:
      serving = WordPieceSquadServing(
          model, tokens, *settings, length_buckets=length_buckets)
    return serving, _signatures(serving, version_2)

  recorded = dict(doc_stride=doc_stride, max_query_length=max_query_length,
                  n_best_size=n_best_size,
                  max_answer_length=max_answer_length,
                  null_score_diff_threshold=(settings[7] if version_2
                                             else None))
  return atomic_export.save_serving_model(
      export_dir, spm_model_file or vocab_file, build, albert_config_file,
      text_assets=[("squad_settings_file", SQUAD_SETTINGS_FILE,
                    json.dumps(recorded, indent=2) + "\n"),
                   length_buckets_lib.export_asset(
                       seq_length, length_buckets)],
      vocab_attribute="sp_model_file" if spm_model_file else "vocab_file",
      do_lower_case=do_lower_case)


def _signatures(serving: SquadServing, version_2: bool):
  """serving_default (`question`, `context`: tf.string [batch]) and, for
  v2.0, with_threshold (also `null_score_diff_threshold`: float32 [])."""
  text = tf.TensorSpec([None], tf.string)

  @tf.function(input_signature=[text, text])
  def serving_default(question, context):
    return serving.answer(question, context)

  signatures = {"serving_default": serving_default,
                token_ids.TOKEN_IDS: token_ids.token_ids_signature(
                    serving.answer_ids,
                    extra_inputs=("p_mask",) if serving.beam else ())}
  if version_2:
    @tf.function(input_signature=[text, text,
                                  tf.TensorSpec([], tf.float32)])
    def with_threshold(question, context, null_score_diff_threshold):
      return serving.answer(question, context, null_score_diff_threshold)
    signatures["with_threshold"] = with_threshold
  return signatures
