"""The one tokenizer file in a folder a user gives (an encoder's or a task
model's checkpoint folder, an export's assets), for the settings a user
leaves out. Read by the fine-tuning settings (training.encoder_files) and
by the converter. No TensorFlow: the settings checks run before it is
imported.
"""

from typing import Dict

from absl import logging

from albert_common import file_io

# A tokenizer file's suffix, and the flag that names it.
_VOCABULARY_FLAGS = ((".model", "spm_model_file"), (".txt", "vocab_file"))
# A keras-hub preset's tokenizer files (assets/tokenizer/).
_KERAS_HUB_VOCABULARIES = (("vocabulary.spm", "spm_model_file"),
                           ("vocabulary.txt", "vocab_file"))
# Text files beside a task model that are no vocabulary: its label names.
_NOT_VOCABULARIES = ("labels.txt",)


def vocabulary_in(folder: str, flag: str) -> Dict[str, str]:
  """{"spm_model_file" or "vocab_file": the one tokenizer file in
  `folder`}, or {} (none, or more than one of a kind). `flag` names where
  the folder came from, for the log line. A keras-hub preset's is
  assets/tokenizer/vocabulary.spm (or .txt); a task model's labels.txt is
  no vocabulary."""
  names = file_io.listdir(folder) if file_io.isdir(folder) else []
  if "assets" in [n.rstrip("/") for n in names]:
    for file_name, name in _KERAS_HUB_VOCABULARIES:
      path = file_io.join(folder, "assets", "tokenizer", file_name)
      if file_io.exists(path):
        logging.info("--%s=%s (from --%s)", name, path, flag)
        return {name: path}
  for suffix, name in _VOCABULARY_FLAGS:
    found = sorted(n for n in names
                   if n.endswith(suffix) and n not in _NOT_VOCABULARIES)
    if len(found) == 1:
      path = file_io.join(folder, found[0])
      logging.info("--%s=%s (from --%s)", name, path, flag)
      return {name: path}
  return {}
