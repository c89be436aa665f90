"""A SentencePiece model carried by converted checkpoints.

`convert_checkpoint --spm_model_file=30k-clean.model` writes the model with
every output: beside an ours / official checkpoint under its own name (as
the released folders hold it), and in a Hugging Face folder as
`spiece.model` + `tokenizer_config.json` + `special_tokens_map.json`, the
files of Hugging Face's own ALBERT checkpoints, which
`transformers.AutoTokenizer` loads as an `AlbertTokenizer` (keras-hub
presets carry the model in their own layout).

transformers' AlbertTokenizer normalises as the official tokenizer does
(`` and '' -> ", NFKD, accents stripped, lowercase) but does not apply the
official digit-comma rule ("1,000," -> "1", ",", ...) and treats some
punctuation and control characters differently: on this project's
multilingual test text its ids differ from ours on 5 of 28 lines
(tests/albert_tf/checkpoints/test_checkpoint_round_trips.py), as those of
Hugging Face's own albert-base-v2 differ from google-research/albert's.
Imports no TensorFlow.
"""

import json

from albert_common import file_io
from albert_common.errors import UserInputError

_SPECIAL = {"bos_token": "[CLS]", "eos_token": "[SEP]", "unk_token": "<unk>",
            "sep_token": "[SEP]", "pad_token": "<pad>", "cls_token": "[CLS]",
            "mask_token": "[MASK]"}


def write_beside_checkpoint(spm_model_file: str, output_prefix: str) -> str:
  """Copies the model into the checkpoint's folder; returns its path."""
  path = file_io.join(file_io.dirname(output_prefix) or ".",
                      file_io.basename(spm_model_file))
  _copy(spm_model_file, path)
  return path


def write_huggingface_tokenizer(spm_model_file: str, folder: str,
                                do_lower_case: bool,
                                max_length: int) -> str:
  """spiece.model, tokenizer_config.json and special_tokens_map.json of an
  AlbertTokenizer in `folder`; returns a short description."""
  _copy(spm_model_file, file_io.join(folder, "spiece.model"))
  config = dict(_SPECIAL, tokenizer_class="AlbertTokenizer",
                do_lower_case=do_lower_case, remove_space=True,
                keep_accents=False, model_max_length=max_length)
  for name, values in (("tokenizer_config.json", config),
                       ("special_tokens_map.json", _SPECIAL)):
    file_io.write_atomic(file_io.join(folder, name),
                         json.dumps(values, indent=2, sort_keys=True) + "\n")
  return "spiece.model (AlbertTokenizer)"


def _copy(source: str, target: str) -> None:
  try:
    file_io.write_atomic(target, file_io.read_bytes(source))
  except OSError as e:
    raise UserInputError(f"--spm_model_file={source} cannot be copied to "
                         f"{target}: {e.strerror or e}") from None
