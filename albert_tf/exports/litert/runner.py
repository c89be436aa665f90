"""The reference raw-text runner (albert_tf.exports.text_runner) on a LiteRT
file: `TextRunner.from_file("sst2.tflite")` reads the description written
beside it and runs the file with LiteRT's interpreter. Imports no
TensorFlow.

  runner = TextRunner.from_file("sst2.tflite")
  runner.classify(["a fine film"])             # -> ["1"]
"""

import json

from albert_common import file_io
from albert_tf.exports import text_runner
from albert_tf.exports.litert.interpreter import LiteRTModel
from albert_tf.exports.text_runner import SQUAD_SETTINGS_FILE  # noqa: F401
from albert_tf.exports.text_runner import SquadSettings


def description_path(tflite_file: str) -> str:
  """`model.tflite` -> `model.json` (written by tflite.export_tflite)."""
  stem = (tflite_file[:-len(".tflite")] if tflite_file.endswith(".tflite")
          else tflite_file)
  return stem + ".json"


class TextRunner(text_runner.TextRunner):
  """text_runner.TextRunner, opened from a .tflite file."""

  @classmethod
  def from_file(cls, tflite_file: str, num_threads: int = 2,
                squad_settings: SquadSettings = SquadSettings()):
    description = json.loads(file_io.read_text(description_path(
        tflite_file)))
    model = LiteRTModel(file_io.read_bytes(tflite_file), num_threads)
    return cls(model, description, file_io.dirname(tflite_file),
               squad_settings)
