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

import dataclasses

from absl import logging

from albert_tf.checkpoints.task_models import source_model
from albert_tf.training.finetuning import params as finetuning_params
from albert_tf.training.finetuning import task_settings

from .support import cli
from .support import settings_flags

# Every flag is a field of the settings classes (name, default and help).
settings_flags.define_flags(finetuning_params.FinetuningParams, __name__)
settings_flags.define_flags(task_settings.SquadOptions, __name__)


def main(argv):
  del argv
  # The settings are built and checked, the config and the vocabulary read
  # once, before TensorFlow is imported (about 5 s): a mistake is reported
  # at once.
  options, _ = settings_flags.read_settings(task_settings.SquadOptions)
  recipe = (task_settings.DEFAULTS_V2 if options.version_2_with_negative
            else task_settings.DEFAULTS_V1)
  params, user_set = settings_flags.read_settings(
      finetuning_params.FinetuningParams, recipe)
  prepared = finetuning_params.prepare(params, user_set, recipe,
                                       require_vocabulary=True,
                                       head_kind=source_model.ANY_HEAD)
  options = task_settings.derive_squad(prepared.params, options, user_set)
  options = _head_of_source(prepared, options, user_set)
  task_settings.check_squad(prepared.params, options)
  from albert_tf.training.finetuning.tasks import (
    squad as squad_finetuning,  # TensorFlow
  )
  results = squad_finetuning.run_squad(prepared, options)
  settings_flags.print_results(results)


def _head_of_source(prepared, options, user_set):
  """SQuAD v2.0 takes the head an --init_checkpoint holds when --null_score
  is left out: a span head (Hugging Face qa_outputs, the official v1 head)
  scores no-answer BERT's way (cls). The head is then checked against the
  run's."""
  source = prepared.source
  if source is None or source.head is None or not prepared.params.init_head:
    return options
  from albert_tf.checkpoints.task_models import task_heads
  if (options.version_2_with_negative and "null_score" not in user_set and
      source.head.kinds == ["span"]):
    options = dataclasses.replace(options, null_score="cls")
    logging.info("--null_score=cls: --init_checkpoint holds a start/end "
                 "span head (no answer-class layer)")
  task_heads.check_kind(source.head, "squad_v2" if options.beam else "span")
  return options


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
