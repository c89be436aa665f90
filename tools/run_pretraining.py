r"""Pretrain ALBERT (MLM + SOP) with LAMB under a tf.distribute strategy.

  python -m tools.run_pretraining \
      --input_file='data/train.tfrecord*' --eval_file=data/eval.tfrecord \
      --output_dir=runs/albert_base \
      --albert_config_file=configs/albert_base.json \
      --train_batch_size=4096 --max_seq_length=512 \
      --max_predictions_per_seq=20 --optimizer=lamb --learning_rate=0.00176 \
      --num_train_steps=125000 --num_warmup_steps=3125 \
      --save_checkpoints_steps=5000 \
      --iterations_per_loop=1000 --strategy=tpu --tpu=$TPU_NAME --dtype=bfloat16

Rerunning the same command resumes from the last checkpoint in --output_dir.
TensorBoard: tensorboard --logdir=<output_dir>
"""

from albert_tf.training.pretraining import params as pretraining_params

from .support import cli
from .support import settings_flags

# Every flag is a field of PretrainingParams (its name, default and help).
settings_flags.define_flags(pretraining_params.PretrainingParams, __name__)


def main(argv):
  del argv
  # The settings are built, checked and completed (config file read once)
  # before TensorFlow is imported (about 5 s): a mistake is reported at once.
  params, user_set = settings_flags.read_settings(
      pretraining_params.PretrainingParams)
  prepared = pretraining_params.prepare(params, user_set)
  from albert_tf.training.pretraining import (
    driver as pretraining_driver,  # TensorFlow
  )
  pretraining_driver.run_pretraining(prepared)


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
