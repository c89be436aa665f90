"""run_distillation: what `python -m tools.distill` calls.

Order: every check (teacher, student rule, vocabulary, task and labels,
stale cache) before anything is written; then the teacher's logits (once,
cached: teacher_cache); then the fine-tuning runner trains the student
with the distillation loss riding fine-tuning's label slot (losses), so
length buckets, packing, --gradient_accumulation_steps, strategies, mixed
precision, XLA and resume after a kill are fine-tuning's own. The student
starts from the teacher's checkpoint (fewer applications: every variable
matched) or --student_init_checkpoint (narrower). eval_results.json holds
the student's dev metrics under run_classifier's keys and the teacher's
as "teacher/<key>"; --export_dir is run_classifier's raw-text SavedModel
of the student with the asset distillation.json naming the teacher and
the settings.
"""

import dataclasses
import json
from typing import Dict, Optional

from absl import logging
import numpy as np

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf.models.albert_classifier import AlbertClassifier
from albert_tf.training import output_dir as output_dir_lib
from albert_tf.training import warm_start as warm_start_lib
from albert_tf.training.distillation import losses
from albert_tf.training.distillation import student as student_lib
from albert_tf.training.distillation import student_rule
from albert_tf.training.distillation import teacher as teacher_lib
from albert_tf.training.distillation import teacher_cache
from albert_tf.training.distillation.settings import DistillationOptions
from albert_tf.training.finetuning import export_once
from albert_tf.training.finetuning import params as finetuning_params
from albert_tf.training.finetuning import runner as finetuning_runner
from albert_tf.training.finetuning.own_data_settings import OwnDataOptions
from albert_tf.training.finetuning.own_data_settings import check_own_data
from albert_tf.training.finetuning.tasks import own_data
from data_pipeline.tasks import packing
from data_pipeline.tasks import text_pair_inputs
from data_pipeline.tasks.own_data import examples as own_examples
from data_pipeline.tasks.own_data import features as own_features
from data_pipeline.tasks.own_data import metrics as own_metrics

METADATA = "distillation.json"
TEACHER_PREFIX = "teacher/"


def check_options(options: DistillationOptions, params) -> None:
  """UserInputError for settings that cannot work together."""
  if options.temperature <= 0:
    raise UserInputError(f"--temperature={options.temperature} must be > 0")
  if not 0.0 <= options.alpha <= 1.0:
    raise UserInputError(f"--alpha={options.alpha} must be in [0, 1]")
  if intermediate_loss(options) != "none" and params.pack_examples:
    raise UserInputError(f"--intermediate_loss={options.intermediate_loss} "
                         "compares whole rows: it does not run with "
                         "--pack_examples")
  if options.alpha == 0 and options.unlabeled_file:
    raise UserInputError(f"--alpha=0 trains on the gold labels only: the "
                         f"records of --unlabeled_file={options.unlabeled_file}"
                         " would carry no loss (give --alpha > 0 or drop "
                         "--unlabeled_file)")
  if options.unlabeled_file and not file_io.exists(options.unlabeled_file):
    raise UserInputError(f"--unlabeled_file={options.unlabeled_file} does "
                         "not exist")


def intermediate_loss(options: DistillationOptions) -> str:
  """The intermediate loss the run trains with: none at --alpha=0 (the gold
  labels only: nothing of the teacher's contributes)."""
  return options.intermediate_loss if options.alpha > 0 else "none"


def distillation_loss_fn(task_type: str, options: DistillationOptions):
  """(targets, outputs) -> per-example loss [batch] (losses module)."""
  def loss_fn(targets, outputs):
    loss = losses.distillation_loss(targets, outputs["logits"], task_type,
                                    options.temperature, options.alpha)
    if (student_lib.INTERMEDIATE_LOSS in outputs and
        intermediate_loss(options) != "none"):
      loss += options.intermediate_weight * outputs[
          student_lib.INTERMEDIATE_LOSS]
    return loss
  return loss_fn


def _training_features(data, unlabeled, logits):
  """The train (+ unlabeled) features with the targets rows as labels."""
  train = data.features("train")
  targets = [losses.pack_targets(train.labels, np.ones(len(train)),
                                 logits["train"])]
  parts = [train]
  if unlabeled is not None:
    gold = np.full((len(unlabeled), targets[0].shape[1] - 1 -
                    logits["train"].shape[1]), -1.0, np.float32)
    targets.append(losses.pack_targets(gold, np.zeros(len(unlabeled)),
                                       logits["unlabeled"]))
    parts.append(unlabeled)
  return text_pair_inputs.Features(
      token_ids=np.concatenate([p.token_ids for p in parts]),
      lengths=np.concatenate([p.lengths for p in parts]),
      segment_a_lengths=np.concatenate([p.segment_a_lengths for p in parts]),
      labels=np.concatenate(targets).astype(np.float32),
      guids=[g for p in parts for g in p.guids])


def run_distillation(run: finetuning_params.PreparedOrParams,
                     options: OwnDataOptions, distill: DistillationOptions,
                     train: Optional[own_examples.TextFile] = None
                    ) -> Dict[str, object]:
  """Distils --teacher into the student on one's own files.

  Args:
    run: the prepared settings (their config is replaced by the student's).
    options: the files, columns, export folder (run_classifier's).
    distill: the teacher, the student and the losses.
    train: the training file, if the caller read it already.

  Returns:
    {"eval": eval results (student and teacher/...) or None,
     "export_dir": path or "", "teacher_logits": split -> array}.
  """
  run = finetuning_params.prepared(run)
  params = run.params
  check_own_data(params, options)
  check_options(distill, params)
  if distill.intermediate_loss != intermediate_loss(distill):
    logging.warning("--intermediate_loss=%s is not used at --alpha=0 (the "
                    "gold labels only)", distill.intermediate_loss)
  teacher = teacher_lib.read_teacher(distill.teacher)
  config = student_rule.student_config(teacher.config, distill)
  if run.tokenizer is None:
    raise UserInputError("give --spm_model_file (SentencePiece) or "
                         "--vocab_file (WordPiece vocab.txt)")
  finetuning_params.check_vocab_size(teacher.config, run.tokenizer,
                                     params.spm_model_file, params.vocab_file)
  teacher_lib.check_vocabulary(teacher,
                               params.spm_model_file or params.vocab_file)
  if distill.student_init_checkpoint:
    finetuning_params.check_init_checkpoint(distill.student_init_checkpoint)
  export_once.check_export_dir(options.export_dir, params.runtime.output_dir)
  if not params.do_train and not params.do_eval:
    raise UserInputError("give --do_train and/or --do_eval")
  if params.do_train:  # the task is checked before any file is written
    train = train or own_examples.read_text_file(
        options.train_file, options.files, options.columns,
        options.task_type, "required", options.skip_labels)
    teacher_lib.check_same_task(
        teacher, own_examples.training_label_list(train, options.threshold),
        options.train_file)
  data = own_data.read_own_data(options, params, run.tokenizer, train)
  teacher_lib.check_same_task(teacher, data.label_list,
                              options.train_file or options.dev_file)
  unlabeled, splits, expected = _splits_and_fingerprint(
      run, options, distill, data, teacher)
  teacher_cache.read_cache(params.runtime.output_dir, expected)  # stale?
  # Checked: from here on the run writes.
  logits = teacher_cache.teacher_logits(
      params.runtime.output_dir, expected,
      lambda: teacher_lib.build_teacher_model(teacher), splits,
      params.max_seq_length, params.eval_batch_size, run.tokenizer.pad_id,
      data.buckets)
  runner = finetuning_runner.FinetuningRunner(
      dataclasses.replace(run, config=config),
      _distillation_task(data, unlabeled, logits, teacher, distill,
                         params.eval_batch_size))
  data.rows_multiple = (runner.strategy.num_replicas_in_sync *
                        runner.params.runtime.gradient_accumulation_steps)
  _initialise_student(runner, teacher, distill)
  if params.do_train:
    from data_pipeline.tasks import label_list as label_list_lib
    label_list_lib.write(params.runtime.output_dir, data.label_list)
  results = finetuning_runner.run_finetuning(params, runner.task, runner)
  if results is not None and "dev" in logits:
    teacher_results = own_metrics.compute_metrics(
        data.label_list, data.features("dev").labels, logits["dev"])
    results = dict(results, **{
        TEACHER_PREFIX + k: float(v) for k, v in teacher_results.items()
        if isinstance(v, (int, float, np.floating))})
    output_dir_lib.write_results(
        file_io.join(params.runtime.output_dir,
                     finetuning_runner.EVAL_RESULTS), results)
  if options.export_dir:
    restored = runner.restore_best()
    export_once.export_restored(
        options.export_dir, params.runtime.output_dir, restored,
        lambda folder: _export(runner, params, data, folder,
                               _metadata(teacher, distill, config)))
  return {"eval": results, "export_dir": options.export_dir,
          "teacher_logits": logits}


def _splits_and_fingerprint(run, options, distill, data, teacher):
  """(the unlabeled features or None, split -> features the teacher
  labels, the cache fingerprint)."""
  params = run.params
  unlabeled = None
  if distill.unlabeled_file and params.do_train:
    file = own_examples.read_text_file(
        distill.unlabeled_file, options.files, options.columns,
        data.label_list.task_type, "no")
    unlabeled = own_features.featurize(file.examples, data.label_list,
                                       run.tokenizer, params.max_seq_length,
                                       data.pair)
  splits = {name: data.features(name) for name in ("train", "dev")
            if name in data.files}
  if unlabeled is not None:
    splits["unlabeled"] = unlabeled
  files = {"train": options.train_file if "train" in splits else "",
           "dev": options.dev_file if "dev" in splits else "",
           "unlabeled": distill.unlabeled_file if unlabeled else ""}
  expected = teacher_cache.fingerprint(
      teacher.digest, {k: v for k, v in files.items() if v},
      params.spm_model_file or params.vocab_file,
      teacher_cache.record_settings(options, params))
  return unlabeled, splits, expected


def _distillation_task(data, unlabeled, logits, teacher, distill,
                       eval_batch_size):
  """Fine-tuning's own-data task with the distillation loss and targets."""
  base = own_data.build_own_data_task(data, eval_batch_size)
  task_type = data.label_list.task_type
  features = (_training_features(data, unlabeled, logits)
              if "train" in logits else None)
  plans = {}

  def train_dataset(batch_size, seed):
    plan = (packing.cached_plan(plans, lambda: features.lengths, batch_size,
                                data.max_seq_length, data.rows_multiple)
            if data.pack_examples else None)
    return text_pair_inputs.make_dataset(
        features, data.max_seq_length, batch_size, is_training=True,
        seed=seed, pad_id=data.tokenizer.pad_id, buckets=data.buckets,
        packing=plan)

  def build_model(encoder, config):
    student = AlbertClassifier(encoder, data.label_list.num_labels,
                               initializer_range=config.initializer_range)
    kind = intermediate_loss(distill)
    frozen = (None if kind == "none" else
              teacher_lib.build_teacher_model(teacher))
    return student_lib.DistillationModel(student, frozen, kind)

  return dataclasses.replace(
      base, name=f"distillation ({task_type})", build_model=build_model,
      loss_fn=distillation_loss_fn(task_type, distill),
      train_dataset=train_dataset if features is not None else None,
      initialises_encoder=True)


def student_of(model):
  """The student classifier of the runner's DistillationModel."""
  return model.student


def _initialise_student(runner, teacher, distill) -> None:
  """A fresh run's student weights: the teacher's (fewer applications:
  every variable matched) or --student_init_checkpoint's."""
  if runner.manager.latest_checkpoint or not runner.params.do_train:
    return
  student = student_of(runner.model)
  if distill.student_init_checkpoint:
    logging.info("student: %s", warm_start_lib.warm_start(
        student, distill.student_init_checkpoint))
    return
  teacher_lib.restore_weights(student, teacher, is_teacher=False)
  logging.info("student: the teacher's weights from %s, %d of %d "
               "applications", teacher.checkpoint,
               runner.config.num_hidden_layers,
               teacher.config.num_hidden_layers)


def _metadata(teacher, distill, config) -> Dict:
  return {"teacher": teacher.path, "teacher_checkpoint": teacher.checkpoint,
          "teacher_sha256": teacher.digest,
          "teacher_num_hidden_layers": teacher.config.num_hidden_layers,
          "teacher_hidden_size": teacher.config.hidden_size,
          "student_num_hidden_layers": config.num_hidden_layers,
          "student_hidden_size": config.hidden_size,
          "settings": dataclasses.asdict(distill)}


def _export(runner, params, data, export_dir: str, metadata: Dict) -> None:
  """The student's restored (best) weights as run_classifier's raw-text
  SavedModel, with distillation.json among its assets."""
  own_data.export_model(
      student_of(runner.model), params, data, export_dir,
      extra_text_assets=[("distillation_file", METADATA,
                          json.dumps(metadata, indent=2) + "\n")])
