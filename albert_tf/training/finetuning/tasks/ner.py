"""Token classification (NER) fine-tuning on the shared FinetuningRunner.

AlbertTokenClassifier, cross-entropy over each word's first piece (the
other pieces, [CLS], [SEP] and padding are ignored; the loss is the mean
over the batch's tagged pieces, as Hugging Face's -100 labels give). The
data: data_pipeline.tasks.ner (CoNLL, JSON lines, CLUENER; windows of long
sentences, each word predicted from its max-context window).

Outputs in output_dir, besides the runner's (checkpoints, best/,
eval_results.json, TensorBoard):
  labels.json               the tags (index = logit), with their scheme
  dev_predictions.<ext>     --do_eval: the dev file with the best
                            checkpoint's tags, in its own format
  test_predictions.<ext>    --do_predict: the test file likewise
  test_results.json         --do_predict on a tagged test file: its metrics
Metrics (data_pipeline.tasks.ner.metrics): seqeval precision, recall, f1
(main metric), token accuracy, and per entity type.
"""

import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple

from absl import logging
import numpy as np
import tensorflow as tf

from albert_common import file_io
from albert_common.encoder_inputs import ENCODER_INPUT_NAMES
from albert_common.errors import UserInputError
from albert_tf.models.albert_token_classifier import AlbertTokenClassifier
from albert_tf.training import output_dir
from albert_tf.training.finetuning import export_once
from albert_tf.training.finetuning import multi_worker
from albert_tf.training.finetuning import params as finetuning_params
from albert_tf.training.finetuning import runner as finetuning_runner
from albert_tf.training.finetuning import task as finetuning_task
from albert_tf.training.finetuning.ner_settings import NerOptions
from albert_tf.training.finetuning.ner_settings import check_ner
from albert_tf.training.finetuning.ner_settings import read_files
from data_pipeline.tasks import label_list
from data_pipeline.tasks import length_buckets
from data_pipeline.tasks.ner import entity_spans
from data_pipeline.tasks.ner import features as ner_features
from data_pipeline.tasks.ner import metrics as ner_metrics
from data_pipeline.tasks.ner import ner_files
from data_pipeline.tasks.ner import task_files as ner_task_files
from data_pipeline.tasks.ner import word_splitting
from data_pipeline.tasks.ner.sentences import NerFile


def token_loss(labels: Dict[str, tf.Tensor], outputs: Dict[str, tf.Tensor],
               normaliser: Optional[Tuple[tf.Tensor, tf.Tensor]] = None
              ) -> tf.Tensor:
  """Cross-entropy at the tagged pieces (label_ids >= 0), [batch]: each
  window's sum, scaled so that the batch mean is the mean over the batch's
  tagged pieces.

  Args:
    labels: label_ids int32 [batch, seq], -1 where untagged.
    outputs: logits [batch, seq, num_labels].
    normaliser: (windows, tagged pieces), float32 scalars, of the whole batch
      the mean is over (token_batch_normaliser); default this batch's. A
      micro-batch of an accumulated update passes its update's, so that its
      losses are its share of the update's mean, not a mean of its own.
  """
  label_ids = labels[ner_features.LABEL_IDS]  # [batch, seq]
  tagged = tf.cast(label_ids >= 0, tf.float32)
  per_piece = tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=tf.maximum(label_ids, 0),
      logits=tf.cast(outputs["logits"], tf.float32)) * tagged
  windows, tagged_total = normaliser or token_batch_normaliser(labels)
  return tf.reduce_sum(per_piece, axis=1) * windows / tf.maximum(
      tagged_total, 1.0)


def token_batch_normaliser(labels: Dict[str, tf.Tensor]
                          ) -> Tuple[tf.Tensor, tf.Tensor]:
  """(windows, tagged pieces), float32: what token_loss's batch mean divides
  by. Under R > 1 replicas (replica context) the global batch's: this
  replica's windows times R and the tagged pieces summed over the
  replicas, so each replica's mean divided by R (the trainer's share) is
  its part of the mean over every tagged piece of the update, not a mean
  of per-replica means."""
  label_ids = labels[ner_features.LABEL_IDS]  # [batch, seq]
  windows = tf.cast(tf.shape(label_ids)[0], tf.float32)
  tagged = tf.reduce_sum(tf.cast(label_ids >= 0, tf.float32))
  context = tf.distribute.get_replica_context()
  if context is not None and context.num_replicas_in_sync > 1:
    tagged = context.all_reduce(tf.distribute.ReduceOp.SUM, tagged)
    windows = windows * context.num_replicas_in_sync
  return windows, tagged


# Gradient accumulation normalises micro-batches by the whole batch's count
# (albert_tf.training.finetuning.model).
token_loss.batch_normaliser = token_batch_normaliser


@dataclasses.dataclass
class NerData:
  """One file's sentences, their windows, and the run's labels.

  Attributes:
    file: the NerFile (data_pipeline.tasks.ner.ner_files).
    labels: tag names, index = logit.
    features: ner_features.NerFeatures of its sentences.
    buckets: length buckets of the run.
  """
  file: NerFile
  labels: Sequence[str]
  features: ner_features.NerFeatures
  buckets: Sequence[int] = ()

  @classmethod
  def build(cls, ner_file: NerFile, labels: Sequence[str], tokenizer,
            max_seq_length: int, doc_stride: int, buckets=()):
    index = {t: i for i, t in enumerate(labels)}
    tag_ids = ([[index[t] for t in s.tags] for s in ner_file.sentences]
               if ner_file.labeled else None)
    features = ner_features.featurize(
        [s.words for s in ner_file.sentences], tag_ids, tokenizer,
        max_seq_length, doc_stride)
    logging.info("%s: %d sentences, %d words, %d windows", ner_file.path,
                 len(ner_file.sentences), ner_file.num_words,
                 features.num_windows)
    return cls(ner_file, tuple(labels), features, tuple(buckets))

  @property
  def inputs(self) -> Dict[str, np.ndarray]:
    return {k: self.features.arrays[k] for k in ENCODER_INPUT_NAMES}

  def word_probabilities(self, predict, batch_size: int) -> np.ndarray:
    """float [words, labels]: every word's tag probabilities."""
    return predict_word_probabilities(predict, self.features, batch_size,
                                      self.buckets, len(self.labels))

  def predicted_tags(self, probabilities: np.ndarray) -> List[List[str]]:
    """One tag per word of each sentence (the most probable)."""
    tags = [self.labels[i] for i in probabilities.argmax(-1)]
    return self.features.by_sentence(tags)

  def gold_tags(self) -> List[List[str]]:
    return [s.tags for s in self.file.sentences]


def predict_word_probabilities(predict, features: ner_features.NerFeatures,
                               batch_size: int, buckets: Sequence[int],
                               num_labels: int) -> np.ndarray:
  """float [words, labels] of `features`' words, from the model outputs
  of `predict` (FinetuningRunner.predict) over its windows."""
  if not features.num_windows:
    return np.zeros([0, num_labels])
  dataset = length_buckets.batch(
      tf.data.Dataset.from_tensor_slices(
          {k: features.arrays[k] for k in ENCODER_INPUT_NAMES}),
      buckets, batch_size, keep_order=True)
  return ner_features.word_probabilities(predict(dataset)["logits"],
                                         features)


def _train_dataset(data: NerData):
  labels = {ner_features.LABEL_IDS:
            data.features.arrays[ner_features.LABEL_IDS]}

  def make(global_batch_size, seed):
    # One label per piece: the labels are cut to the bucket with the inputs.
    return finetuning_task.training_batches(
        data.inputs, labels, data.features.num_windows, data.buckets,
        global_batch_size, seed, sequence_labels=True)
  return make


def build_ner_task(params: finetuning_params.FinetuningParams,
                   options: NerOptions, labels: label_list.LabelList,
                   train: Optional[NerData], dev: Optional[NerData]
                  ) -> finetuning_task.FinetuningTask:
  """The FinetuningTask: AlbertTokenClassifier, token_loss, the training
  windows and the dev metrics (dev_predictions.<ext> kept for the best
  checkpoint)."""
  last_evaluation = {}
  data = train or dev
  buckets = data.buckets if data else _buckets(params)

  def evaluate(predict):
    probabilities = dev.word_probabilities(predict, params.eval_batch_size)
    predicted = last_evaluation["tags"] = dev.predicted_tags(probabilities)
    return ner_metrics.evaluate(dev.gold_tags(), predicted, labels.scheme)

  def write_eval_outputs(directory):
    path = ner_files.write_predictions(dev.file, last_evaluation["tags"],
                                       labels.scheme, directory, "dev")
    logging.info("wrote %s", path)

  return finetuning_task.FinetuningTask(
      name="ner",
      build_model=lambda encoder, config: AlbertTokenClassifier(
          encoder, len(labels.labels), dropout_rate=options.dropout_prob,
          initializer_range=config.initializer_range),
      loss_fn=token_loss,
      train_dataset=_train_dataset(train) if train else None,
      evaluate=evaluate if dev else None, main_metric="f1",
      write_eval_outputs=write_eval_outputs if dev else None,
      length_buckets=buckets, head_labels=tuple(labels.labels))


def _buckets(params: finetuning_params.FinetuningParams):
  """--length_buckets read without data (`auto` as `pow2`); run_ner fits
  `auto` to the training windows instead."""
  return length_buckets.parse_length_buckets(params.length_buckets,
                                             params.max_seq_length)


@multi_worker.per_worker_output_dir
def run_ner(run: finetuning_params.PreparedOrParams, options: NerOptions,
            files: Optional[ner_task_files.TaskFiles] = None
           ) -> Optional[Dict[str, float]]:
  """--do_train / --do_eval / --do_predict for token classification.

  Args:
    run: the prepared settings (plain FinetuningParams are prepared here).
    options: the NER options.
    files: the run's files already read (read_files; the tool reads them
      before TensorFlow loads), else they are read here.

  Returns:
    The dev results (None without --do_eval). Writes the outputs of the
    module docstring; with `options.export_dir`, the best checkpoint as a
    raw-text SavedModel returning entity spans
    (albert_tf.exports.serving.ner_export; under --strategy=multi_worker
    by the chief only).
  """
  run = finetuning_params.prepared(run)
  params, tokenizer = run.params, run.tokenizer
  check_ner(params, options)
  export_once.check_export_dir(options.export_dir, params.runtime.output_dir)
  if tokenizer is None:
    raise UserInputError("give --spm_model_file (SentencePiece) or "
                         "--vocab_file (WordPiece vocab.txt)")
  files = files or read_files(params, options)
  if files.labels is None:
    raise UserInputError("no labels: give --train_file with --do_train")
  def data(ner_file):
    return ner_file and NerData.build(
        ner_file, files.labels.labels, tokenizer, params.max_seq_length,
        options.doc_stride)

  train, dev, test = data(files.train), data(files.dev), data(files.test)
  splits = {"train": train, "dev": dev, "test": test}
  source = next((name for name, d in splits.items() if d), "")
  buckets = finetuning_params.run_length_buckets(
      params, (lambda: splits[source].features.arrays[
          "input_mask"].sum(-1)) if source else None, source)
  for split in splits.values():
    if split:
      split.buckets = tuple(buckets)
  task = build_ner_task(params, options, files.labels, train, dev)
  runner = finetuning_runner.FinetuningRunner(run, task)
  if params.do_train or label_list.read(params.runtime.output_dir) is None:
    # (evaluating a source token classifier: its tags)
    label_list.write(params.runtime.output_dir, files.labels)
  results = finetuning_runner.run_finetuning(params, task, runner)
  if test is not None:
    _predict_test(runner, test, params, files.labels.scheme)
  if options.export_dir and multi_worker.writes_shared_outputs(params):
    _export(runner, params, options, files.labels, buckets)
  return results


def _predict_test(runner: finetuning_runner.FinetuningRunner, test: NerData,
                  params: finetuning_params.FinetuningParams,
                  scheme: str) -> None:
  """test_predictions.<ext> (and test_results.json for a tagged file) of
  the best checkpoint."""
  runner.restore_best()
  predicted = test.predicted_tags(
      test.word_probabilities(runner.predict, params.eval_batch_size))
  path = ner_files.write_predictions(test.file, predicted, scheme,
                                     params.runtime.output_dir, "test")
  logging.info("wrote %s", path)
  if test.file.labeled:
    results = ner_metrics.evaluate(test.gold_tags(), predicted, scheme)
    output_dir.write_results(
        file_io.join(params.runtime.output_dir, "test_results.json"),
        results)
    logging.info("NER test: %s", results)


def predict_entities(predict, texts: Sequence[str], tokenizer,
                     labels: label_list.LabelList, max_seq_length: int,
                     doc_stride: int, batch_size: int = 32,
                     buckets: Sequence[int] = ()) -> List[List[Dict]]:
  """Entities of raw texts, in Python: the words of
  data_pipeline.tasks.ner.word_splitting, the windows of fine-tuning, the
  spans of entity_spans. The raw-text export returns the same
  (albert_tf.exports.load_ner).

  Args:
    predict: a FinetuningRunner's `predict` (its current weights), or any
      function of a dataset of encoder-input batches -> {"logits": [windows,
      seq, labels]} in order.
    texts: the texts.
    tokenizer, labels, max_seq_length, doc_stride: the run's.
    batch_size, buckets: how the windows are batched.

  Returns:
    Per text, [{"label", "start", "end", "text", "score"}].
  """
  words = [word_splitting.split_words(t) for t in texts]
  features = ner_features.featurize([[w.word for w in ws] for ws in words],
                                    None, tokenizer, max_seq_length,
                                    doc_stride)
  probabilities = predict_word_probabilities(
      predict, features, batch_size, buckets, len(labels.labels))
  tags = features.by_sentence([labels.labels[i]
                               for i in probabilities.argmax(-1)])
  scores = features.by_sentence(probabilities.max(-1).tolist())
  return [entity_spans.spans(text, w, t, s, labels.scheme)
          for text, w, t, s in zip(texts, words, tags, scores)]


def _export(runner: finetuning_runner.FinetuningRunner,
            params: finetuning_params.FinetuningParams, options: NerOptions,
            labels: label_list.LabelList, buckets: Sequence[int]) -> None:
  """The best checkpoint as a raw-text SavedModel
  (albert_tf.exports.serving.ner_export), at the run's length buckets."""
  from albert_tf.exports.serving import ner_export
  restored = runner.restore_best()
  export_once.export_restored(
      options.export_dir, params.runtime.output_dir, restored,
      lambda folder: ner_export.export_ner(
          runner.model, folder, labels, params.max_seq_length,
          options.doc_stride, spm_model_file=params.spm_model_file,
          vocab_file=params.vocab_file, do_lower_case=params.do_lower_case,
          albert_config_file=file_io.join(params.runtime.output_dir,
                                          "albert_config.json"),
          length_buckets=tuple(buckets)))
  logging.info("exported %s", options.export_dir)
