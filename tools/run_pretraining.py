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

import dataclasses

from absl import flags

from albert_common.run_constants import DTYPES
from albert_common.run_constants import OPTIMIZERS
from albert_common.run_constants import STRATEGIES
from albert_tf.training import pretraining_params

from . import cli

# The defaults are PretrainingParams' (the official recipe); TensorFlow-free.
DEFAULT = pretraining_params.PretrainingParams
FLAGS = flags.FLAGS
flags.DEFINE_string("input_file", None,
                    "Training TFRecords: comma-separated paths or globs.")
flags.DEFINE_string("eval_file", DEFAULT.eval_file,
                    "Held-out TFRecords for evaluation.")
flags.DEFINE_string("output_dir", None,
                    "Checkpoints, summaries and results are written here.")
flags.DEFINE_string("albert_config_file", None, "albert_config.json.")
flags.DEFINE_string("init_checkpoint", DEFAULT.init_checkpoint,
                    "Warm-start weights (our checkpoint or a directory of "
                    "them). Ignored when --output_dir already has one.")
flags.DEFINE_integer("train_batch_size", DEFAULT.train_batch_size,
                     "Global training batch size.")
flags.DEFINE_integer("eval_batch_size", DEFAULT.eval_batch_size,
                     "Global evaluation batch size.")
flags.DEFINE_integer("max_seq_length", DEFAULT.max_seq_length,
                     "Sequence length the TFRecords were written with.")
flags.DEFINE_integer("max_predictions_per_seq",
                     DEFAULT.max_predictions_per_seq,
                     "Masked positions per sequence in the TFRecords.")
flags.DEFINE_enum("optimizer", DEFAULT.optimizer, OPTIMIZERS,
                  "Optimizer.")
flags.DEFINE_float("learning_rate", DEFAULT.learning_rate,
                   "Peak learning rate.")
flags.DEFINE_float("poly_power", DEFAULT.poly_power,
                   "Power of the polynomial decay.")
flags.DEFINE_float("weight_decay_rate", DEFAULT.weight_decay_rate,
                   "Decoupled weight decay.")
flags.DEFINE_integer("num_train_steps", DEFAULT.num_train_steps,
                     "Training steps.")
flags.DEFINE_integer("num_warmup_steps", DEFAULT.num_warmup_steps,
                     "Linear warmup steps (if unset and not below "
                     "--num_train_steps: 2.5% of it).")
flags.DEFINE_integer("save_checkpoints_steps", DEFAULT.save_checkpoints_steps,
                     "Checkpoint (and evaluate) every this many steps.")
flags.DEFINE_integer("keep_checkpoint_max", DEFAULT.keep_checkpoint_max,
                     "Checkpoints kept.")
flags.DEFINE_integer("iterations_per_loop", DEFAULT.iterations_per_loop,
                     "Steps per host loop (one tf.function call).")
flags.DEFINE_integer("max_eval_steps", DEFAULT.max_eval_steps,
                     "Evaluation batches per evaluation; -1 for the whole "
                     "eval_file.")
flags.DEFINE_enum("strategy", DEFAULT.strategy, STRATEGIES,
                  "tf.distribute strategy.")
flags.DEFINE_string("tpu", DEFAULT.tpu,
                    "TPU address or name for TPUClusterResolver.")
flags.DEFINE_enum("dtype", DEFAULT.dtype, DTYPES,
                  "Compute dtype (mixed precision; float16 with loss "
                  "scaling).")
flags.DEFINE_bool("jit_compile", DEFAULT.jit_compile,
                  "Compile the forward/backward pass with XLA.")
flags.DEFINE_integer("seed", DEFAULT.seed,
                     "Seed for initialisation and shuffling.")
flags.DEFINE_integer("shuffle_buffer_size", DEFAULT.shuffle_buffer_size,
                     "Records in the training shuffle buffer.")
flags.mark_flags_as_required(["input_file", "output_dir",
                              "albert_config_file"])


def check_before_tensorflow() -> pretraining_params.PretrainingParams:
  """The settings from the flags, checked with the config file before
  TensorFlow is imported (about 5 s); a --num_warmup_steps left at its
  default but not below a --num_train_steps the user set is scaled down
  with it (logged, and set in FLAGS)."""
  params = DEFAULT(**{field.name: getattr(FLAGS, field.name)
                      for field in dataclasses.fields(DEFAULT)
                      if field.name in FLAGS})
  user_set = {name for name in FLAGS if FLAGS[name].present}
  params = pretraining_params.check_before_building(params, user_set)
  FLAGS.num_warmup_steps = params.num_warmup_steps
  return params


def main(argv):
  del argv
  params = check_before_tensorflow()
  from albert_tf.training import run_pretraining  # TensorFlow
  run_pretraining.run_pretraining(params)


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
