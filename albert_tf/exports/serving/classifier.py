"""SavedModel of a fine-tuned classifier that serves raw text.

`export_classifier(...)` writes one SavedModel whose `serving_default`
signature takes tf.string [batch] inputs and does everything in-graph:
ALBERT normalisation + SentencePiece (the preprocessor of preprocessor.py),
packing `[CLS] a [SEP] (b [SEP])` with the official pair truncation, the
encoder and the classification head.

Signature inputs: `sentences` (one-segment tasks) or `text_a`, `text_b`
(pair tasks). Outputs of a GLUE model, classification: `probabilities`
float32 [batch, C], `logits` float32 [batch, C], `label_ids` int32 [batch],
`labels` tf.string [batch] (label names); regression (STS-B): `predictions`
float32 [batch].

Outputs of a model of one's own data (`label_list` given,
data_pipeline.tasks.label_list), names in the list's order:
  classification  `label` tf.string [batch] (the most probable name),
                  `probabilities` float32 [batch, C] (softmax), `logits`
  multi_label     `labels` tf.string [batch, C]: each label's name where
                  its probability is above the list's threshold, "" where
                  not (a dense tensor; keep the non-empty ones),
                  `probabilities` float32 [batch, C] (sigmoid), `logits`
  regression      `score` float32 [batch]

Signature `token_ids` (for on-device runtimes, see token_ids.py): int32
[batch, seq] `input_word_ids`, `input_mask`, `input_type_ids` -> `logits`
and `probabilities` (regression: `predictions`).

An early-exit model (run_classifier --early_exit, AlbertEarlyExitClassifier;
`exit_patience` given): `serving_default` and `token_ids` run the exit loop
at that patience (networks/early_exit_encoder.py: each example stops at its
own depth) and return `exit_layer` int32 [batch] (1..L) beside the outputs
above; the signature `early_exit` takes the raw-text inputs plus
`exit_patience` (int32 scalar, 0 = full depth) and returns the same, so a
caller trades accuracy for speed per request; `token_ids_full_depth` is
`token_ids` without the loop (what export_onnx converts by default: ONNX
Runtime ran the loop slower than full depth when it saved few layers);
`token_ids_unbranched` is `token_ids` with the loop's unbranched form
(what export_tflite converts, early_exit_encoder.early_exit's `branches`).
Without an early-exit model the signatures and outputs are as before.

Assets: the SentencePiece model, `albert_config.json`, `labels.txt` and
(own data) `labels.json`.
Load with `albert_tf.exports.load_saved_model(path)` (it registers the
tensorflow-text ops) and call `.signatures["serving_default"]`.
"""

import json
from typing import Optional, Sequence, Tuple

import tensorflow as tf
import tf_keras

from albert_common.run_constants import EXIT_THRESHOLD
from albert_tf.exports import atomic_export
from albert_tf.exports import token_ids
from albert_tf.exports.bucketing import cut_to_bucket
from albert_tf.exports.options import check_export_dir_free
from albert_tf.exports.preprocessor import build_preprocessor
from data_pipeline.tasks import label_list as label_list_lib
from data_pipeline.tasks import length_buckets as length_buckets_lib
from data_pipeline.tasks.label_list import LabelList

EARLY_EXIT = "early_exit"


class _ClassifierServing(tf.Module):
  """Preprocessor + classifier, tracked together for tf.saved_model.save."""

  def __init__(self, model: tf_keras.Model, preprocessor: tf_keras.Model,
               labels: Optional[Sequence[str]],
               length_buckets: Tuple[int, ...] = (),
               label_list: Optional[LabelList] = None,
               exit_patience: Optional[int] = None,
               exit_threshold: float = EXIT_THRESHOLD):
    super().__init__(name="classifier_serving")
    self.exit_patience = exit_patience
    self.exit_threshold = float(exit_threshold)
    self.label_list = label_list
    self.length_buckets = tuple(length_buckets)
    self.model = model
    self.preprocessor = preprocessor
    self.labels = labels
    self.label_table = (tf.constant(list(labels), tf.string)
                        if labels is not None else None)

  def _logits(self, inputs, patience=None, branches=True):
    """(logits float32 [batch, C], {} or {"exit_layer": int32 [batch]})."""
    if self.exit_patience is None:
      return tf.cast(self.model(inputs, training=False)["logits"],
                     tf.float32), {}
    patience = self.exit_patience if patience is None else patience
    outputs = self.model.early_exit(inputs, patience, self.exit_threshold,
                                    branches=branches)
    return outputs["logits"], {"exit_layer": outputs["exit_layer"]}

  def classify_ids(self, inputs, branches=True):
    """Encoder inputs (int32 [batch, seq]) -> logits and probabilities
    (and exit_layer)."""
    logits, exits = self._logits(inputs, branches=branches)
    return dict(token_ids.classification_outputs(
        logits, self.labels is None, multi_label=self._task_type ==
        "multi_label"), **exits)

  @property
  def _task_type(self) -> Optional[str]:
    return self.label_list.task_type if self.label_list else None

  def classify_ids_unbranched(self, inputs):
    """classify_ids with the exit loop's unbranched form (LiteRT's)."""
    return self.classify_ids(inputs, branches=False)

  def classify_ids_full_depth(self, inputs):
    """classify_ids without the exit loop: every example at full depth
    (exit_layer = L)."""
    logits = tf.cast(self.model(inputs, training=False)["logits"],
                     tf.float32)
    layers = tf.fill(tf.shape(logits)[:1], self.model.num_layers)
    return dict(token_ids.classification_outputs(
        logits, self.labels is None, multi_label=self._task_type ==
        "multi_label"), exit_layer=layers)

  def classify(self, segments, patience=None):
    tokens = [self.preprocessor.tokenize(s) for s in segments]
    # The wrapper's __call__ is an instance attribute (a tf.function).
    inputs = self.preprocessor.bert_pack_inputs.__call__(tokens)
    inputs = cut_to_bucket(inputs, self.length_buckets)
    logits, exits = self._logits(inputs, patience)
    if self.label_list is not None:
      return dict(self._named_outputs(logits), **exits)
    if self.labels is None:
      return dict(predictions=logits[:, 0], **exits)
    label_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
    return dict(logits=logits, probabilities=tf.nn.softmax(logits, axis=-1),
                label_ids=label_ids,
                labels=tf.gather(self.label_table, label_ids), **exits)

  def _named_outputs(self, logits):
    """One's own data: names, not indices (module docstring)."""
    if self._task_type == "regression":
      return dict(score=logits[:, 0])
    if self._task_type == "multi_label":
      probabilities = tf.sigmoid(logits)
      threshold = (0.5 if self.label_list.threshold is None
                   else self.label_list.threshold)
      names = tf.broadcast_to(self.label_table[None, :], tf.shape(logits))
      chosen = tf.where(probabilities > threshold, names, "")
      return dict(labels=chosen, probabilities=probabilities, logits=logits)
    label_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
    return dict(label=tf.gather(self.label_table, label_ids),
                probabilities=tf.nn.softmax(logits, axis=-1), logits=logits)


def export_classifier(model: tf_keras.Model, export_dir: str,
                      spm_model_file: str, labels: Optional[Sequence[str]],
                      num_segments: int, seq_length: int,
                      do_lower_case: bool = True,
                      albert_config_file: str = "",
                      vocab_file: str = "",
                      length_buckets: Sequence[int] = (),
                      label_list: Optional[LabelList] = None,
                      exit_patience: Optional[int] = None,
                      exit_threshold: float = EXIT_THRESHOLD,
                      extra_text_assets: Sequence[Tuple[str, str, str]] = ()
                     ) -> str:
  """Writes the serving SavedModel of a fine-tuned classifier.

  Args:
    model: an AlbertClassifier (dict inputs -> dict with `logits`).
    export_dir: must not exist; created complete (temporary name, renamed);
      any filesystem.
    spm_model_file: the model's SentencePiece model.
    labels: label names in logit order, or None for regression.
    num_segments: 1 (`sentences`) or 2 (`text_a`, `text_b`).
    seq_length: tokens per packed input (the fine-tuning max_seq_length).
    do_lower_case: as in fine-tuning.
    albert_config_file: copied as an asset when given.
    vocab_file: a WordPiece vocab.txt, used when spm_model_file is empty
      (the preprocessor then runs WordPiece in-graph).
    length_buckets: increasing lengths ending with seq_length: a request
      runs at the smallest that holds its longest example
      (albert_tf.exports.bucketing); () or one: always seq_length.
    label_list: a model of one's own data: its labels (their order =
      `labels`), task type and threshold; the outputs are named (module
      docstring) and the list is kept as the asset labels.json.
    exit_patience: an AlbertEarlyExitClassifier's patience for
      serving_default and token_ids (0 = full depth); adds the signature
      `early_exit` (module docstring). None: no exit loop.
    exit_threshold: regression: a change below it is "the same".
    extra_text_assets: (attribute, file name, text) assets written beside
      the others (tools.distill's distillation.json).

  Returns:
    export_dir.
  """
  check_export_dir_free(export_dir)
  if num_segments not in (1, 2):
    raise ValueError(f"num_segments must be 1 or 2, got {num_segments}")
  labels_text = ("\n".join(labels) + "\n" if labels is not None
                 else "<regression>\n")
  text_assets = [("labels_file", "labels.txt", labels_text),
                 length_buckets_lib.export_asset(
                     seq_length, length_buckets)]
  if label_list is not None:
    if list(label_list.labels) != list(labels or ()):
      raise ValueError(f"labels {labels} differ from the label list's "
                       f"{label_list.labels}")
    text_assets.append(("label_list_file", label_list_lib.FILE_NAME,
                        json.dumps(label_list.to_dict(), indent=2) + "\n"))
  text_assets.extend(extra_text_assets)

  def build(vocab_copy):
    preprocessor = build_preprocessor(
        vocab_copy if spm_model_file else None, do_lower_case, seq_length,
        vocab_file=None if spm_model_file else vocab_copy)
    serving = _ClassifierServing(model, preprocessor, labels,
                                 tuple(length_buckets), label_list,
                                 exit_patience, exit_threshold)
    signatures = {
        "serving_default": _signature(serving, num_segments),
        token_ids.TOKEN_IDS: token_ids.token_ids_signature(
            serving.classify_ids)}
    if exit_patience is not None:
      signatures[EARLY_EXIT] = _early_exit_signature(serving, num_segments)
      signatures[token_ids.TOKEN_IDS_FULL_DEPTH] = (
          token_ids.token_ids_signature(serving.classify_ids_full_depth))
      signatures[token_ids.TOKEN_IDS_UNBRANCHED] = (
          token_ids.token_ids_signature(serving.classify_ids_unbranched))
    return serving, signatures

  return atomic_export.save_serving_model(
      export_dir, spm_model_file or vocab_file, build, albert_config_file,
      text_assets=text_assets,
      vocab_attribute="sp_model_file" if spm_model_file else "vocab_file",
      do_lower_case=do_lower_case)


def _early_exit_signature(serving: _ClassifierServing, num_segments: int):
  """early_exit: the raw-text inputs plus exit_patience (int32 scalar)."""
  text = tf.TensorSpec([None], tf.string)
  patience = tf.TensorSpec([], tf.int32)
  if num_segments == 1:
    @tf.function(input_signature=[text, patience])
    def early_exit(sentences, exit_patience):
      return serving.classify([sentences], exit_patience)
  else:
    @tf.function(input_signature=[text, text, patience])
    def early_exit(text_a, text_b, exit_patience):
      return serving.classify([text_a, text_b], exit_patience)
  return early_exit


def _signature(serving: _ClassifierServing, num_segments: int):
  """serving_default: `sentences`, or `text_a` and `text_b` (tf.string [b])."""
  text = tf.TensorSpec([None], tf.string)
  if num_segments == 1:
    @tf.function(input_signature=[text])
    def serving_default(sentences):
      return serving.classify([sentences])
  else:
    @tf.function(input_signature=[text, text])
    def serving_default(text_a, text_b):
      return serving.classify([text_a, text_b])
  return serving_default
