"""The whole pipeline, end to end, on a corpus built on this machine.

  python -m tools.demo --output_dir=demo_output      (or simply: make demo)

Builds an English corpus from the Python standard library's docstrings,
trains a SentencePiece model (or, with --tokenizer=wordpiece, a WordPiece
vocab.txt), writes pretraining TFRecords, pretrains a small
ALBERT on the CPU, reports held-out MLM and SOP accuracy against their
baselines, and exports a SavedModel. Rerunning resumes where it stopped.
"""

import dataclasses

from absl import logging

from albert_common.settings_fields import setting

from .support import cli
from .support import settings_flags


@dataclasses.dataclass(frozen=True, kw_only=True)
class DemoFlags:
  """The demo's flags (each field is its flag; run_pretraining shares
  --output_dir, --num_train_steps and --train_batch_size with defaults of
  its own)."""

  output_dir: str = setting("demo_output", "Where everything goes.")
  num_train_steps: int = setting(600, "Pretraining steps.")
  train_batch_size: int = setting(64, "Sequences per step.")
  tokenizer: str = setting(
      "sentencepiece", "sentencepiece: ALBERT's SentencePiece model; "
      "wordpiece: a BERT vocab.txt (tools.train_wordpiece), as the released "
      "Chinese models use. Use a new --output_dir to switch.",
      choices=("sentencepiece", "wordpiece"))


settings_flags.define_flags(DemoFlags, __name__)


def main(argv):
  del argv
  # Orbit prints its progress lines and also logs them; keep one copy.
  logging.set_verbosity(logging.WARNING)
  # Imported here so that --help answers without loading TensorFlow.
  from .support import pipeline_demo

  demo, _ = settings_flags.read_settings(DemoFlags)
  pipeline_demo.run_demo(pipeline_demo.DemoSettings(
      **dataclasses.asdict(demo)))


def run():
  cli.run(main)


if __name__ == "__main__":
  run()
