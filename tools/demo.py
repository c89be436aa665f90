"""The whole pipeline, end to end, on a corpus built on this machine.

  python -m tools.demo --output_dir=demo_output      (or simply: make demo)

Builds an English corpus from the Python standard library's docstrings,
trains a SentencePiece model (or, with --tokenizer=wordpiece, a WordPiece
vocab.txt), writes pretraining TFRecords, pretrains a small
ALBERT on the CPU, reports held-out MLM and SOP accuracy against their
baselines, and exports a SavedModel. Rerunning resumes where it stopped.
"""

from absl import flags
from absl import logging

from .support import cli

FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", "demo_output", "Where everything goes.")
flags.DEFINE_integer("num_train_steps", 600, "Pretraining steps.")
flags.DEFINE_integer("train_batch_size", 64, "Sequences per step.")
flags.DEFINE_enum("tokenizer", "sentencepiece", ["sentencepiece", "wordpiece"],
                  "sentencepiece: ALBERT's SentencePiece model; wordpiece: a "
                  "BERT vocab.txt (tools.train_wordpiece), as the released "
                  "Chinese models use. Use a new --output_dir to switch.")


def main(argv):
  del argv
  # Orbit prints its progress lines and also logs them; keep one copy.
  logging.set_verbosity(logging.WARNING)
  # Imported here so that --help answers without loading TensorFlow.
  from .support import pipeline_demo

  pipeline_demo.run_demo(pipeline_demo.DemoSettings(
      output_dir=FLAGS.output_dir, num_train_steps=FLAGS.num_train_steps,
      train_batch_size=FLAGS.train_batch_size, tokenizer=FLAGS.tokenizer))


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
