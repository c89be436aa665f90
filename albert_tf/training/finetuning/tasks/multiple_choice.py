"""Multiple choice on one's own files: what `tools.run_multiple_choice` calls.

RACE's model (AlbertMultipleChoice: one score per choice, softmax over
them), inputs (data_pipeline.tasks.choice_inputs), length buckets and
accuracy, on records of any number of choices (data_pipeline.tasks.
multiple_choice: JSON lines, SWAG's CSV, Parquet). The number of choices is
the training file's; evaluation and prediction files must have as many.
`--do_eval` reports accuracy and loss (eval_results.json, dev_predictions
.jsonl for the best checkpoint); `--do_predict` writes
test_predictions.jsonl; `--export_dir` a raw-text SavedModel
(albert_tf.exports.serving.race) returning answer_index, choice and
probabilities.
"""

from typing import Dict, Optional, Tuple

from absl import logging
import numpy as np
import tensorflow as tf

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf.models.albert_multiple_choice import AlbertMultipleChoice
from albert_tf.training.finetuning import export_once
from albert_tf.training.finetuning import multi_worker
from albert_tf.training.finetuning import params as finetuning_params
from albert_tf.training.finetuning import runner as finetuning_runner
from albert_tf.training.finetuning import task as finetuning_task
from albert_tf.training.finetuning.own_data_settings import (
  MultipleChoiceOptions,
)
from albert_tf.training.finetuning.own_data_settings import (
  check_multiple_choice,
)
from albert_tf.training.finetuning.tasks.race import multiple_choice_loss
from data_pipeline.tasks import length_buckets
from data_pipeline.tasks.multiple_choice import examples as choice_examples
from data_pipeline.tasks.multiple_choice import features as choice_features

PREDICTIONS = "test_predictions.jsonl"
DEV_PREDICTIONS = "dev_predictions.jsonl"


class ChoiceData:
  """The questions and model inputs of one file.

  Attributes:
    file: the ChoiceFile read.
    arrays: featurize's (inputs [n, choices, seq], label_ids [n] if any).
    buckets: the length buckets.
  """

  def __init__(self, file: choice_examples.ChoiceFile, tokenizer,
               max_seq_length: int, max_qa_length: int,
               buckets: Tuple[int, ...]):
    self.file = file
    self.buckets = buckets
    self.arrays = choice_features.featurize(file.examples, tokenizer,
                                            max_seq_length, max_qa_length)
    logging.info("%s: %d questions with %d choices (columns %s)", file.path,
                 len(file.examples), file.num_choices, file.columns)

  def logits(self, predict, batch_size: int) -> np.ndarray:
    """[questions, choices] in input order (batched by length bucket)."""
    dataset = length_buckets.batch(
        tf.data.Dataset.from_tensor_slices(
            choice_features.model_inputs(self.arrays)),
        self.buckets, batch_size, keep_order=True)
    return predict(dataset)["logits"]


def read_choice_data(options: MultipleChoiceOptions,
                     params: finetuning_params.FinetuningParams, tokenizer,
                     train: Optional[choice_examples.ChoiceFile] = None
                    ) -> Dict[str, ChoiceData]:
  """Reads and featurises every file the run uses; the number of choices
  is the training file's (else the dev file's, else the test file's).

  Raises:
    UserInputError: a bad file or record (naming it).
  """
  files = {}
  if params.do_train:
    files["train"] = train or choice_examples.read_choice_file(
        options.train_file, options.files, options.columns)
  num_choices = files["train"].num_choices if files else None
  for split, path, needed, labels in (
      ("dev", options.dev_file, params.do_eval, "required"),
      ("test", options.test_file, params.do_predict, "no")):
    if needed:
      files[split] = choice_examples.read_choice_file(
          path, options.files, options.columns, num_choices, labels)
      num_choices = files[split].num_choices
  data = {split: ChoiceData(file, tokenizer, params.max_seq_length,
                            options.max_qa_length, ())
          for split, file in files.items()}
  source = next(iter(data), "")  # train when training
  buckets = finetuning_params.run_length_buckets(
      params, (lambda: data[source].arrays["input_mask"].sum(-1).max(-1))
      if source else None, source)
  for split in data.values():
    split.buckets = buckets
  return data


def build_multiple_choice_task(options: MultipleChoiceOptions,
                               data: Dict[str, ChoiceData],
                               eval_batch_size: int
                              ) -> finetuning_task.FinetuningTask:
  """The FinetuningTask: AlbertMultipleChoice over the files' number of
  choices, softmax cross-entropy, accuracy on the dev file."""
  num_choices = next(iter(data.values())).file.num_choices
  train, dev = data.get("train"), data.get("dev")
  last = {}

  def train_dataset(global_batch_size, seed):
    return finetuning_task.training_batches(
        choice_features.model_inputs(train.arrays),
        {"label_ids": train.arrays["label_ids"]}, len(train.file.examples),
        train.buckets, global_batch_size, seed)

  def evaluate(predict):
    logits = last["logits"] = dev.logits(predict, eval_batch_size)
    return choice_features.compute_metrics(dev.arrays["label_ids"], logits)

  def write_eval_outputs(directory):
    choice_features.write_predictions(
        file_io.join(directory, DEV_PREDICTIONS),
        choice_features.prediction_records(dev.file.examples,
                                           last["logits"]))

  return finetuning_task.FinetuningTask(
      name=f"multiple choice ({num_choices} choices)",
      build_model=lambda encoder, config: AlbertMultipleChoice(
          encoder, num_choices=num_choices, dropout_rate=options.dropout_prob,
          initializer_range=config.initializer_range,
          name="multiple_choice_model"),
      loss_fn=multiple_choice_loss,
      train_dataset=train_dataset if train else None,
      evaluate=evaluate if dev else None, main_metric="accuracy",
      write_eval_outputs=write_eval_outputs,
      length_buckets=next(iter(data.values())).buckets)


@multi_worker.per_worker_output_dir
def run_multiple_choice(run: finetuning_params.PreparedOrParams,
                        options: MultipleChoiceOptions,
                        train: Optional[choice_examples.ChoiceFile] = None
                       ) -> Dict[str, object]:
  """--do_train / --do_eval / --do_predict on one's multiple-choice files.

  Returns:
    {"eval": the best dev checkpoint's metrics or None, "predictions":
    path of test_predictions.jsonl or "", "export_dir": path or "",
    "num_choices": int}.
  """
  run = finetuning_params.prepared(run)
  params = run.params
  check_multiple_choice(params, options)
  if run.tokenizer is None:
    raise UserInputError("give --spm_model_file (SentencePiece) or "
                         "--vocab_file (WordPiece vocab.txt)")
  data = read_choice_data(options, params, run.tokenizer, train)
  task = build_multiple_choice_task(options, data, params.eval_batch_size)
  runner = finetuning_runner.FinetuningRunner(run, task)
  results = finetuning_runner.run_finetuning(params, task, runner)
  restored = ""
  if params.do_predict or options.export_dir:
    restored = runner.restore_best()
  predictions = ""
  if params.do_predict:
    test = data["test"]
    predictions = choice_features.write_predictions(
        file_io.join(params.runtime.output_dir, PREDICTIONS),
        choice_features.prediction_records(
            test.file.examples, test.logits(runner.predict,
                                            params.eval_batch_size)))
    logging.info("wrote %s", predictions)
  num_choices = next(iter(data.values())).file.num_choices
  if options.export_dir and multi_worker.writes_shared_outputs(params):
    from albert_tf.exports.serving import race as race_export

    def export(folder):
      race_export.export_multiple_choice(
          runner.model, folder, params.spm_model_file,
          params.max_seq_length, options.max_qa_length, num_choices,
          params.do_lower_case,
          file_io.join(params.runtime.output_dir, "albert_config.json"),
          vocab_file=params.vocab_file,
          length_buckets=next(iter(data.values())).buckets)
      logging.info("exported %s", folder)
    export_once.export_restored(options.export_dir,
                                params.runtime.output_dir, restored, export)
  return {"eval": results, "predictions": predictions,
          "export_dir": options.export_dir, "num_choices": num_choices}
