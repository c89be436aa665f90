"""keras-hub ALBERT presets: our checkpoints <-> `keras_hub.models.Albert*`.

A preset directory (keras-hub's format, `from_preset(dir)` loads it):

  config.json, model.weights.h5   AlbertBackbone (config + weights)
  tokenizer.json, assets/tokenizer/vocabulary.spm
                                  our OfficialAlbertTokenizer (a keras-hub
                                  AlbertTokenizer giving the official ids,
                                  albert_tf.keras3) on our SentencePiece
                                  model with ALBERT's normalisation written
                                  into it (see keras_hub_vocabulary)
  preprocessor.json               AlbertTextClassifierPreprocessor
                                  (sequence_length = max_position_embeddings,
                                  at most 512)
  task.json, task.weights.h5      AlbertMaskedLM with our masked-LM head, when
                                  the checkpoint has one
  metadata.json                   keras-hub's
  albert_tf.json                  what keras-hub's files cannot hold and the
                                  way back needs: do_lower_case,
                                  keep_accents, the initializer range and
                                  both dropout rates, the SentencePiece
                                  model's own normaliser and the pieces made
                                  unused

so that `keras_hub.models.AlbertBackbone.from_preset(dir)`,
`AlbertTextClassifier.from_preset(dir, num_classes=N)` and
`AlbertMaskedLM.from_preset(dir)` load it: the backbone with keras-hub
alone, anything with the tokenizer after `import albert_tf.keras3` (which
registers OfficialAlbertTokenizer with Keras).

keras-hub's AlbertBackbone is the official architecture with groups of
shared blocks: only `share_parameters="all"` and GELU (tanh approximation,
which keras-hub uses) convert; anything else is one UserInputError. The
variables have our shapes, so the name table is a pure renaming. The
sentence-order head has no keras-hub counterpart and is left out (said in
the summary). keras-hub has one dropout rate; ours has two (hidden,
attention): the preset uses the hidden one (albert_tf.json keeps both).
Differences in numerics: keras-hub's masked-LM head LayerNorm has epsilon
1e-5 (ours 1e-12).

Reading a preset is strict as every reader here: each keras-hub variable
must map, each encoder variable be present, each shape agree; all
violations are listed in one UserInputError. Writing needs keras-hub
(Keras 3), imported only then (albert_tf.keras3.preset_io).
"""

import base64
import dataclasses
import json
import os
import shutil
import tempfile
from typing import Any, Dict, List, Optional

import numpy as np

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf.checkpoints import configs
from albert_tf.checkpoints import keras_hub_vocabulary
from albert_tf.checkpoints import mapping
from albert_tf.checkpoints import name_tables
from albert_tf.config import AlbertConfig

VOCABULARY_FILE = "assets/tokenizer/vocabulary.spm"


# --- Names -------------------------------------------------------------------


def keras_hub_table(config: AlbertConfig) -> List[name_tables.Entry]:
  """Our canonical names <-> keras-hub variable paths (same shapes)."""
  configs.check_keras_hub_expressible(config)
  e = name_tables.Entry
  t = [e("embeddings/word_embeddings/embeddings", "token_embedding/embeddings"),
       e("embeddings/position_embeddings", "position_embedding/embeddings"),
       e("embeddings/token_type_embeddings/embeddings",
         "segment_embedding/embeddings"),
       e("embeddings/layer_norm/gamma", "embeddings_layer_norm/gamma"),
       e("embeddings/layer_norm/beta", "embeddings_layer_norm/beta"),
       e("embeddings/embedding_projection/kernel",
         "embedding_projection/kernel"),
       e("embeddings/embedding_projection/bias", "embedding_projection/bias")]
  for g in range(config.num_hidden_groups):
    for k in range(config.inner_group_num):
      theirs = f"group_{g}_inner_layer_{k}"
      att, ffn = f"group_{g}_inner_{k}_attention", f"group_{g}_inner_{k}_ffn"
      for p in ("query", "key", "value", "attention_output"):
        for w in ("kernel", "bias"):
          t.append(e(f"{att}/self_attention/{p}/{w}",
                     f"{theirs}/self_attention_layer/{p}/{w}"))
      for ours, kh in (("intermediate", "feedforward_intermediate_dense"),
                       ("output", "feedforward_output_dense")):
        for w in ("kernel", "bias"):
          t.append(e(f"{ffn}/{ours}/{w}", f"{theirs}/{kh}/{w}"))
      for w in ("gamma", "beta"):
        t += [e(f"{att}/layer_norm/{w}",
                f"{theirs}/self_attention_layer_norm/{w}"),
              e(f"{ffn}/layer_norm/{w}",
                f"{theirs}/feedforward_layer_norm/{w}")]
  t += [e("pooler/kernel", "pooled_dense/kernel"),
        e("pooler/bias", "pooled_dense/bias"),
        e("masked_lm/transform/kernel", "mlm_head/intermediate_dense/kernel"),
        e("masked_lm/transform/bias", "mlm_head/intermediate_dense/bias"),
        e("masked_lm/layer_norm/gamma",
          "mlm_head/intermediate_layer_norm/gamma"),
        e("masked_lm/layer_norm/beta", "mlm_head/intermediate_layer_norm/beta"),
        e("masked_lm/output_bias", "mlm_head/output_bias")]
  return t


# --- Presets on any filesystem -----------------------------------------------


def is_preset(path: str) -> bool:
  """Whether `path` is a directory holding a keras-hub backbone preset."""
  config_file = file_io.join(path, "config.json")
  if not (file_io.isdir(path) and file_io.exists(config_file)):
    return False
  try:
    values = json.loads(file_io.read_text(config_file))
  except ValueError:
    return False
  return configs.is_keras_hub_config(values)


def _download(path: str, local_dir: str) -> None:
  """Copies the preset folder `path` (any filesystem) into `local_dir`."""
  import tensorflow as tf
  for folder, _, names in tf.io.gfile.walk(path):
    rel = folder[len(path):].strip("/")
    os.makedirs(os.path.join(local_dir, rel), exist_ok=True)
    for name in names:
      tf.io.gfile.copy(file_io.join(folder, name),
                       os.path.join(local_dir, rel, name), overwrite=True)


def _publish(local_dir: str, output_dir: str) -> None:
  """Moves the finished local folder to `output_dir`, whole or not at all."""
  import tensorflow as tf
  staging = file_io.temp_name(output_dir)
  file_io.rmtree(staging)
  for folder, _, names in os.walk(local_dir):
    rel = os.path.relpath(folder, local_dir)
    target = staging if rel == "." else file_io.join(staging, rel)
    file_io.makedirs(target)
    for name in names:
      tf.io.gfile.copy(os.path.join(folder, name), file_io.join(target, name),
                       overwrite=True)
  try:
    # config.json last: it is what makes a folder a preset.
    file_io.rename_tree(staging, output_dir, last=("config.json",))
  finally:
    file_io.rmtree(staging)


@dataclasses.dataclass
class PresetContents:
  """What a preset holds, in our terms.

  Attributes:
    arrays: canonical name -> array (encoder, and masked_lm/... if present).
    config: the AlbertConfig of its backbone config (+ albert_tf.json).
    vocabulary: the SentencePiece model for our tokenizers (the original one
      when albert_tf.json records how to restore it), a WordPiece preset's
      vocab.txt, or None.
    do_lower_case, keep_accents: from albert_tf.json, else None (unknown).
    wordpiece: whether `vocabulary` is a WordPiece vocab.txt.
  """
  arrays: Dict[str, np.ndarray]
  config: AlbertConfig
  vocabulary: Optional[bytes]
  do_lower_case: Optional[bool]
  keep_accents: Optional[bool]
  wordpiece: bool = False


def read_preset(path: str, config: Optional[AlbertConfig] = None
                ) -> PresetContents:
  """Reads a keras-hub ALBERT preset strictly.

  Args:
    path: the preset directory (any filesystem).
    config: the model's config; default: the preset's own.

  Raises:
    UserInputError: not a readable ALBERT preset, or any variable that does
      not map, is missing or has the wrong shape (all listed).
  """
  from albert_tf.keras3 import preset_io
  if not is_preset(path):
    raise UserInputError(f"{path} is not a keras-hub preset directory (no "
                         "config.json of a keras-hub backbone)")
  extra = configs.read_keras_hub_extra(file_io.join(path, "config.json"))
  own_config = configs.config_from_keras_hub(
      json.loads(file_io.read_text(file_io.join(path, "config.json"))),
      extra, source=file_io.join(path, "config.json"))
  config = config or own_config
  local_dir = tempfile.mkdtemp(prefix="albert-keras-hub-")
  try:
    if file_io.is_remote(path):
      _download(path, local_dir)
      local = local_dir
    else:
      local = path
    try:
      _, source, vocabulary = preset_io.load_preset(local)
    except (OSError, ValueError, KeyError) as e:
      raise UserInputError(f"cannot load keras-hub preset {path}: {e}") from e
  finally:
    shutil.rmtree(local_dir, ignore_errors=True)
  arrays = mapping.map_to_ours(source, keras_hub_table(config),
                                 name_tables.our_shapes(config),
                                 source_name=path, layout="keras-hub")
  if vocabulary is not None and "spm_normalizer_spec" in extra:
    vocabulary = keras_hub_vocabulary.original_vocabulary(
        vocabulary, base64.b64decode(extra["spm_normalizer_spec"]),
        extra.get("unused_piece_ids", []))
  return PresetContents(
      arrays=arrays, config=own_config, vocabulary=vocabulary,
      do_lower_case=extra.get("do_lower_case"),
      keep_accents=extra.get("keep_accents"),
      wordpiece=extra.get("tokenizer") == TOKENIZER_CLASSES["wordpiece"])


# --keras_hub_tokenizer -> the tokenizer class the preset names.
TOKENIZER_CLASSES = {"stock": "AlbertTokenizer",
                     "official": "OfficialAlbertTokenizer",
                     "wordpiece": "BertTokenizer"}


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
  if keras_hub_tokenizer not in TOKENIZER_CLASSES:
    raise UserInputError(
        f"--keras_hub_tokenizer must be one of {sorted(TOKENIZER_CLASSES)}, "
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
# official tokenization (tests/test_keras_hub_preset.py asserts these).
STOCK_DIFFERENCES = ("its ids differ from the official tokenization on 8 of "
                     "3536 lines of our English test corpus (a digit before "
                     "a comma, e.g. \"1,000,\"), and in tf.data on 6 more "
                     "(exact Viterbi ties broken another way)")


def write_preset(arrays: Dict[str, np.ndarray], config: AlbertConfig,
                 output_dir: str, spm_model_file: str,
                 do_lower_case: bool = True,
                 keep_accents: bool = False,
                 keras_hub_tokenizer: str = "stock") -> str:
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
  pieces = len(keras_hub_vocabulary._parse(model_proto).pieces)
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
      tokenizer=TOKENIZER_CLASSES[keras_hub_tokenizer])
  save_and_publish(arrays, config, output_dir, vocabulary, keras_hub_tokenizer,
                   extra, do_lower_case)
  dropped, task = heads_note(arrays)
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
                     extra: Dict[str, Any], do_lower_case: bool) -> None:
  """Saves the preset (preset_io.save_preset) in a private local folder
  with `extra` as albert_tf.json, then publishes it at `output_dir`."""
  from albert_tf.keras3 import preset_io
  kept = {n: a for n, a in arrays.items()
          if not n.startswith("sentence_order/")}
  theirs = mapping.map_from_ours(kept, keras_hub_table(config))
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
    try:
      _publish(local_dir, output_dir)
    except OSError as e:
      raise UserInputError(f"cannot write preset {output_dir}: {e}") from e
  finally:
    shutil.rmtree(local_dir, ignore_errors=True)


def heads_note(arrays: Dict[str, np.ndarray]):
  """(what was left out, the task written) for the conversion's line."""
  heads = {n.split("/")[0] for n in arrays if name_tables.is_head(n)}
  dropped = (" (sentence_order head left out: keras-hub has no sentence-order "
             "task)" if "sentence_order" in heads else "")
  return dropped, " + AlbertMaskedLM task" if "masked_lm" in heads else ""


def write_companions(contents: PresetContents, output_prefix: str) -> str:
  """Next to a converted checkpoint: albert_config.json and spiece.model
  (the preset's tokenizer model) or vocab.txt (a WordPiece preset's).
  Returns a description."""
  folder = file_io.dirname(output_prefix) or "."
  written = [file_io.join(folder, "albert_config.json")]
  file_io.write_json_atomic(written[0], contents.config.to_dict())
  if contents.vocabulary is not None:
    written.append(file_io.join(
        folder, "vocab.txt" if contents.wordpiece else "spiece.model"))
    file_io.write_atomic(written[1], contents.vocabulary)
  lower = ("" if contents.do_lower_case is None else
           f", use with do_lower_case={contents.do_lower_case}")
  return f"wrote {' and '.join(written)}{lower}"
