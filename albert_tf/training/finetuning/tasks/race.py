"""RACE fine-tuning on the shared FinetuningRunner (official run_race).

AlbertMultipleChoice, softmax cross-entropy over the 4 options. Evaluation
(`--do_eval`) on dev/ reports accuracy overall, middle and high; prediction
(`--do_predict`) on test/ writes test_predictions.json (answer letter and
option probabilities per question) and test_results.json (test accuracy).
"""

from typing import Dict, Optional

from absl import logging
import numpy as np
import tensorflow as tf

from albert_common import file_io
from albert_common.encoder_inputs import ENCODER_INPUT_NAMES
from albert_common.errors import UserInputError
from albert_tf.models.albert_multiple_choice import AlbertMultipleChoice
from albert_tf.training import output_dir
from albert_tf.training.finetuning import export_once
from albert_tf.training.finetuning import multi_worker
from albert_tf.training.finetuning import params as finetuning_params
from albert_tf.training.finetuning import runner as finetuning_runner
from albert_tf.training.finetuning import task as finetuning_task
from albert_tf.training.finetuning.task_settings import RaceOptions
from albert_tf.training.finetuning.task_settings import check_race
from data_pipeline.tasks import length_buckets
from data_pipeline.tasks.race import examples as race_examples
from data_pipeline.tasks.race import features as race_features


def multiple_choice_loss(labels, outputs) -> tf.Tensor:
  """Softmax cross-entropy over the options, [batch]."""
  return tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels["label_ids"], outputs["logits"])


class RaceData:
  """Examples and model inputs of one split."""

  def __init__(self, split: str, tokenizer, params, options: RaceOptions):
    # The run's buckets are set by run_race (fitted to the training
    # questions); read alone, --length_buckets=auto is pow2.
    self.buckets = length_buckets.parse_length_buckets(
        params.length_buckets, params.max_seq_length)
    self.examples = race_examples.read_race_examples(
        options.data_dir, split, options.high_only, options.middle_only)
    self.arrays = race_features.convert_examples_to_arrays(
        self.examples, tokenizer, params.max_seq_length,
        options.max_qa_length)
    logging.info("RACE %s: %d questions", split, len(self.examples))

  def lengths(self) -> np.ndarray:
    """int [questions]: the tokens of each question's longest choice."""
    return self.arrays["input_mask"].sum(-1).max(-1)

  @property
  def inputs(self) -> Dict[str, np.ndarray]:
    return {k: self.arrays[k] for k in ENCODER_INPUT_NAMES}

  def logits(self, predict, batch_size: int) -> np.ndarray:
    """[questions, choices] in input order (batched by length bucket)."""
    dataset = length_buckets.batch(
        tf.data.Dataset.from_tensor_slices(self.inputs), self.buckets,
        batch_size, keep_order=True)
    return predict(dataset)["logits"]


@multi_worker.per_worker_output_dir
def run_race(run: finetuning_params.PreparedOrParams,
             options: RaceOptions) -> Optional[Dict[str, float]]:
  """--do_train (train/) / --do_eval (dev/) / --do_predict (test/) for RACE.

  With `options.export_dir`, the best checkpoint is also exported as a
  SavedModel
  answering raw article / question / options strings
  (albert_tf.exports.serving.race); under --strategy=multi_worker by the
  chief only.

  Returns the eval results (accuracy, accuracy_middle, accuracy_high, ...).
  """
  run = finetuning_params.prepared(run)
  params, tokenizer, export_dir = run.params, run.tokenizer, options.export_dir
  check_race(params, options)
  export_once.check_export_dir(export_dir, params.runtime.output_dir)
  if tokenizer is None:
    raise UserInputError("give --spm_model_file (SentencePiece) or "
                         "--vocab_file (WordPiece vocab.txt)")

  def read(split: str, needed: bool) -> Optional[RaceData]:
    return RaceData(split, tokenizer, params, options) if needed else None

  train = read("train", params.do_train)
  dev = read("dev", params.do_eval)
  test = read("test", params.do_predict)
  splits = {"train": train, "dev": dev, "test": test}
  source = next((name for name, data in splits.items() if data is not None),
                "")
  buckets = finetuning_params.run_length_buckets(
      params, splits[source].lengths if source else None, source)
  for data in splits.values():
    if data is not None:
      data.buckets = buckets
  task = build_race_task(options, train, dev, params.eval_batch_size)
  runner = finetuning_runner.FinetuningRunner(run, task)
  results = finetuning_runner.run_finetuning(params, task, runner)
  if test is not None:
    _predict_test(runner, test, params)
  if export_dir and multi_worker.writes_shared_outputs(params):
    _export(runner, params, options, export_dir, buckets)
  return results


def build_race_task(options: RaceOptions, train: Optional[RaceData],
                    dev: Optional[RaceData], eval_batch_size: int
                   ) -> finetuning_task.FinetuningTask:
  """The FinetuningTask: AlbertMultipleChoice, its loss, the training
  questions and the dev accuracy (dev_predictions.json kept for the best
  checkpoint)."""
  last_evaluation = {}

  def train_dataset(global_batch_size, seed):
    return finetuning_task.training_batches(
        train.inputs, {"label_ids": train.arrays["label_ids"]},
        len(train.examples), train.buckets, global_batch_size, seed)

  def evaluate(predict):
    logits = last_evaluation["logits"] = dev.logits(predict, eval_batch_size)
    return race_features.accuracy(dev.examples, logits.argmax(-1))

  def write_eval_outputs(directory):
    race_features.write_predictions(
        file_io.join(directory, "dev_predictions.json"), dev.examples,
        last_evaluation["logits"])

  return finetuning_task.FinetuningTask(
      name="race",
      build_model=lambda encoder, config: AlbertMultipleChoice(
          encoder, num_choices=len(race_examples.LABELS),
          dropout_rate=options.dropout_prob,
          initializer_range=config.initializer_range, name="race_model"),
      loss_fn=multiple_choice_loss,
      train_dataset=train_dataset if train else None,
      evaluate=evaluate if dev else None,
      main_metric="accuracy", write_eval_outputs=write_eval_outputs,
      length_buckets=train.buckets if train else ())


def _predict_test(runner: finetuning_runner.FinetuningRunner, test: RaceData,
                  params: finetuning_params.FinetuningParams) -> None:
  """test_predictions.json and test_results.json of the best checkpoint."""
  runner.restore_best()
  logits = test.logits(runner.predict, params.eval_batch_size)
  race_features.write_predictions(file_io.join(params.runtime.output_dir,
                                      "test_predictions.json"),
                         test.examples, logits)
  test_results = race_features.accuracy(test.examples, logits.argmax(-1))
  output_dir.write_results(
      file_io.join(params.runtime.output_dir, "test_results.json"),
      test_results)
  logging.info("RACE test: %s", test_results)


def _export(runner: finetuning_runner.FinetuningRunner,
            params: finetuning_params.FinetuningParams, options: RaceOptions,
            export_dir: str, buckets) -> None:
  """The best checkpoint as a raw-text SavedModel
  (albert_tf.exports.serving.race)."""
  from albert_tf.exports.serving import race as race_export
  restored = runner.restore_best()
  export_once.export_restored(
      export_dir, params.runtime.output_dir, restored,
      lambda folder: race_export.export_race(
          runner.model, folder, params.spm_model_file,
          params.max_seq_length, options.max_qa_length, params.do_lower_case,
          file_io.join(params.runtime.output_dir, "albert_config.json"),
          vocab_file=params.vocab_file, length_buckets=buckets))
  logging.info("exported %s", export_dir)
