r"""Fine-tune ALBERT on a GLUE task; evaluate; write GLUE submission files.

  python -m tools.run_classifier --task_name=MNLI --data_dir=glue/MNLI \
      --albert_config_file=albert_base/albert_config.json \
      --init_checkpoint=albert_base/model.ckpt-best \
      --spm_model_file=albert_base/30k-clean.model \
      --output_dir=runs/mnli --do_train --do_eval --do_predict

Hyperparameters left unset take the task's official run_glue.sh values
(albert_tf.training.task_options.TASK_DEFAULTS), e.g. MNLI: lr 3e-5,
10000 steps, 1000 warmup, batch 128, max_seq_length 512, AdamW.
`--init_checkpoint` may be ours, a released TF1 checkpoint, Hugging Face
model.safetensors or Model Garden; `--init_savedmodel` an exported encoder.
Results: <output_dir>/eval_results.json (best dev checkpoint), best/,
<TASK>.tsv submission files (MNLI-m.tsv, MNLI-mm.tsv, ...), TensorBoard
summaries. `--export_dir` writes a SavedModel serving raw strings.
"""

from absl import flags

from albert_common.errors import UserInputError
from albert_tf.training import task_options
from data_pipeline import glue_examples

from . import cli
from . import finetune_flags

FLAGS = flags.FLAGS
finetune_flags.define_shared_flags()
# Key flags of this tool, so that --help lists them (absl shows only the
# main module's key flags; the shared ones are defined in finetune_flags).
flags.adopt_module_key_flags(finetune_flags)
flags.DEFINE_string("task_name", None,
                    "GLUE task: CoLA, SST-2, MRPC, STS-B, QQP, MNLI, QNLI, "
                    "RTE or WNLI.")
flags.DEFINE_string("data_dir", None,
                    "Directory with the task's GLUE TSV files "
                    "(train.tsv, dev.tsv, test.tsv, ...).")
flags.DEFINE_string("export_dir", "",
                    "If set, export the best checkpoint as a SavedModel "
                    "whose serving_default takes raw strings.")
flags.DEFINE_bool("skip_malformed_rows", False,
                  "Skip TSV rows with a wrong column count or label (with a "
                  "warning) instead of failing.")


def main(argv):
  del argv
  # Every check of the flags, config and vocabulary runs before TensorFlow
  # is imported (about 5 s): a mistake is reported at once.
  if not FLAGS.task_name:
    raise UserInputError("--task_name is required")
  task = glue_examples.get_task(FLAGS.task_name)
  task_options.check_glue_data_dir(FLAGS.data_dir)
  params = finetune_flags.checked_params_from_flags(
      task_options.task_defaults(task.name))
  from albert_tf.training import classifier_finetuning as lib  # TensorFlow
  result = lib.run_classifier(params, task.name, FLAGS.data_dir,
                              export_dir=FLAGS.export_dir,
                              skip_malformed=FLAGS.skip_malformed_rows)
  finetune_flags.print_results(result["eval"])


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
