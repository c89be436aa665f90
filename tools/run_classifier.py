r"""Fine-tune ALBERT on a GLUE task; evaluate; write GLUE submission files.

  python -m tools.run_classifier --task_name=MNLI --data_dir=glue/MNLI \
      --albert_config_file=albert_base/albert_config.json \
      --init_checkpoint=albert_base/model.ckpt-best \
      --spm_model_file=albert_base/30k-clean.model \
      --output_dir=runs/mnli --do_train --do_eval --do_predict

Hyperparameters left unset take the task's official run_glue.sh values
(albert_tf.training.finetuning.task_settings.TASK_DEFAULTS), e.g. MNLI: lr 3e-5,
10000 steps, 1000 warmup, batch 128, max_seq_length 512, AdamW.
`--init_checkpoint` may be ours, a released TF1 checkpoint, Hugging Face
model.safetensors or Model Garden; `--init_savedmodel` an exported encoder.
Results: <output_dir>/eval_results.json (best dev checkpoint), best/,
<TASK>.tsv submission files (MNLI-m.tsv, MNLI-mm.tsv, ...), TensorBoard
summaries. `--export_dir` writes a SavedModel serving raw strings.
"""

from albert_tf.training.finetuning import params as finetuning_params
from albert_tf.training.finetuning import task_settings

from .support import cli
from .support import settings_flags

# Every flag is a field of the settings classes (name, default and help).
settings_flags.define_flags(finetuning_params.FinetuningParams, __name__)
settings_flags.define_flags(task_settings.GlueOptions, __name__)


def main(argv):
  del argv
  # The settings are built and checked, the config and the vocabulary read
  # once, before TensorFlow is imported (about 5 s): a mistake is reported
  # at once.
  options, _ = settings_flags.read_settings(task_settings.GlueOptions)
  recipe = task_settings.check_glue(options)
  params, user_set = settings_flags.read_settings(
      finetuning_params.FinetuningParams, recipe)
  prepared = finetuning_params.prepare(params, user_set, recipe,
                                       require_vocabulary=True)
  from albert_tf.training.finetuning import (
    classifier as classifier_finetuning,  # TensorFlow
  )
  result = classifier_finetuning.run_classifier(prepared, options)
  settings_flags.print_results(result["eval"])


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
