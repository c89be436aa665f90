"""Fine-tuning on one's own files: what `run_classifier --train_file` calls.

`run_own_data(run, options)` reads the files (data_pipeline.tasks.own_data:
CSV, TSV, JSON lines, Parquet), fixes the label list (from the training
file, sorted; written to <output_dir>/labels.json and read back by a rerun,
an evaluation or a prediction without training), fine-tunes an
AlbertClassifier with the generic FinetuningRunner (length buckets, exact
resume, best dev checkpoint, eval_results.json, TensorBoard), writes
test_predictions.jsonl with the best checkpoint, and can export it as a
raw-text SavedModel that returns label names
(albert_tf.exports.serving.classifier).

Per task type: classification = softmax cross-entropy, regression = mean
squared error on one output, multi_label = sigmoid binary cross-entropy
averaged over the labels. Every file is read (and every bad record
reported) before anything is written under --output_dir.
"""

import dataclasses
from typing import Dict, Optional, Tuple

from absl import logging
import tensorflow as tf

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf.checkpoints.task_models import source_labels
from albert_tf.models.albert_classifier import AlbertClassifier
from albert_tf.models.albert_early_exit_classifier import (
  AlbertEarlyExitClassifier,
)
from albert_tf.models.albert_early_exit_classifier import early_exit_loss
from albert_tf.training import early_exit
from albert_tf.training import output_dir
from albert_tf.training.finetuning import export_once
from albert_tf.training.finetuning import multi_worker
from albert_tf.training.finetuning import params as finetuning_params
from albert_tf.training.finetuning import runner as finetuning_runner
from albert_tf.training.finetuning import task as finetuning_task
from albert_tf.training.finetuning.own_data_settings import OwnDataOptions
from albert_tf.training.finetuning.own_data_settings import check_own_data
from data_pipeline.tasks import label_list as label_list_lib
from data_pipeline.tasks import packing
from data_pipeline.tasks import text_pair_inputs
from data_pipeline.tasks.label_list import LabelList
from data_pipeline.tasks.own_data import examples as own_examples
from data_pipeline.tasks.own_data import features as own_features
from data_pipeline.tasks.own_data import metrics as own_metrics

PREDICTIONS = "test_predictions.jsonl"
DEV_PREDICTIONS = "dev_predictions.jsonl"


def loss_fn(task_type: str):
  """(labels, outputs) -> per-example loss [batch] of a task type."""
  if task_type == "regression":
    def mse(labels, outputs):
      return tf.square(outputs["logits"][:, 0] - tf.cast(labels, tf.float32))
    return mse
  if task_type == "multi_label":
    def binary_cross_entropy(labels, outputs):
      return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
          labels=tf.cast(labels, tf.float32), logits=outputs["logits"]),
          axis=-1)
    return binary_cross_entropy

  def cross_entropy(labels, outputs):
    return tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.cast(labels, tf.int32), logits=outputs["logits"])
  return cross_entropy


@dataclasses.dataclass
class OwnData:
  """The run's files, label list and featurised splits.

  Attributes:
    files: split ("train", "dev", "test") -> TextFile, for those in use.
    label_list: the labels (index = the model's output).
    pair: two texts per record.
    tokenizer, max_seq_length, buckets: the featurisation's.
    pack_examples, rows_multiple: training batches of packed rows
      (data_pipeline.tasks.packing), rows a multiple of rows_multiple.
  """
  files: Dict[str, own_examples.TextFile]
  label_list: LabelList
  pair: bool
  tokenizer: object
  max_seq_length: int
  buckets: Tuple[int, ...] = ()
  pack_examples: bool = False
  rows_multiple: int = 1

  def __post_init__(self):
    self._features = {}
    self._plans = {}

  def features(self, split: str) -> text_pair_inputs.Features:
    if split not in self._features:
      self._features[split] = own_features.featurize(
          self.files[split].examples, self.label_list, self.tokenizer,
          self.max_seq_length, self.pair)
    return self._features[split]

  def dataset(self, split: str, batch_size: int, is_training: bool = False,
              seed: Optional[int] = None) -> tf.data.Dataset:
    plan = (packing.cached_plan(
        self._plans, lambda: self.features("train").lengths, batch_size,
        self.max_seq_length, self.rows_multiple)
            if self.pack_examples and is_training else None)
    return text_pair_inputs.make_dataset(
        self.features(split), self.max_seq_length, batch_size,
        is_training=is_training, seed=seed, pad_id=self.tokenizer.pad_id,
        buckets=self.buckets, packing=plan)

  def record_ids(self, split: str):
    """The id column's values (None each when the file has none)."""
    return [e.record_id for e in self.files[split].examples]


def _threshold_note(labels, options: OwnDataOptions, weights,
                    saved_path: Optional[str]) -> str:
  """"; threshold T (where it comes from)" for a multi-label list, else
  "". `weights`: the --init_checkpoint whose head gave the labels, else
  None; `saved_path`: the run's labels.json the labels were read from."""
  if labels.task_type != "multi_label":
    return ""
  if saved_path is not None:
    why = f"recorded in {saved_path}"
  else:
    why = source_labels.multi_label_threshold(options.threshold, weights)[1]
  return f"; threshold {labels.threshold:g} ({why})"


def read_own_data(options: OwnDataOptions,
                  params: finetuning_params.FinetuningParams, tokenizer,
                  train: Optional[own_examples.TextFile] = None,
                  source=None) -> OwnData:
  """Reads and featurises every file the run uses, and fixes the label list
  (the training file's; else <output_dir>/labels.json).

  Args:
    train: the training file already read (the tool reads it first for the
      recipe), else read here when training.
    source: --init_checkpoint's weights (finetuning_params.prepare): a
      classifier head's labels are the run's, in its order.

  Raises:
    UserInputError: a bad file or record; labels that differ from the
      run's labels.json; an evaluation or prediction without training and
      without labels.json.
  """
  def read(path, task_type, labels):
    return own_examples.read_text_file(path, options.files, options.columns,
                                       task_type, labels, options.skip_labels)

  saved_path = label_list_lib.path_in(params.runtime.output_dir)
  saved = label_list_lib.read(params.runtime.output_dir)
  chief_dir = file_io.dirname(file_io.normpath(params.runtime.output_dir))
  if saved is None and file_io.basename(file_io.normpath(
      params.runtime.output_dir)).startswith(output_dir.WORKER_SCRATCH_PREFIX):
    # A multi-worker worker's scratch folder: the chief's list.
    saved_path = label_list_lib.path_in(chief_dir)
    saved = label_list_lib.read(chief_dir)
  files = {}
  # A fine-tuned classifier to continue or score: its labels, in its order.
  weights = source
  if params.init_head and saved is None:
    source = source_labels.classifier_labels(
        source, params.label_names, options.task_type, options.threshold)
  else:
    source = None
  task_type = source.task_type if source else options.task_type
  if params.do_train:
    files["train"] = train or read(options.train_file, task_type,
                                   "required")
    labels = own_examples.training_label_list(files["train"],
                                              options.threshold)
    if source is not None:
      _check_known(source, files["train"], params.init_checkpoint)
      labels = source
    if saved is not None:
      label_list_lib.check_same(saved, labels, saved_path,
                                options.train_file)
  elif source is not None:
    labels = source
  elif saved is None:
    raise UserInputError(
        f"{saved_path} does not exist: the label list is written by a "
        "training run (--do_train with --train_file); evaluate or predict "
        "with its --output_dir")
  else:
    labels = saved
  if options.task_type not in ("auto", labels.task_type):
    source = options.train_file if params.do_train else saved_path
    raise UserInputError(f"--task_type={options.task_type}, but the labels "
                         f"of {source} are {labels.task_type}")
  if params.do_eval:
    dev = read(options.dev_file, labels.task_type, "required")
    if source is not None:
      _check_known(source, dev, params.init_checkpoint)
    files["dev"] = own_examples.check_known_labels(
        dev, labels, options.files.skip_bad_records)
  if params.do_predict:
    files["test"] = read(options.test_file, labels.task_type, "no")
  pair = "text_b" in next(iter(files.values())).columns
  for split, data in files.items():
    logging.info("%s: %d records (%s; columns %s)%s", data.path,
                 len(data.examples), split, data.columns,
                 f", {data.skipped_labels} skipped for their label "
                 "(--skip_labels)" if data.skipped_labels else "")
  logging.info("%s task, %d labels: %s%s", labels.task_type,
               len(labels.labels), ", ".join(labels.labels[:20]),
               _threshold_note(labels, options,
                               weights if source is not None else None,
                               saved_path if labels is saved else None))
  data = OwnData(files, labels, pair, tokenizer, params.max_seq_length,
                 pack_examples=params.pack_examples)
  for split in files:
    data.features(split)
  source = next(iter(files))  # train when training
  data.buckets = finetuning_params.run_length_buckets(
      params, lambda: data.features(source).lengths, source)
  return data


def _check_known(source: LabelList, data: own_examples.TextFile,
                 init_checkpoint: str) -> None:
  """One line naming the labels of `data` the source's head lacks."""
  if source.task_type == "regression" or not data.has_labels:
    return
  names = set()
  for example in data.examples:
    names.update(example.label if isinstance(example.label, tuple)
                 else (example.label,))
  source_labels.check_known(source, names, data.path, init_checkpoint)


def build_own_data_task(data: OwnData, eval_batch_size: int,
                        early: Optional[early_exit.EarlyExitOptions] = None
                       ) -> finetuning_task.FinetuningTask:
  """The FinetuningTask: AlbertClassifier with one output per label (one
  for regression), the task type's loss, the training records and the dev
  metrics (dev_predictions.jsonl kept for the best checkpoint). With
  `early.early_exit`: AlbertEarlyExitClassifier, PABEE's loss, and the dev
  metrics at the patience chosen (training/early_exit.py)."""
  labels = data.label_list
  last = {}
  exits = early is not None and early.early_exit
  regression = labels.task_type == "regression"

  def evaluate(predict):
    outputs = predict(data.dataset("dev", eval_batch_size))
    targets = data.features("dev").labels

    def metrics(logits):
      return own_metrics.compute_metrics(labels, targets, logits)
    if not exits:
      last["logits"] = outputs["logits"]
      return metrics(last["logits"])
    results, patience = early_exit.evaluate(
        outputs["all_logits"], metrics, own_metrics.MAIN_METRIC[
            labels.task_type], early, regression)
    last["logits"], last["exit_layer"] = early_exit.exit_at(
        outputs["all_logits"], patience, early_exit.threshold(early),
        regression)
    return results

  def write_eval_outputs(directory):
    own_metrics.write_predictions(
        file_io.join(directory, DEV_PREDICTIONS),
        _with_exit_layers(own_metrics.prediction_records(
            labels, last["logits"], data.record_ids("dev")),
                          last.get("exit_layer")))

  def build_model(encoder, config):
    model_class = AlbertEarlyExitClassifier if exits else AlbertClassifier
    return model_class(encoder, labels.num_labels,
                       initializer_range=config.initializer_range)

  def pabee_loss(targets, outputs):
    return early_exit_loss(targets, outputs, regression)

  return finetuning_task.FinetuningTask(
      name=f"own data ({labels.task_type})",
      build_model=build_model,
      loss_fn=pabee_loss if exits else loss_fn(labels.task_type),
      train_dataset=(lambda batch_size, seed: data.dataset(
          "train", batch_size, is_training=True, seed=seed))
      if "train" in data.files else None,
      evaluate=evaluate if "dev" in data.files else None,
      main_metric=own_metrics.MAIN_METRIC[labels.task_type],
      write_eval_outputs=write_eval_outputs, length_buckets=data.buckets,
      packed_training=data.pack_examples,
      head_labels=None if regression else labels.labels)


def _with_exit_layers(records, exit_layers):
  """Each record with its "exit_layer" (an early-exit model's)."""
  if exit_layers is None:
    return records
  return [dict(r, exit_layer=int(e)) for r, e in zip(records, exit_layers)]


@multi_worker.per_worker_output_dir
def run_own_data(run: finetuning_params.PreparedOrParams,
                 options: OwnDataOptions,
                 train: Optional[own_examples.TextFile] = None,
                 early: Optional[early_exit.EarlyExitOptions] = None
                ) -> Dict[str, object]:
  """Fine-tunes / evaluates / predicts on one's own files.

  Args:
    run: the prepared settings (finetuning_params.prepare; plain
      FinetuningParams are prepared here), recipe defaults filled in.
    options: the files, columns, task type and export folder.
    train: the training file, if the caller read it already.
    early: --early_exit and its settings (None: off).

  Returns:
    {"eval": the best dev checkpoint's metrics or None, "predictions":
    path of test_predictions.jsonl or "", "export_dir": path or "",
    "labels": the LabelList}.
  """
  run = finetuning_params.prepared(run)
  params = run.params
  check_own_data(params, options)
  if run.tokenizer is None:
    raise UserInputError("give --spm_model_file (SentencePiece) or "
                         "--vocab_file (WordPiece vocab.txt)")
  data = read_own_data(options, params, run.tokenizer, train, run.source)
  early = early or early_exit.EarlyExitOptions()
  early_exit.check(early, data.label_list.task_type)
  early_exit.check_model(early, params.init_savedmodel, run.config)
  runner = finetuning_runner.FinetuningRunner(
      run, build_own_data_task(data, params.eval_batch_size, early))
  # Each replica's rows split into --gradient_accumulation_steps slices.
  data.rows_multiple = (runner.strategy.num_replicas_in_sync *
                        runner.params.runtime.gradient_accumulation_steps)
  if params.do_train or label_list_lib.read(
      params.runtime.output_dir) is None:  # evaluating a source classifier
    label_list_lib.write(params.runtime.output_dir, data.label_list)
  results = finetuning_runner.run_finetuning(params, runner.task, runner)
  restored = ""
  if params.do_predict or options.export_dir:
    restored = runner.restore_best()
  predictions = ""
  patience = early_exit.chosen_patience(
      early, results or runner.best_results())
  if params.do_predict:
    outputs = runner.predict(data.dataset("test", params.eval_batch_size))
    logits, exit_layers = outputs["logits"], None
    if early.early_exit:
      logits, exit_layers = early_exit.exit_at(
          outputs["all_logits"], patience, early_exit.threshold(early),
          data.label_list.task_type == "regression")
    predictions = own_metrics.write_predictions(
        file_io.join(params.runtime.output_dir, PREDICTIONS),
        _with_exit_layers(own_metrics.prediction_records(
            data.label_list, logits, data.record_ids("test")), exit_layers))
    logging.info("wrote %s", predictions)
  if options.export_dir and multi_worker.writes_shared_outputs(params):
    export_once.export_restored(
        options.export_dir, params.runtime.output_dir, restored,
        lambda folder: export_model(
            runner.model, params, data, folder,
            **early_exit.export_settings(early, patience)))
  return {"eval": results, "predictions": predictions,
          "export_dir": options.export_dir, "labels": data.label_list}


def export_model(model, params: finetuning_params.FinetuningParams,
                 data: OwnData, export_dir: str, **extra) -> None:
  """`model` (the run's restored, best weights) as a raw-text SavedModel
  returning label names (albert_tf.exports.serving.classifier), at the
  run's length buckets; `extra`: more export_classifier arguments (the
  early-exit settings, a distilled student's assets)."""
  from albert_tf.exports.serving import classifier as classifier_export
  classifier_export.export_classifier(
      model, export_dir, params.spm_model_file,
      list(data.label_list.labels) or None, 2 if data.pair else 1,
      params.max_seq_length, params.do_lower_case,
      file_io.join(params.runtime.output_dir, "albert_config.json"),
      vocab_file=params.vocab_file, length_buckets=data.buckets,
      label_list=data.label_list, **extra)
  logging.info("exported %s", export_dir)
