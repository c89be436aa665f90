"""GLUE fine-tuning end to end: what `python -m tools.run_classifier` calls.

`run_classifier(run, options)` reads the task's TSV files
(data_pipeline.tasks.glue.examples, glue_features), fine-tunes an
AlbertClassifier with the generic FinetuningRunner (best dev checkpoint,
eval_results.json, labels.json, summaries), writes GLUE submission files
for the test splits with the best checkpoint, and can export the
fine-tuned model as a raw-text serving SavedModel.

Per-task defaults (`TASK_DEFAULTS`, in
albert_tf.training.finetuning.task_settings) are the official
google-research/albert `run_glue.sh` recipe.
"""

import dataclasses
from typing import Dict, Optional, Tuple

from absl import logging
import tensorflow as tf

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf.models.albert_classifier import AlbertClassifier
from albert_tf.models.albert_early_exit_classifier import (
    AlbertEarlyExitClassifier,
)
from albert_tf.models.albert_early_exit_classifier import early_exit_loss
from albert_tf.training import early_exit
from albert_tf.training.finetuning import export_once
from albert_tf.training.finetuning import multi_worker
from albert_tf.training.finetuning import params as finetuning_params
from albert_tf.training.finetuning import runner as finetuning_runner
from albert_tf.training.finetuning import task as finetuning_task
from albert_tf.training.finetuning import task_settings
from data_pipeline.tasks import label_list as label_list_lib
from data_pipeline.tasks import packing
from data_pipeline.tasks.glue import examples as glue_examples
from data_pipeline.tasks.glue import features as glue_features
from data_pipeline.tasks.glue import metrics as glue_metrics


def _loss_fn(task: glue_examples.GlueTask):
  if task.is_regression:
    def mse(labels, outputs):
      return tf.square(outputs["logits"][:, 0] - tf.cast(labels, tf.float32))
    return mse

  def cross_entropy(labels, outputs):
    return tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.cast(labels, tf.int32), logits=outputs["logits"])
  return cross_entropy


@dataclasses.dataclass
class GlueData:
  """A task's tokenizer and lazily featurised splits."""

  task: glue_examples.GlueTask
  data_dir: str
  tokenizer: object  # SentencePieceTokenizer or WordPieceTokenizer.
  max_seq_length: int
  skip_malformed: bool = False
  # Length buckets (data_pipeline.tasks.length_buckets); () or one: unbucketed.
  buckets: Tuple[int, ...] = ()
  # --pack_examples: training batches of packed rows
  # (data_pipeline.tasks.packing), rows a multiple of `rows_multiple` (the
  # replicas a batch is split over).
  pack_examples: bool = False
  rows_multiple: int = 1

  def __post_init__(self):
    self._cache = {}
    self._plans = {}

  def packing_plan(self, batch_size: int) -> packing.PackingPlan:
    """The packed batches' shape for a global batch of `batch_size`
    examples, from the training lengths (planned once, logged)."""
    return packing.cached_plan(
        self._plans, lambda: self.features("train").lengths, batch_size,
        self.max_seq_length, self.rows_multiple)

  def features(self, split: str) -> glue_features.Features:
    if split not in self._cache:
      examples = glue_examples.read_examples(self.task, self.data_dir, split,
                                             self.skip_malformed)
      self._cache[split] = glue_features.featurize(
          self.task, examples, self.tokenizer, self.max_seq_length)
      logging.info("%s %s: %d examples", self.task.name, split,
                   len(examples))
    return self._cache[split]

  def dataset(self, split: str, batch_size: int, is_training: bool = False,
              seed: Optional[int] = None) -> tf.data.Dataset:
    plan = (self.packing_plan(batch_size)
            if self.pack_examples and is_training else None)
    return glue_features.make_dataset(self.features(split), self.max_seq_length,
                             batch_size, is_training=is_training, seed=seed,
                             pad_id=self.tokenizer.pad_id,
                             buckets=self.buckets, packing=plan)


def build_glue_task(data: GlueData, eval_batch_size: int,
                    early: Optional[early_exit.EarlyExitOptions] = None
                   ) -> finetuning_task.FinetuningTask:
  """The FinetuningTask of a GLUE task: AlbertClassifier, its loss, train
  data and dev metrics (MNLI: `accuracy` on matched, `mismatched_*` on
  mismatched). With `early.early_exit`: AlbertEarlyExitClassifier, PABEE's
  loss, the metrics at the patience chosen on the first dev split
  (training/early_exit.py)."""
  task = data.task
  exits = early is not None and early.early_exit
  limit = early_exit.threshold(early) if exits else 0.0

  def evaluate(predict):
    results = {}
    patience = None
    for i, split in enumerate(task.dev_splits):
      features = data.features(split)
      outputs = predict(data.dataset(split, eval_batch_size))

      def metrics(logits, labels=features.labels):
        return glue_metrics.compute_metrics(task, labels, logits)
      if not exits:
        split_results = metrics(outputs["logits"])
      elif patience is None:
        split_results, patience = early_exit.evaluate(
            outputs["all_logits"], metrics, task.main_metric, early,
            task.is_regression)
      else:
        logits, layers = early_exit.exit_at(
            outputs["all_logits"], patience, limit, task.is_regression)
        split_results = dict(metrics(logits),
                             mean_exit_layer=float(layers.mean()))
      prefix = "" if i == 0 else split.replace("dev_", "") + "_"
      results.update({prefix + k: v for k, v in split_results.items()})
    return results

  def build_model(encoder, config):
    model_class = AlbertEarlyExitClassifier if exits else AlbertClassifier
    return model_class(encoder, task.num_classes,
                       initializer_range=config.initializer_range)

  def pabee_loss(labels, outputs):
    return early_exit_loss(labels, outputs, task.is_regression)

  return finetuning_task.FinetuningTask(
      name=task.name,
      build_model=build_model,
      loss_fn=pabee_loss if exits else _loss_fn(task),
      train_dataset=lambda batch_size, seed: data.dataset(
          "train", batch_size, is_training=True, seed=seed),
      evaluate=evaluate, main_metric=task.main_metric,
      length_buckets=data.buckets, packed_training=data.pack_examples,
      head_labels=task.labels)


def predict_test(runner: finetuning_runner.FinetuningRunner, data: GlueData,
                 eval_batch_size: int, output_dir: str,
                 exit_rule=None) -> Dict[str, str]:
  """Writes GLUE submission files for every available test split with the
  runner's current weights; returns split -> path. `exit_rule`
  (all_logits -> (logits, exit layers)): an early-exit model's; each
  split's exit layers go to <split>_exit_layers.txt, one a line."""
  paths = {}
  for split in glue_examples.available_test_splits(data.task, data.data_dir):
    features = data.features(split)
    outputs = runner.predict(data.dataset(split, eval_batch_size))
    logits = outputs["logits"]
    if exit_rule is not None:
      logits, layers = exit_rule(outputs["all_logits"])
      file_io.write_atomic(
          file_io.join(output_dir, f"{split}_exit_layers.txt"),
          "".join(f"{int(layer)}\n" for layer in layers))
    paths[split] = glue_metrics.write_submission(
        data.task, split, features.guids, logits, output_dir)
    logging.info("wrote %s", paths[split])
  return paths


@multi_worker.per_worker_output_dir
def run_classifier(run: finetuning_params.PreparedOrParams,
                   options: task_settings.GlueOptions,
                   early: Optional[early_exit.EarlyExitOptions] = None
                  ) -> Dict[str, object]:
  """Fine-tunes / evaluates / predicts one GLUE task.

  Args:
    run: the prepared settings (finetuning_params.prepare; plain
      FinetuningParams are prepared here), task defaults already filled.
    options: the task, its data folder, and optionally an export folder
      (the best checkpoint as a raw-text serving SavedModel,
      albert_tf.exports.serving.classifier; under --strategy=multi_worker, by
      the chief only) and whether malformed rows are skipped (with a warning)
      instead of failing.
    early: --early_exit and its settings (None: off).

  Returns:
    {"eval": eval results or None, "predictions": split -> file,
     "export_dir": path or ""}.
  """
  run = finetuning_params.prepared(run)
  params = run.params
  task = glue_examples.get_task(options.task_name)
  task_settings.check_glue(options)
  early = early or early_exit.EarlyExitOptions()
  early_exit.check(early, "regression" if task.is_regression
                   else "classification")
  early_exit.check_model(early, params.init_savedmodel, run.config)
  export_once.check_export_dir(options.export_dir, params.runtime.output_dir)
  if run.tokenizer is None:
    raise UserInputError("give --spm_model_file (SentencePiece) or "
                         "--vocab_file (WordPiece vocab.txt)")
  data = GlueData(task, options.data_dir, run.tokenizer,
                  params.max_seq_length, options.skip_malformed_rows,
                  pack_examples=params.pack_examples)
  split = _read_needed_splits(data, params)
  data.buckets = finetuning_params.run_length_buckets(
      params, (lambda: data.features(split).lengths) if split else None,
      split)
  runner = finetuning_runner.FinetuningRunner(
      run, build_glue_task(data, params.eval_batch_size, early))
  # Each replica's rows split into --gradient_accumulation_steps slices.
  data.rows_multiple = (runner.strategy.num_replicas_in_sync *
                        runner.params.runtime.gradient_accumulation_steps)
  if multi_worker.writes_shared_outputs(params):
    # Its labels by name, as an own-data run's: the run is a task-model
    # source (another run's --init_checkpoint, convert_checkpoint).
    label_list_lib.write(params.runtime.output_dir, glue_label_list(task))
  results = finetuning_runner.run_finetuning(params, runner.task, runner)
  restored = ""
  if params.do_predict or options.export_dir:
    restored = runner.restore_best()
  predictions = {}
  patience = early_exit.chosen_patience(early,
                                        results or runner.best_results())
  exit_rule = None
  if early.early_exit:
    def exit_rule(all_logits):
      return early_exit.exit_at(all_logits, patience,
                                early_exit.threshold(early),
                                task.is_regression)
  if params.do_predict:
    predictions = predict_test(runner, data, params.eval_batch_size,
                               params.runtime.output_dir, exit_rule)
  if options.export_dir and multi_worker.writes_shared_outputs(params):
    export_once.export_restored(
        options.export_dir, params.runtime.output_dir, restored,
        lambda folder: _export(runner, params, task, folder, data.buckets,
                               early_exit.export_settings(early, patience)))
  return {"eval": results, "predictions": predictions,
          "export_dir": options.export_dir}


def glue_label_list(task: glue_examples.GlueTask) -> label_list_lib.LabelList:
  """The labels.json of a GLUE task's run (STS-B: regression)."""
  if task.is_regression:
    return label_list_lib.LabelList("regression")
  return label_list_lib.LabelList("classification", tuple(task.labels))


def _read_needed_splits(data: GlueData,
                        params: finetuning_params.FinetuningParams) -> str:
  """Reads and featurises the splits the run will use, first: a bad file
  fails before any model is built. Returns the first of them (the one
  `--length_buckets=auto` fits its lengths to: train when training), or
  "" for none."""
  splits = []
  if params.do_train:
    splits.append("train")
  if params.do_eval:
    splits.extend(data.task.dev_splits)
  if params.do_predict:
    splits.extend(glue_examples.available_test_splits(data.task,
                                                      data.data_dir))
  for split in splits:
    data.features(split)
  return splits[0] if splits else ""


def _export(runner: finetuning_runner.FinetuningRunner,
            params: finetuning_params.FinetuningParams,
            task: glue_examples.GlueTask,
            export_dir: str, buckets=(), exit_settings=None) -> None:
  """The restored (best) weights as a raw-text SavedModel
  (albert_tf.exports.serving.classifier); requests run at the smallest of
  `buckets` that holds them."""
  from albert_tf.exports.serving import classifier as classifier_export
  config_file = file_io.join(params.runtime.output_dir, "albert_config.json")
  classifier_export.export_classifier(
      runner.model, export_dir, params.spm_model_file, task.labels,
      task.num_segments, params.max_seq_length, params.do_lower_case,
      config_file, vocab_file=params.vocab_file, length_buckets=buckets,
      **(exit_settings or {}))
  logging.info("exported %s", export_dir)

