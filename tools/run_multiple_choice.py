r"""Fine-tune and evaluate ALBERT on your own multiple-choice data.

  python -m tools.run_multiple_choice --train_file=swag/train.csv \
      --dev_file=swag/val.csv --test_file=swag/test.csv \
      --albert_config_file=albert_base/albert_config.json \
      --init_checkpoint=albert_base/model.ckpt-best \
      --spm_model_file=albert_base/30k-clean.model \
      --output_dir=runs/swag --do_train --do_eval --do_predict \
      --max_seq_length=128 --max_qa_length=64

Records: JSON lines (or Parquet) with `context` and `question` (both
optional), `choices` (a list of 2 or more) and `label` (the right choice's
index); column flags --context_column, --question_column, --choices_column,
--label_column, --id_column. SWAG's CSV (sent1, sent2, ending0..ending3,
label) is read as it is. Every record has the training file's number of
choices. RACE's model, packing and length buckets; hyperparameters left
unset take RACE's recipe over your number of questions (logged).
output_dir gets eval_results.json (dev accuracy), dev_predictions.jsonl,
with --do_predict test_predictions.jsonl (answer_index, choice,
probabilities); checkpoints (best/) and TensorBoard summaries. --export_dir
writes a SavedModel that answers raw context / question / choices strings.
RACE's folders keep their own tool, tools.run_race.
"""

from albert_tf.training.finetuning import own_data_settings
from albert_tf.training.finetuning import params as finetuning_params

from .support import cli
from .support import settings_flags

# Every flag is a field of the settings classes (name, default and help).
settings_flags.define_flags(finetuning_params.FinetuningParams, __name__)
settings_flags.define_flags(own_data_settings.MultipleChoiceOptions,
                            __name__)


def main(argv):
  del argv
  # Checked, and the training file read, before TensorFlow is imported.
  options, _ = settings_flags.read_settings(
      own_data_settings.MultipleChoiceOptions)
  params, user_set = settings_flags.read_settings(
      finetuning_params.FinetuningParams)
  train, recipe = own_data_settings.read_choice_training(params, options,
                                                         user_set)
  params, user_set = settings_flags.read_settings(
      finetuning_params.FinetuningParams, recipe)
  prepared = finetuning_params.prepare(params, user_set, recipe,
                                       require_vocabulary=True,
                                       head_kind="multiple_choice")
  options = own_data_settings.derive_multiple_choice(prepared.params,
                                                     options, user_set)
  own_data_settings.check_multiple_choice(prepared.params, options)
  from albert_tf.training.finetuning.tasks import (
    multiple_choice as multiple_choice_finetuning,  # TensorFlow
  )
  result = multiple_choice_finetuning.run_multiple_choice(prepared, options,
                                                          train)
  settings_flags.print_results(result["eval"])


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
