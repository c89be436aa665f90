"""A converted model's dev-set metric (`--eval_data` of export_tflite and
export_onnx).

`tools.export_tflite` and `tools.export_onnx` print, with task dev data
(`--eval_data`), each variant's metric on it and the quantized variant's
top-class agreement with float on the same inputs: accuracy for GLUE and
RACE, EM / F1 for SQuAD (through text_runner, raw text to answers as a
device would); for a model of one's own data, a dev
file of it (read as fine-tuning reads it) scored with fine-tuning's
metrics: accuracy and macro F1, Pearson and Spearman, micro and macro F1,
multiple-choice accuracy.

Top class, max |difference| and random-token inputs are those of
albert_tf/exports/serving_kinds.py (shared with the ONNX export): the
argmax of `logits` (GLUE, RACE); each label's probability above 0.5
(multi-label: all must agree); the argmax start and end position (SQuAD;
both must agree), the beam's best start and end (SQuAD v2.0); every
position's tag (NER: all must agree); the sign pattern of `pooled_output`
(encoder: no classes, so the fraction of its values with
the float model's sign).
"""

import dataclasses
from typing import Callable, Dict, Optional, Tuple

import numpy as np

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf.exports.text_runner import SquadSettings
from albert_tf.exports.text_runner import TextRunner
from data_pipeline.corpora.record_files import RecordFileOptions
from data_pipeline.tasks.glue import examples as glue_examples
from data_pipeline.tasks.multiple_choice import examples as choice_examples
from data_pipeline.tasks.multiple_choice import features as choice_features
from data_pipeline.tasks.multiple_choice.examples import ChoiceColumns
from data_pipeline.tasks.own_data import examples as own_examples
from data_pipeline.tasks.own_data import features as own_features
from data_pipeline.tasks.own_data import metrics as own_metrics
from data_pipeline.tasks.own_data.examples import TextColumns
from data_pipeline.tasks.race import examples as race_examples
from data_pipeline.tasks.race import features as race_features
from data_pipeline.tasks.squad import examples as squad_examples
from data_pipeline.tasks.squad import metrics as squad_metrics


@dataclasses.dataclass(frozen=True)
class EvalColumns:
  """How an own-data --eval_data file is read (fine-tuning's flags)."""
  files: RecordFileOptions = RecordFileOptions()
  text: TextColumns = TextColumns()
  choices: ChoiceColumns = ChoiceColumns()


def settings_of(params) -> Tuple[SquadSettings, EvalColumns]:
  """(SQuAD settings, own-data columns) of an options.EvalDataParams."""
  return (SquadSettings(params.doc_stride, params.max_query_length,
                        params.n_best_size, params.max_answer_length),
          EvalColumns(params.eval_files, params.eval_text,
                      params.eval_choices))


def own_data_evaluation(runner: TextRunner, eval_data: str,
                        columns: EvalColumns = EvalColumns()):
  """task_evaluation's answer for a dev file of one's own data."""
  kind = runner.kind
  if kind == "race":
    data = choice_examples.read_choice_file(
        eval_data, columns.files, columns.choices,
        num_choices=runner.input_shape[1])
    examples = data.examples
    inputs = runner.choice_inputs([e.context for e in examples],
                                  [e.question for e in examples],
                                  [e.choices for e in examples])
    labels = np.array([e.label for e in examples])

    def choice_accuracy(r):
      logits = r.model(inputs)["logits"]
      return {"accuracy": choice_features.compute_metrics(labels,
                                                          logits)["accuracy"]}
    return inputs, choice_accuracy
  if runner.label_list is None:
    raise UserInputError(
        f"--eval_data={eval_data} is a file of one's own data, but the "
        "model has no labels.json (it is a GLUE model: give the task folder "
        "and --task_name)")
  label_list = runner.label_list
  data = own_examples.read_text_file(eval_data, columns.files, columns.text,
                                     label_list.task_type)
  data = own_examples.check_known_labels(data, label_list,
                                         columns.files.skip_bad_records)
  examples = data.examples
  targets = own_features.label_targets(examples, label_list)
  inputs = runner.classify_inputs(
      [e.text_a for e in examples],
      [e.text_b or "" for e in examples] if "text_b" in data.columns
      else None)
  keys = {"classification": ("accuracy", "macro_f1"),
          "regression": ("pearson", "spearman"),
          "multi_label": ("micro_f1", "macro_f1")}[label_list.task_type]

  def own_metric(r):
    outputs = r.model(inputs)
    logits = (outputs["predictions"][:, None] if "predictions" in outputs
              else outputs["logits"])
    values = own_metrics.compute_metrics(label_list, targets, logits)
    return {k: values[k] for k in keys}
  return inputs, own_metric


def task_evaluation(runner: TextRunner, eval_data: str,
                    task_name: Optional[str] = None,
                    columns: EvalColumns = EvalColumns()
                   ) -> Tuple[Dict[str, np.ndarray],
                              Callable[[TextRunner], Dict[str, float]]]:
  """(the dev set's model inputs, runner -> its metric) for --eval_data.

  eval_data: the GLUE task folder (with --task_name; its dev split), the
    SQuAD dev JSON, or the RACE folder (its dev split); for a classifier
    or multiple-choice model of one's own data, a dev file of it (read
    with `columns`).

  Raises:
    UserInputError: the data does not fit the model.
  """
  kind = runner.kind
  if (kind in ("classifier", "regression", "multi_label", "race") and
      (runner.label_list is not None or file_io.isfile(eval_data))):
    return own_data_evaluation(runner, eval_data, columns)
  if kind == "classifier":
    if not task_name:
      raise UserInputError("--eval_data of a GLUE model needs --task_name")
    task = glue_examples.get_task(task_name)
    if list(task.labels or ()) != list(runner.labels or ()):
      raise UserInputError(f"--task_name={task_name} has labels "
                           f"{task.labels}, the model {runner.labels}")
    examples = glue_examples.read_examples(task, eval_data, task.dev_splits[0])
    labels = np.array([task.labels.index(e.label) for e in examples])
    texts = ([e.text_a for e in examples],
             [e.text_b for e in examples] if task.num_segments == 2
             else None)

    def glue_accuracy(r):
      predicted = r.classify(*texts)
      return {"accuracy": float(np.mean(
          np.array([task.labels.index(p) for p in predicted]) == labels))}
    return runner.classify_inputs(*texts), glue_accuracy
  if kind in ("squad", "squad_beam"):
    # v2.0: the answer-class model, or a [CLS]-score model whose export
    # recorded a null-odds threshold.
    version_2 = (kind == "squad_beam" or
                 runner.squad_settings.null_score_diff_threshold is not None)
    dataset = squad_examples.load_squad_json(eval_data)
    examples = squad_examples.read_squad_examples(
        eval_data, is_training=False, version_2_with_negative=version_2)

    def squad_metric(r):
      predictions = r.squad_predictions(examples)
      if version_2:
        result = squad_metrics.evaluate_v2(dataset, predictions)
      else:
        result = squad_metrics.evaluate_v1(dataset, predictions)
      # The official scripts' names, as eval_results.json has them: v1.1
      # exact_match, v2.0 exact.
      name = "exact" if version_2 else "exact_match"
      return {name: result[name], "f1": result["f1"]}
    return runner.squad_features(examples)[1], squad_metric
  if kind == "race":
    examples = race_examples.read_race_examples(eval_data, "dev")
    inputs = runner.race_inputs(examples)

    def race_accuracy(r):
      predicted = np.argmax(r.model(inputs)["logits"], -1)
      return {"accuracy":
              race_features.accuracy(examples, predicted)["accuracy"]}
    return inputs, race_accuracy
  if kind == "token_classification":
    raise UserInputError("--eval_data scores GLUE, SQuAD and RACE exports; "
                         "score a NER model with run_ner --do_eval")
  raise UserInputError(f"--eval_data is for fine-tuned models; this is a "
                       f"{kind} export")
