"""Writing keras-hub ALBERT presets: our weights -> `keras_hub.models.Albert*`.

The preset's layout, what converts and what does not are described in
keras_hub_preset (the name table and the reading side). Here: checking that
a preset can be written before any weights are read (`check_output`),
writing one of a SentencePiece model (`write_preset`; WordPiece models:
keras_hub_wordpiece), and publishing it whole: keras-hub saves into a
private local folder (albert_tf.keras3.preset_io, Keras 3, imported only
then), which is then copied under a hidden name next to `output_dir` (any
filesystem) and renamed into place, its config.json last.
"""

import base64
import json
import os
import shutil
import tempfile
from typing import Any, Dict, Optional, Sequence

import numpy as np

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf.checkpoints import configs
from albert_tf.checkpoints import mapping
from albert_tf.checkpoints import name_tables
from albert_tf.checkpoints.keras_hub_presets import preset as keras_hub_preset
from albert_tf.checkpoints.task_models import head_tables
from albert_tf.config import AlbertConfig
from data_pipeline.tokenization import keras_hub_vocabulary


def check_output(config: AlbertConfig, output_dir: str,
                 spm_model_file: Optional[str],
                 keras_hub_tokenizer: str = "stock") -> bytes:
  """Checks a preset can be written (before any weights are read).

  Returns:
    The SentencePiece model's bytes.

  Raises:
    UserInputError: an inexpressible config, an existing output_dir, no or
      an unreadable SentencePiece model.
  """
  configs.check_keras_hub_expressible(config)
  kinds = sorted(keras_hub_preset.TOKENIZER_CLASSES)
  if keras_hub_tokenizer not in kinds:
    raise UserInputError(f"--keras_hub_tokenizer must be one of {kinds}, "
                         f"got {keras_hub_tokenizer!r}")
  if file_io.exists(output_dir):
    raise UserInputError(f"--output_checkpoint {output_dir} already exists; "
                         "a preset is written to a new directory")
  if keras_hub_tokenizer == "wordpiece":
    return b""
  if not spm_model_file:
    raise UserInputError("--output_format=keras_hub needs --spm_model_file "
                         "or --vocab_file (the preset's tokenizer is built "
                         "from it)")
  try:
    return file_io.read_bytes(spm_model_file)
  except (OSError, ValueError) as e:
    raise UserInputError(
        f"cannot read SentencePiece model file {spm_model_file}: {e}") from e


# Measured on tests' English corpus (stdlib docstrings, 2000-piece model):
# lines whose ids from keras-hub's stock AlbertTokenizer differ from the
# official tokenization (tests/albert_tf/checkpoints/test_keras_hub_preset.py
# asserts these).
STOCK_DIFFERENCES = ("its ids differ from the official tokenization on 8 of "
                     "3536 lines of our English test corpus (a digit before "
                     "a comma, e.g. \"1,000,\"), and in tf.data on 6 more "
                     "(exact Viterbi ties broken another way)")


def write_preset(arrays: Dict[str, np.ndarray], config: AlbertConfig,
                 output_dir: str, spm_model_file: str,
                 do_lower_case: bool = True,
                 keep_accents: bool = False,
                 keras_hub_tokenizer: str = "stock",
                 labels: Optional[Sequence[str]] = None) -> str:
  """Writes a keras-hub preset directory; returns a one-line description.

  Args:
    arrays: canonical name -> array, as `converter.read_weights` gives.
    config: the model's AlbertConfig.
    output_dir: the preset directory (any filesystem); must not exist.
    spm_model_file: the SentencePiece model the checkpoint was trained with.
    do_lower_case, keep_accents: how that model is used (written into the
      preset's tokenizer).
    keras_hub_tokenizer: "stock" (keras-hub's AlbertTokenizer: the preset
      loads and fine-tunes with keras-hub alone, its ids differ from the
      official tokenization on a few lines, STOCK_DIFFERENCES) or
      "official" (albert_tf.keras3.OfficialAlbertTokenizer: the official ids
      on every path; loading needs `import albert_tf.keras3`).
    labels: a classifier's label names in its head's order (written to
      the preset's labels.txt), or None.

  Raises:
    UserInputError: an inexpressible config, an existing output_dir, an
      unreadable or too large SentencePiece model.
  """
  if keras_hub_tokenizer == "wordpiece":
    raise ValueError("a WordPiece preset: use write_wordpiece_preset")
  model_proto = check_output(config, output_dir, spm_model_file,
                             keras_hub_tokenizer)
  try:
    vocabulary, unused = keras_hub_vocabulary.preset_vocabulary(
        model_proto, do_lower_case, keep_accents)
  except UserInputError as e:
    raise UserInputError(f"{spm_model_file}: {e}") from e
  pieces = keras_hub_vocabulary.piece_count(model_proto)
  if pieces > config.vocab_size:
    raise UserInputError(
        f"SentencePiece model {spm_model_file} has {pieces} pieces, more than "
        f"the config's vocab_size ({config.vocab_size})")
  extra = dict(
      format="albert_tf keras-hub preset", do_lower_case=bool(do_lower_case),
      keep_accents=bool(keep_accents),
      hidden_dropout_prob=config.hidden_dropout_prob,
      attention_probs_dropout_prob=config.attention_probs_dropout_prob,
      initializer_range=config.initializer_range,
      spm_normalizer_spec=base64.b64encode(
          keras_hub_vocabulary.normalizer_spec_of(model_proto)).decode("ascii"),
      unused_piece_ids=unused,
      tokenizer=keras_hub_preset.TOKENIZER_CLASSES[keras_hub_tokenizer])
  save_and_publish(arrays, config, output_dir, vocabulary, keras_hub_tokenizer,
                   extra, do_lower_case, labels)
  dropped, task = heads_note(arrays, labels)
  if keras_hub_tokenizer == "official":
    tokenizer = (f"OfficialAlbertTokenizer ({len(unused)} digit-comma pieces "
                 "re-split by the official rule; loading needs "
                 "`import albert_tf.keras3`)")
  else:
    tokenizer = (f"keras-hub's AlbertTokenizer (loads with keras-hub alone; "
                 f"{len(unused)} digit-comma pieces unused; "
                 f"{STOCK_DIFFERENCES}; --keras_hub_tokenizer=official for "
                 "the exact ids)")
  return (f"keras-hub preset {output_dir}: AlbertBackbone{task}, "
          f"{tokenizer}{dropped}")


def save_and_publish(arrays: Dict[str, np.ndarray], config: AlbertConfig,
                     output_dir: str, vocabulary, tokenizer_kind: str,
                     extra: Dict[str, Any], do_lower_case: bool,
                     labels: Optional[Sequence[str]] = None) -> None:
  """Saves the preset (preset_io.save_preset) in a private local folder
  with `extra` as albert_tf.json (and `labels` as labels.txt), then
  publishes it at `output_dir`."""
  from albert_tf.keras3 import preset_io
  theirs = _keras_hub_arrays(arrays, config, labels)
  local_dir = tempfile.mkdtemp(prefix="albert-keras-hub-")
  try:
    preset_io.save_preset(local_dir, configs.backbone_kwargs(config), theirs,
                          vocabulary,
                          sequence_length=min(512,
                                              config.max_position_embeddings),
                          tokenizer_kind=tokenizer_kind,
                          do_lower_case=do_lower_case)
    extra_file = os.path.join(local_dir, configs.KERAS_HUB_EXTRA_FILE)
    with open(extra_file, "w", encoding="utf-8") as f:
      json.dump(extra, f, indent=2)
      f.write("\n")
    if labels is not None:
      with open(os.path.join(local_dir, keras_hub_preset.LABELS_FILE), "w",
                encoding="utf-8") as f:
        f.write("".join(f"{name}\n" for name in labels))
    try:
      _publish(local_dir, output_dir)
    except OSError as e:
      raise UserInputError(f"cannot write preset {output_dir}: {e}") from e
  finally:
    shutil.rmtree(local_dir, ignore_errors=True)


def _keras_hub_arrays(arrays: Dict[str, np.ndarray], config: AlbertConfig,
                      labels: Optional[Sequence[str]]) -> Dict[str, np.ndarray]:
  """keras-hub path -> array: the backbone, and the masked-LM head or a
  classifier's head (AlbertTextClassifier, task_models.keras_tables).

  Raises:
    UserInputError: a task head keras-hub has no task for, or label names
      that are not one per output.
  """
  other = {head_tables.kind_of(n) for n in arrays} - {None, "classifier"}
  if other:
    raise UserInputError(
        "keras-hub has no ALBERT task for "
        f"{head_tables.DESCRIPTIONS[min(other)]}; only a classifier "
        "(AlbertTextClassifier) or a pretrained encoder converts to a preset")
  head = {n: a for n, a in arrays.items() if head_tables.kind_of(n)}
  kept = {n: a for n, a in arrays.items()
          if not n.startswith("sentence_order/") and n not in head
          and not (head and name_tables.is_head(n))}
  theirs = mapping.map_from_ours(kept, keras_hub_preset.keras_hub_table(config))
  if head:
    width = int(head["classifier/dense/kernel"].shape[-1])
    if labels is not None and len(labels) != width:
      raise UserInputError(f"{len(labels)} label names {list(labels)} for a "
                           f"classifier of {width} outputs")
    theirs.update(mapping.map_from_ours(
        head, head_tables.head_table("keras_hub", "classifier")))
  return theirs


def heads_note(arrays: Dict[str, np.ndarray],
               labels: Optional[Sequence[str]] = None):
  """(what was left out, the task written) for the conversion's line."""
  heads = {n.split("/")[0] for n in arrays if name_tables.is_head(n)}
  if "classifier/dense/kernel" in arrays:
    width = int(arrays["classifier/dense/kernel"].shape[-1])
    named = (f"labels.txt: {', '.join(labels)}" if labels is not None
             else "no label names known, no labels.txt")
    dropped = (" (masked_lm head left out: the preset is the classifier)"
               if "masked_lm" in heads else "")
    return dropped, f" + AlbertTextClassifier task ({width} outputs; {named})"
  dropped = (" (sentence_order head left out: keras-hub has no sentence-order "
             "task)" if "sentence_order" in heads else "")
  return dropped, " + AlbertMaskedLM task" if "masked_lm" in heads else ""


def _publish(local_dir: str, output_dir: str) -> None:
  """Moves the finished local folder to `output_dir`, whole or not at all."""
  staging = file_io.temp_name(output_dir)
  file_io.rmtree(staging)
  for folder, _, names in os.walk(local_dir):
    rel = os.path.relpath(folder, local_dir)
    target = staging if rel == "." else file_io.join(staging, rel)
    file_io.makedirs(target)
    for name in names:
      file_io.copy(os.path.join(folder, name), file_io.join(target, name))
  try:
    # config.json last: it is what makes a folder a preset.
    file_io.rename_tree(staging, output_dir, last=("config.json",))
  finally:
    file_io.rmtree(staging)
