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

from absl import flags

from albert_common.errors import UserInputError
from albert_tf.training import task_options

from . import cli
from . import finetune_flags

FLAGS = flags.FLAGS
# The RACE flags' defaults: RaceOptions' (TensorFlow-free).
DEFAULT = task_options.RaceOptions
finetune_flags.define_shared_flags()
# Key flags of this tool, so that --help lists them (absl shows only the
# main module's key flags; the shared ones are defined in finetune_flags).
flags.adopt_module_key_flags(finetune_flags)
flags.DEFINE_string("data_dir", None,
                    "RACE directory: train|dev|test/middle|high/*.txt.")
flags.DEFINE_bool("high_only", DEFAULT.high_only,
                  "Only RACE-high questions.")
flags.DEFINE_bool("middle_only", DEFAULT.middle_only,
                  "Only RACE-middle questions.")
flags.DEFINE_integer("max_qa_length", DEFAULT.max_qa_length,
                     "Pieces kept of question + option (its end). If unset "
                     "and too long for --max_seq_length: half of it.")
flags.DEFINE_float("dropout_prob", DEFAULT.dropout_rate,
                   "Dropout on the pooled output.")
flags.DEFINE_string("export_dir", "",
                    "If set, export the best checkpoint as a SavedModel "
                    "whose serving_default takes raw article, question and "
                    "4 options strings and returns the chosen option.")


def main(argv):
  del argv
  # Every check of the flags, config and vocabulary runs before TensorFlow
  # is imported (about 5 s): a mistake is reported at once.
  if not FLAGS.data_dir:
    raise UserInputError("--data_dir is required")
  params = finetune_flags.checked_params_from_flags(
      task_options.RACE_DEFAULTS)
  options = DEFAULT(
      data_dir=FLAGS.data_dir, high_only=FLAGS.high_only,
      middle_only=FLAGS.middle_only, max_qa_length=FLAGS.max_qa_length,
      dropout_rate=FLAGS.dropout_prob)
  options = task_options.derive_race(params, options,
                                     finetune_flags.user_set())
  task_options.check_race(params, options)
  from albert_tf.training import race_finetuning  # TensorFlow
  results = race_finetuning.run_race(params, options,
                                     export_dir=FLAGS.export_dir)
  finetune_flags.print_results(results)


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
