r"""Fine-tune and evaluate ALBERT on SQuAD v1.1 / v2.0.

  python -m tools.run_squad --version_2_with_negative \
      --train_file=squad/train-v2.0.json --predict_file=squad/dev-v2.0.json \
      --albert_config_file=albert_base/albert_config.json \
      --init_checkpoint=albert_base/model.ckpt-best \
      --spm_model_file=albert_base/30k-clean.model \
      --output_dir=runs/squad2 --do_train --do_eval \
      --max_seq_length=384 --doc_stride=128 --max_query_length=64 \
      --train_batch_size=48 --learning_rate=3e-5 --train_step=8144 \
      --warmup_step=814 --n_best_size=20 --max_answer_length=30

Without --version_2_with_negative the data is SQuAD v1.1 (span labeler).
output_dir gets eval_results.json (official EM / F1; v2.0 also HasAns /
NoAns and the best no-answer threshold), predictions.json,
nbest_predictions.json, null_odds.json (v2.0), checkpoints (best/ = best dev
F1) and TensorBoard summaries. --export_dir writes a SavedModel that answers
raw question / context strings (predictions.json's answer, its character
offsets, score and, for v2.0, the no-answer probability).
"""

from absl import flags

from albert_tf.training import task_options

from . import cli
from . import finetune_flags

FLAGS = flags.FLAGS
# The SQuAD flags' defaults: SquadOptions' (TensorFlow-free).
DEFAULT = task_options.SquadOptions
finetune_flags.define_shared_flags()
# Key flags of this tool, so that --help lists them (absl shows only the
# main module's key flags; the shared ones are defined in finetune_flags).
flags.adopt_module_key_flags(finetune_flags)
flags.DEFINE_bool("version_2_with_negative", DEFAULT.version_2_with_negative,
                  "SQuAD v2.0: some questions have no answer.")
flags.DEFINE_string("train_file", DEFAULT.train_file,
                    "SQuAD JSON for training.")
flags.DEFINE_string("predict_file", DEFAULT.predict_file,
                    "SQuAD JSON to evaluate (--do_eval) or predict.")
flags.DEFINE_integer("doc_stride", DEFAULT.doc_stride,
                     "Pieces between the starts of consecutive windows.")
flags.DEFINE_integer("max_query_length", DEFAULT.max_query_length,
                     "Question pieces kept (the rest is cut). If unset and "
                     "too long for --max_seq_length: half of it.")
flags.DEFINE_integer("n_best_size", DEFAULT.n_best_size,
                     "Candidates per window and answers in "
                     "nbest_predictions.json.")
flags.DEFINE_integer("max_answer_length", DEFAULT.max_answer_length,
                     "Longest answer, in pieces.")
flags.DEFINE_integer("start_n_top", DEFAULT.start_n_top,
                     "v2.0 beam: start candidates.")
flags.DEFINE_integer("end_n_top", DEFAULT.end_n_top,
                     "v2.0 beam: end candidates per start.")
flags.DEFINE_enum("null_score", DEFAULT.null_score, task_options.NULL_SCORES,
                  "v2.0 no-answer score: the official ALBERT answer-class "
                  "head (with beam search), or BERT's [CLS] span score.")
flags.DEFINE_float("null_score_diff_threshold",
                   DEFAULT.null_score_diff_threshold,
                   "v2.0: answer '' above these null odds. Unset: tuned "
                   "for best F1 on --predict_file (official evaluation).")
flags.DEFINE_float("dropout_prob", DEFAULT.dropout_rate,
                   "Dropout in the v2.0 answer-class head.")
flags.DEFINE_string("export_dir", "",
                    "If set, export the best checkpoint as a SavedModel "
                    "whose serving_default takes raw question and context "
                    "strings and returns the answer (predictions.json's).")


def main(argv):
  del argv
  # Every check of the flags, config and vocabulary runs before TensorFlow
  # is imported (about 5 s): a mistake is reported at once.
  defaults = (task_options.DEFAULTS_V2 if FLAGS.version_2_with_negative
              else task_options.DEFAULTS_V1)
  params = finetune_flags.checked_params_from_flags(defaults)
  options = DEFAULT(
      train_file=FLAGS.train_file, predict_file=FLAGS.predict_file,
      version_2_with_negative=FLAGS.version_2_with_negative,
      null_score=FLAGS.null_score, doc_stride=FLAGS.doc_stride,
      max_query_length=FLAGS.max_query_length,
      n_best_size=FLAGS.n_best_size,
      max_answer_length=FLAGS.max_answer_length,
      start_n_top=FLAGS.start_n_top, end_n_top=FLAGS.end_n_top,
      null_score_diff_threshold=FLAGS.null_score_diff_threshold,
      dropout_rate=FLAGS.dropout_prob)
  options = task_options.derive_squad(params, options,
                                      finetune_flags.user_set())
  task_options.check_squad(params, options)
  from albert_tf.training import squad_finetuning  # TensorFlow
  results = squad_finetuning.run_squad(params, options,
                                       export_dir=FLAGS.export_dir)
  finetune_flags.print_results(results)


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
