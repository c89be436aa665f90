"""What the command-line tools print besides their results: library chatter
filtered (tools/support/cli.py), nothing before an error line."""

import logging
import os
import subprocess
import sys

from tools.support import cli

ROOT = os.path.abspath(os.path.join(__file__, "../../.."))


def _record(pathname, level=logging.INFO):
  return logging.LogRecord("absl", level, pathname, 1, "message", (), None)


def test_library_chatter_is_filtered_and_nothing_else():
  keep = cli._NoEchoOfPrintedProgress().filter
  site = "/venv/lib/python3.11/site-packages/"
  chatter = [
      _record(site + "orbit/controller.py"),
      _record(site + "tensorflow/python/checkpoint/functional_saver.py"),
      _record(site + "tensorflow/python/saved_model/"
              "signature_serialization.py"),
      _record(site + "tensorflow/python/saved_model/save.py"),
      _record(site + "tensorflow/python/saved_model/builder_impl.py"),
      _record(site + "tensorflow/python/saved_model/fingerprinting_utils.py"),
      _record(site + "tf_keras/src/saving/legacy/saving_utils.py",
              logging.WARNING),
  ]
  assert not any(keep(r) for r in chatter)
  kept = [
      _record("/work/albert_tf/checkpoints/converter.py"),
      _record("/work/albert_tf/training/finetuning_runner.py", logging.WARNING),
      # Errors of the same sources are never hidden.
      _record(site + "tensorflow/python/saved_model/save.py", logging.ERROR),
      _record(site + "tf_keras/src/saving/legacy/saving_utils.py",
              logging.ERROR),
  ]
  assert all(keep(r) for r in kept)


def test_non_utf8_error_is_all_that_is_printed(tmp_path, spm_model):
  """No progress-bar fragment before the error line."""
  corpus = tmp_path / "latin1.txt"
  corpus.write_bytes(b"A first line.\nCaf\xe9 in Latin-1.\n\nAnother one.\n")
  result = subprocess.run(
      [sys.executable, "-m", "tools.create_pretraining_data",
       f"--input_file={corpus}", f"--output_file={tmp_path}/out.tfrecord",
       f"--spm_model_file={spm_model}", "--max_seq_length=32",
       "--max_predictions_per_seq=5", "--num_workers=1"],
      cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True,
      text=True, timeout=120)
  assert result.returncode == 1
  assert result.stderr == (
      f"error: {corpus}:2: not UTF-8 text (invalid continuation byte at "
      "byte 17); fix the file or pass --skip_non_utf8_lines\n")
