r"""Fine-tune ALBERT on a GLUE task or on your own files; evaluate; predict.

  python -m tools.run_classifier --task_name=MNLI --data_dir=glue/MNLI \
      --albert_config_file=albert_base/albert_config.json \
      --init_checkpoint=albert_base/model.ckpt-best \
      --spm_model_file=albert_base/30k-clean.model \
      --output_dir=runs/mnli --do_train --do_eval --do_predict

  python -m tools.run_classifier --train_file=tickets/train.csv \
      --dev_file=tickets/dev.csv --test_file=tickets/test.csv \
      --text_a_column=text --label_column=team \
      --albert_config_file=albert_base/albert_config.json \
      --init_checkpoint=albert_base/model.ckpt-best \
      --spm_model_file=albert_base/30k-clean.model \
      --output_dir=runs/tickets --do_train --do_eval --do_predict

GLUE: hyperparameters left unset take the task's official run_glue.sh
values (albert_tf.training.finetuning.task_settings.TASK_DEFAULTS), e.g.
MNLI: lr 3e-5, 10000 steps, 1000 warmup, batch 128, max_seq_length 512,
AdamW; results are <output_dir>/eval_results.json (best dev checkpoint),
best/, <TASK>.tsv submission files (MNLI-m.tsv, ...).
Your own files (CSV, TSV, JSON lines, Parquet; --task_type classification,
regression or multi_label): the closest GLUE task's recipe, its epochs over
your records (logged); labels.json (the label list), eval_results.json
(accuracy, macro F1, MCC, per-class precision/recall/F1; Pearson and
Spearman; micro/macro F1) and test_predictions.jsonl.
`--init_checkpoint` may be ours, a released TF1 checkpoint, Hugging Face
model.safetensors or Model Garden; `--init_savedmodel` an exported encoder.
`--export_dir` writes a SavedModel serving raw strings.
`--early_exit` (classification, regression) trains a classifier per
application of the shared layer and lets each example stop at its own
depth (docs/early-exit.md): eval_results.json gains the patience chosen
and the table per patience; predictions and the export give exit_layer.
"""

from albert_common.errors import UserInputError
from albert_tf.training import early_exit
from albert_tf.training.finetuning import own_data_settings
from albert_tf.training.finetuning import params as finetuning_params
from albert_tf.training.finetuning import task_settings

from .support import cli
from .support import settings_flags

# Every flag is a field of the settings classes (name, default and help).
settings_flags.define_flags(finetuning_params.FinetuningParams, __name__)
settings_flags.define_flags(task_settings.GlueOptions, __name__)
settings_flags.define_flags(own_data_settings.OwnDataOptions, __name__)
settings_flags.define_flags(early_exit.EarlyExitOptions, __name__)


def main(argv):
  del argv
  # The settings are built and checked, the config and the vocabulary read
  # once, before TensorFlow is imported (about 5 s): a mistake is reported
  # at once.
  own, _ = settings_flags.read_settings(own_data_settings.OwnDataOptions)
  options, _ = settings_flags.read_settings(task_settings.GlueOptions)
  early, _ = settings_flags.read_settings(early_exit.EarlyExitOptions)
  if own.given:
    if options.task_name or options.data_dir:
      raise UserInputError("give --task_name / --data_dir (GLUE) or "
                           "--train_file / --dev_file / --test_file (your "
                           "own data), not both")
    # The task type may be known only once the labels are read.
    early_exit.check(early, own.task_type if own.task_type != "auto"
                     else "classification" if early.exit_threshold is None
                     else "regression")
    return _run_own_data(own, early)
  recipe = task_settings.check_glue(options)
  early_exit.check(early, task_settings.glue_task_type(options.task_name))
  params, user_set = settings_flags.read_settings(
      finetuning_params.FinetuningParams, recipe)
  prepared = finetuning_params.prepare(params, user_set, recipe,
                                       require_vocabulary=True,
                                       head_kind="classifier")
  early_exit.check_model(early, params.init_savedmodel, prepared.config)
  from albert_tf.training.finetuning.tasks import (
    classifier as classifier_finetuning,  # TensorFlow
  )
  result = classifier_finetuning.run_classifier(prepared, options, early)
  settings_flags.print_results(result["eval"])


def _run_own_data(options, early):
  params, user_set = settings_flags.read_settings(
      finetuning_params.FinetuningParams)
  train, recipe = own_data_settings.read_own_training(params, options,
                                                      user_set)
  params, user_set = settings_flags.read_settings(
      finetuning_params.FinetuningParams, recipe)
  prepared = finetuning_params.prepare(params, user_set, recipe,
                                       require_vocabulary=True,
                                       head_kind="classifier")
  early_exit.check_model(early, params.init_savedmodel, prepared.config)
  from albert_tf.training.finetuning.tasks import own_data  # TensorFlow
  result = own_data.run_own_data(prepared, options, train, early)
  settings_flags.print_results(result["eval"])


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
