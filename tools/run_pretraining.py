r"""Pretrain ALBERT (MLM + SOP) with LAMB under a tf.distribute strategy.

  python -m tools.run_pretraining \
      --input_file='data/train.tfrecord*' --eval_file=data/eval.tfrecord \
      --output_dir=runs/albert_base --albert_config_file=configs/albert_base.json \
      --train_batch_size=4096 --max_seq_length=512 --max_predictions_per_seq=20 \
      --optimizer=lamb --learning_rate=0.00176 --num_train_steps=125000 \
      --num_warmup_steps=3125 --save_checkpoints_steps=5000 \
      --iterations_per_loop=1000 --strategy=tpu --tpu=$TPU_NAME --dtype=bfloat16

Rerunning the same command resumes from the last checkpoint in --output_dir.
TensorBoard: tensorboard --logdir=<output_dir>
"""

from absl import flags

from . import cli

FLAGS = flags.FLAGS
flags.DEFINE_string("input_file", None,
                    "Training TFRecords: comma-separated paths or globs.")
flags.DEFINE_string("eval_file", "", "Held-out TFRecords for evaluation.")
flags.DEFINE_string("output_dir", None,
                    "Checkpoints, summaries and results are written here.")
flags.DEFINE_string("albert_config_file", None, "albert_config.json.")
flags.DEFINE_string("init_checkpoint", "",
                    "Warm-start weights (our checkpoint or a directory of "
                    "them). Ignored when --output_dir already has one.")
flags.DEFINE_integer("train_batch_size", 4096, "Global training batch size.")
flags.DEFINE_integer("eval_batch_size", 64, "Global evaluation batch size.")
flags.DEFINE_integer("max_seq_length", 512,
                     "Sequence length the TFRecords were written with.")
flags.DEFINE_integer("max_predictions_per_seq", 20,
                     "Masked positions per sequence in the TFRecords.")
flags.DEFINE_enum("optimizer", "lamb", ["lamb", "adamw"], "Optimizer.")
flags.DEFINE_float("learning_rate", 0.00176, "Peak learning rate.")
flags.DEFINE_float("poly_power", 1.0, "Power of the polynomial decay.")
flags.DEFINE_float("weight_decay_rate", 0.01, "Decoupled weight decay.")
flags.DEFINE_integer("num_train_steps", 125000, "Training steps.")
flags.DEFINE_integer("num_warmup_steps", 3125,
                     "Linear warmup steps (if unset and not below "
                     "--num_train_steps: 2.5% of it).")
flags.DEFINE_integer("save_checkpoints_steps", 5000,
                     "Checkpoint (and evaluate) every this many steps.")
flags.DEFINE_integer("keep_checkpoint_max", 5, "Checkpoints kept.")
flags.DEFINE_integer("iterations_per_loop", 1000,
                     "Steps per host loop (one tf.function call).")
flags.DEFINE_integer("max_eval_steps", 100,
                     "Evaluation batches per evaluation; -1 for the whole "
                     "eval_file.")
flags.DEFINE_enum("strategy", "default",
                  ["default", "one_device", "mirrored", "multi_worker", "tpu"],
                  "tf.distribute strategy.")
flags.DEFINE_string("tpu", "", "TPU address or name for TPUClusterResolver.")
flags.DEFINE_enum("dtype", "float32", ["float32", "bfloat16", "float16"],
                  "Compute dtype (mixed precision; float16 with loss "
                  "scaling).")
flags.DEFINE_bool("jit_compile", False,
                  "Compile the forward/backward pass with XLA.")
flags.DEFINE_integer("seed", None, "Seed for initialisation and shuffling.")
flags.DEFINE_integer("shuffle_buffer_size", 10000,
                     "Records in the training shuffle buffer.")
flags.mark_flags_as_required(["input_file", "output_dir",
                              "albert_config_file"])


# The default schedule's warmup share (3125 of 125000 steps).
WARMUP_FRACTION = (FLAGS["num_warmup_steps"].default /
                   FLAGS["num_train_steps"].default)


def check_before_tensorflow() -> None:
  """The checks that need only the flags and the config file, run before
  TensorFlow is imported (about 5 s); a --num_warmup_steps left at its
  default but not below a --num_train_steps the user set is scaled down
  with it (logged)."""
  from absl import logging  # pylint: disable=g-import-not-at-top
  from albert_tf.config import AlbertConfig  # pylint: disable=g-import-not-at-top
  from data_pipeline.shared import UserInputError  # pylint: disable=g-import-not-at-top
  config = AlbertConfig.from_json_file(FLAGS.albert_config_file)
  if FLAGS.max_seq_length > config.max_position_embeddings:
    raise UserInputError(
        f"--max_seq_length={FLAGS.max_seq_length} exceeds "
        f"max_position_embeddings={config.max_position_embeddings} in "
        f"{FLAGS.albert_config_file}")
  if FLAGS.num_train_steps <= 0:
    raise UserInputError(
        f"--num_train_steps must be positive, got {FLAGS.num_train_steps}")
  if (not FLAGS["num_warmup_steps"].present and
      FLAGS.num_warmup_steps >= FLAGS.num_train_steps):
    FLAGS.num_warmup_steps = int(FLAGS.num_train_steps * WARMUP_FRACTION)
    logging.info("using --num_warmup_steps=%d (%.3g%% of --num_train_steps, "
                 "as the default schedule)", FLAGS.num_warmup_steps,
                 100 * WARMUP_FRACTION)
  if not 0 <= FLAGS.num_warmup_steps < FLAGS.num_train_steps:
    raise UserInputError(
        f"--num_warmup_steps ({FLAGS.num_warmup_steps}) must be in "
        f"[0, num_train_steps={FLAGS.num_train_steps})")


def main(argv):
  del argv
  check_before_tensorflow()
  from albert_tf.training import run_pretraining as lib  # pylint: disable=g-import-not-at-top

  params = lib.PretrainingParams(
      **{field: getattr(FLAGS, field)
         for field in lib.PretrainingParams.__dataclass_fields__
         if field in FLAGS})
  lib.run_pretraining(params)


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
