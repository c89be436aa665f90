r"""Fine-tune and evaluate ALBERT on RACE.

  python -m tools.run_race --data_dir=RACE \
      --albert_config_file=albert_base/albert_config.json \
      --init_checkpoint=albert_base/model.ckpt-best \
      --spm_model_file=albert_base/30k-clean.model \
      --output_dir=runs/race --do_train --do_eval --do_predict \
      --max_seq_length=512 --max_qa_length=128 --train_batch_size=32 \
      --learning_rate=1e-5 --train_step=12000 --warmup_step=1000

--data_dir holds the released layout train|dev|test/middle|high/*.txt
(optionally under RACE/). output_dir gets eval_results.json (dev accuracy,
accuracy_middle, accuracy_high), dev_predictions.json, and with --do_predict
test_predictions.json and test_results.json; checkpoints (best/ = best dev
accuracy) and TensorBoard summaries. --export_dir writes a SavedModel that
answers raw article / question / options strings.
"""

from albert_tf.training.finetuning import params as finetuning_params
from albert_tf.training.finetuning import task_settings

from .support import cli
from .support import settings_flags

# Every flag is a field of the settings classes (name, default and help).
settings_flags.define_flags(finetuning_params.FinetuningParams, __name__)
settings_flags.define_flags(task_settings.RaceOptions, __name__)


def main(argv):
  del argv
  # The settings are built and checked, the config and the vocabulary read
  # once, before TensorFlow is imported (about 5 s): a mistake is reported
  # at once.
  options, _ = settings_flags.read_settings(task_settings.RaceOptions)
  params, user_set = settings_flags.read_settings(
      finetuning_params.FinetuningParams, task_settings.RACE_DEFAULTS)
  prepared = finetuning_params.prepare(params, user_set,
                                       task_settings.RACE_DEFAULTS,
                                       require_vocabulary=True,
                                       head_kind="multiple_choice")
  options = task_settings.derive_race(prepared.params, options, user_set)
  task_settings.check_race(prepared.params, options)
  from albert_tf.training.finetuning.tasks import (
    race as race_finetuning,  # TensorFlow
  )
  results = race_finetuning.run_race(prepared, options)
  settings_flags.print_results(results)


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
