"""SQuAD v1.1 / v2.0 fine-tuning on the shared FinetuningRunner.

  * v1.1: AlbertSpanLabeler, loss = mean of the start and end cross-entropies
    (official `run_squad_v1`).
  * v2.0 (default, `null_score="answer_class"`): AlbertSquadV2 as the
    official `run_squad_v2`: start / teacher-forced end log-likelihoods plus
    0.5 x sigmoid cross-entropy of the answer class against is_impossible;
    beam search at prediction.
  * v2.0 with `null_score="cls"`: the BERT-style null score on a span
    labeler (impossible windows point at [CLS]).

Evaluation (`--do_eval`, on `predict_file`) writes predictions.json,
nbest_predictions.json (and null_odds.json for v2.0) to output_dir and
scores them with the official scripts; prediction (`--do_predict`) writes
the same files without scoring.
"""

from typing import Dict, Optional, Tuple

from absl import logging
import numpy as np
import tensorflow as tf

from albert_common import file_io
from albert_common.encoder_inputs import ENCODER_INPUT_NAMES
from albert_common.errors import UserInputError
from albert_tf.models.albert_span_labeler import AlbertSpanLabeler
from albert_tf.models.albert_squad_v2 import AlbertSquadV2
from albert_tf.training.finetuning import export_once
from albert_tf.training.finetuning import multi_worker
from albert_tf.training.finetuning import params as finetuning_params
from albert_tf.training.finetuning import runner as finetuning_runner
from albert_tf.training.finetuning import task as finetuning_task
from albert_tf.training.finetuning.task_settings import SquadOptions
from albert_tf.training.finetuning.task_settings import check_squad
from data_pipeline.tasks import length_buckets
from data_pipeline.tasks.squad import examples as squad_examples
from data_pipeline.tasks.squad import features as squad_features
from data_pipeline.tasks.squad import metrics as squad_metrics
from data_pipeline.tasks.squad import postprocess as squad_postprocess


def build_model(options: SquadOptions, encoder, config):
  if options.beam:
    return AlbertSquadV2(encoder, options.start_n_top, options.end_n_top,
                         dropout_rate=options.dropout_prob,
                         hidden_size=config.hidden_size,
                         initializer_range=config.initializer_range,
                         name="squad_v2_model")
  return AlbertSpanLabeler(encoder,
                           initializer_range=config.initializer_range,
                           name="span_labeler")


def span_loss(labels: Dict[str, tf.Tensor], outputs: Dict[str, tf.Tensor]
             ) -> tf.Tensor:
  """Span labeler: mean of start and end cross-entropies, [batch]."""
  start = tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels["start_positions"], outputs["start_logits"])
  end = tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels["end_positions"], outputs["end_logits"])
  return (start + end) / 2.0


def squad_v2_loss(labels: Dict[str, tf.Tensor],
                  outputs: Dict[str, tf.Tensor]) -> tf.Tensor:
  """Official v2.0 loss: span NLL / 2 + answer-class sigmoid CE / 2, [batch]."""
  def nll(log_probs, positions):
    return -tf.gather(log_probs, tf.cast(positions, tf.int32), batch_dims=1)
  span = (nll(outputs["start_log_probs"], labels["start_positions"]) +
          nll(outputs["end_log_probs"], labels["end_positions"])) / 2.0
  answer_class = tf.nn.sigmoid_cross_entropy_with_logits(
      labels=tf.cast(labels["is_impossible"], tf.float32),
      logits=outputs["cls_logits"])
  return span + 0.5 * answer_class


class SquadData:
  """Examples and features of one SQuAD file."""

  def __init__(self, path: str, tokenizer, params, options: SquadOptions,
               is_training: bool):
    self.path = path
    self.examples = squad_examples.read_squad_examples(
        path, is_training, options.version_2_with_negative)
    self.features = squad_features.convert_examples_to_features(
        self.examples, tokenizer, params.max_seq_length, options.doc_stride,
        options.max_query_length, is_training)
    self.arrays = squad_features.features_to_arrays(self.features, is_training)
    logging.info("%s: %d questions, %d windows", path, len(self.examples),
                 len(self.features))

  def lengths(self) -> np.ndarray:
    """int [windows]: the tokens of each window."""
    return self.arrays["input_mask"].sum(-1)

  def model_inputs(self, options: SquadOptions) -> Dict[str, np.ndarray]:
    names = ENCODER_INPUT_NAMES + (("p_mask",) if options.beam else ())
    return {k: self.arrays[k] for k in names}


def _train_dataset(data: SquadData, options: SquadOptions, buckets=()):
  features = data.model_inputs(options)
  if options.beam:
    features["start_positions"] = data.arrays["start_positions"]
  labels = {k: data.arrays[k] for k in
            ("start_positions", "end_positions", "is_impossible")}

  def make(global_batch_size, seed):
    return finetuning_task.training_batches(
        features, labels, len(data.features), buckets, global_batch_size,
        seed)
  return make


def predict_answers(predict, data: SquadData, options: SquadOptions,
                    eval_batch_size: int,
                    threshold: Optional[float] = 0.0, buckets=()
                   ) -> squad_postprocess.SquadPredictions:
  """Runs the model over `data` (batched by length with more than one of
  `buckets`) and post-processes its outputs."""
  dataset = length_buckets.batch(
      tf.data.Dataset.from_tensor_slices(data.model_inputs(options)),
      buckets, eval_batch_size, keep_order=True)
  outputs = predict(dataset)
  results = {f.unique_id: {k: v[i] for k, v in outputs.items()}
             for i, f in enumerate(data.features)}
  if options.beam:
    return squad_postprocess.postprocess_v2(
        data.examples, data.features, results, options.n_best_size,
        options.max_answer_length, null_score_diff_threshold=threshold)
  return squad_postprocess.postprocess_v1(
      data.examples, data.features, results, options.n_best_size,
      options.max_answer_length,
      cls_null_score=options.version_2_with_negative,
      null_score_diff_threshold=0.0 if threshold is None else threshold)


def score(dataset_json, predictions: squad_postprocess.SquadPredictions,
          options: SquadOptions):
  """(metrics, final predictions) with the official evaluation."""
  if options.version_2_with_negative:
    return squad_metrics.evaluate_v2_with_threshold(
        dataset_json, predictions, options.null_score_diff_threshold)
  return squad_metrics.evaluate_v1(dataset_json,
                                   predictions.predictions), predictions


@multi_worker.per_worker_output_dir
def run_squad(run: finetuning_params.PreparedOrParams,
              options: SquadOptions) -> Optional[Dict[str, float]]:
  """--do_train / --do_eval / --do_predict for SQuAD; returns eval results.

  Writes to params.runtime.output_dir: eval_results.json (official metric names:
  v1.1 exact_match, f1; v2.0 exact, f1, HasAns_*, NoAns_*, best_*,
  null_score_diff_threshold), predictions.json, nbest_predictions.json,
  null_odds.json (v2.0), plus the runner's checkpoints and summaries.
  With `options.export_dir`, the best checkpoint is also exported as a
  SavedModel answering raw question / context strings
  (albert_tf.exports.serving.squad_export), with the null-odds threshold of
  predictions.json; under
  --strategy=multi_worker by the chief only.
  """
  run = finetuning_params.prepared(run)
  params, tokenizer, export_dir = run.params, run.tokenizer, options.export_dir
  check_squad(params, options)
  export_once.check_export_dir(export_dir, params.runtime.output_dir)
  if tokenizer is None:
    raise UserInputError("give --spm_model_file (SentencePiece) or "
                         "--vocab_file (WordPiece vocab.txt)")
  train_data = (SquadData(options.train_file, tokenizer, params, options,
                          is_training=True) if params.do_train else None)
  eval_data = (SquadData(options.predict_file, tokenizer, params, options,
                         is_training=False)
               if params.do_eval or params.do_predict else None)
  data = train_data or eval_data
  buckets = finetuning_params.run_length_buckets(
      params, data.lengths if data else None,
      "train" if train_data else "predict_file")
  task = build_squad_task(params, options, train_data, eval_data, buckets)
  runner = finetuning_runner.FinetuningRunner(run, task)
  results = finetuning_runner.run_finetuning(params, task, runner)
  if params.do_predict and not params.do_eval:
    _predict(runner, eval_data, params, options, buckets)
  if export_dir and multi_worker.writes_shared_outputs(params):
    _export(runner, params, options, export_dir, buckets)
  return results


def build_squad_task(params: finetuning_params.FinetuningParams,
                     options: SquadOptions, train_data: Optional[SquadData],
                     eval_data: Optional[SquadData],
                     buckets: Optional[Tuple[int, ...]] = None
                    ) -> finetuning_task.FinetuningTask:
  """The FinetuningTask: span labeler or v2.0 model, its loss, training
  windows and (with --do_eval) the official evaluation of predict_file,
  whose prediction files are kept for the best checkpoint. `buckets`: the
  run's length buckets (None: --length_buckets read without data, `auto`
  as `pow2`)."""
  dataset_json = (squad_examples.load_squad_json(options.predict_file)
                  if params.do_eval else None)
  last_evaluation = {}
  if buckets is None:
    buckets = length_buckets.parse_length_buckets(params.length_buckets,
                                                  params.max_seq_length)

  def evaluate(predict):
    predictions = predict_answers(predict, eval_data, options,
                                  params.eval_batch_size, threshold=None,
                                  buckets=buckets)
    metrics, last_evaluation["final"] = score(dataset_json, predictions,
                                              options)
    return metrics

  return finetuning_task.FinetuningTask(
      name="squad_v2" if options.version_2_with_negative else "squad_v1.1",
      build_model=lambda encoder, config: build_model(options, encoder,
                                                      config),
      loss_fn=squad_v2_loss if options.beam else span_loss,
      train_dataset=(_train_dataset(train_data, options, buckets)
                     if train_data else None),
      evaluate=evaluate if params.do_eval else None,
      main_metric="f1",
      write_eval_outputs=lambda directory: last_evaluation["final"].write(
          directory), length_buckets=buckets)


def _threshold(runner: finetuning_runner.FinetuningRunner,
               options: SquadOptions) -> float:
  """The v2.0 null-odds threshold: --null_score_diff_threshold, else the one
  the best checkpoint's evaluation tuned (0.0 without one)."""
  if options.null_score_diff_threshold is not None:
    return options.null_score_diff_threshold
  return (runner.best_results() or {}).get("null_score_diff_threshold", 0.0)


def _predict(runner: finetuning_runner.FinetuningRunner, data: SquadData,
             params: finetuning_params.FinetuningParams,
             options: SquadOptions, buckets: Tuple[int, ...]) -> None:
  """--do_predict alone: the prediction files of the best checkpoint."""
  runner.restore_best()
  predictions = predict_answers(runner.predict, data, options,
                                params.eval_batch_size,
                                _threshold(runner, options), buckets)
  paths = predictions.write(params.runtime.output_dir)
  logging.info("wrote %s", ", ".join(paths))


def _export(runner, params, options: SquadOptions, export_dir: str,
            buckets: Tuple[int, ...]) -> None:
  """The best checkpoint as a raw-text SavedModel
  (albert_tf.exports.serving.squad_export)."""
  from albert_tf.exports.serving import squad_export
  restored = runner.restore_best()
  threshold = _threshold(runner, options)  # the one predictions.json used
  export_once.export_restored(
      export_dir, params.runtime.output_dir, restored,
      lambda folder: squad_export.export_squad(
          runner.model, folder, params.spm_model_file, params.max_seq_length,
          options.doc_stride, options.max_query_length, options.n_best_size,
          options.max_answer_length, beam=options.beam,
          version_2=options.version_2_with_negative, threshold=threshold,
          do_lower_case=params.do_lower_case,
          albert_config_file=file_io.join(params.runtime.output_dir,
                                          "albert_config.json"),
          vocab_file=params.vocab_file, length_buckets=buckets))
  logging.info("exported %s", export_dir)

