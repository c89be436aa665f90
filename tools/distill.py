r"""Distil a fine-tuned classifier into a faster student.

  python -m tools.distill --teacher=runs/tickets --student_layers=6 \
      --train_file=tickets/train.csv --dev_file=tickets/dev.csv \
      --unlabeled_file=tickets/unlabeled.csv \
      --spm_model_file=albert_base/30k-clean.model \
      --output_dir=runs/tickets_6 --export_dir=runs/tickets_6_export \
      --do_train --do_eval --temperature=2 --alpha=0.5 \
      --intermediate_loss=attention_relation

The teacher is a run_classifier --output_dir or --export_dir on your own
files (classification, regression, multi_label); an export's vocabulary
is used when --spm_model_file / --vocab_file are not given.
--student_layers=k: the teacher's own weights stopped after k
applications of the shared layer; --student_config with
--student_init_checkpoint: a narrower student.
Results: <output_dir>/eval_results.json (the student's dev metrics under
run_classifier's keys, the teacher's as teacher/<key>), the teacher's
logits cached in <output_dir>/teacher_logits.npz, and --export_dir a
raw-text SavedModel naming its teacher in assets/distillation.json
(docs/distillation.md).
"""

from albert_common import settings_fields
from albert_tf.training.distillation import settings as distillation_settings
from albert_tf.training.distillation import student_rule as student_lib
from albert_tf.training.distillation import teacher as teacher_lib
from albert_tf.training.finetuning import own_data_settings
from albert_tf.training.finetuning import params as finetuning_params

from .support import cli
from .support import settings_flags

settings_flags.define_flags(finetuning_params.FinetuningParams, __name__)
settings_flags.define_flags(own_data_settings.OwnDataOptions, __name__)
settings_flags.define_flags(distillation_settings.DistillationOptions,
                            __name__)


def main(argv):
  del argv
  own, _ = settings_flags.read_settings(own_data_settings.OwnDataOptions)
  distill, _ = settings_flags.read_settings(
      distillation_settings.DistillationOptions)
  params, user_set = settings_flags.read_settings(
      finetuning_params.FinetuningParams)
  # The student's config is the teacher's (or --student_config): the
  # vocabulary is checked against it.
  teacher = teacher_lib.read_teacher(distill.teacher)
  student_lib.student_config(teacher.config, distill)
  derived = {"albert_config_file":
             distill.student_config or teacher.config_file}
  if not (params.spm_model_file or params.vocab_file) and (
      teacher.vocabulary_file):  # an export teacher's own
    name = ("spm_model_file" if teacher.vocabulary_file.endswith(".model")
            else "vocab_file")
    derived[name] = teacher.vocabulary_file
  params = settings_fields.replace(params, **derived)
  train, recipe = own_data_settings.read_own_training(
      params, own, user_set | set(derived))
  # Read again with the recipe's defaults; what the teacher gives stays.
  params, user_set = settings_flags.read_settings(
      finetuning_params.FinetuningParams, recipe)
  params = settings_fields.replace(params, **derived)
  user_set = user_set | set(derived)
  prepared = finetuning_params.prepare(params, user_set, recipe,
                                       require_vocabulary=True)
  from albert_tf.training.distillation import run as distillation  # TF
  result = distillation.run_distillation(prepared, own, distill, train)
  settings_flags.print_results(result["eval"])


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
