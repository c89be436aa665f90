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
                                  the checkpoint has one; AlbertTextClassifier
                                  with our classifier head for a fine-tuned
                                  classifier (task_models.keras_tables)
  labels.txt                      a classifier's label names (keras-hub keeps
                                  none), one a line in the head's order
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
violations are listed in one UserInputError.

This module holds the name table and the reading side (`read_preset`, and
`write_companions` for the checkpoint it becomes); keras_hub_preset_writer
writes presets. The weights files need keras-hub (Keras 3), imported only
then (albert_tf.keras3.preset_io).
"""

import base64
import dataclasses
import json
import os
import shutil
import tempfile
from typing import Dict, List, Optional

import numpy as np

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf.checkpoints import configs
from albert_tf.checkpoints import mapping
from albert_tf.checkpoints import name_tables
from albert_tf.checkpoints.task_models import head_tables
from albert_tf.checkpoints.task_models import keras_tables
from albert_tf.checkpoints.task_models import task_heads
from albert_tf.config import AlbertConfig
from data_pipeline.tokenization import keras_hub_vocabulary

VOCABULARY_FILE = "assets/tokenizer/vocabulary.spm"
# A classifier preset's label names, one a line in the head's order
# (keras-hub keeps none).
LABELS_FILE = task_heads.LABELS_FILE

# --keras_hub_tokenizer -> the tokenizer class the preset names.
TOKENIZER_CLASSES = {"stock": "AlbertTokenizer",
                     "official": "OfficialAlbertTokenizer",
                     "wordpiece": "BertTokenizer"}


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
  """Copies the preset folder `path` (any filesystem) into `local_dir`, a
  private local folder."""
  os.makedirs(local_dir, exist_ok=True)
  for name in file_io.listdir(path):
    source = file_io.join(path, name)
    if file_io.isdir(source):
      _download(source, os.path.join(local_dir, name))
    else:
      file_io.copy(source, os.path.join(local_dir, name))


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
    task: the class of the preset's task (task.json), else None.
    head: an AlbertTextClassifier's head under keras-hub's names
      (keras_tables: `logits/kernel`, `logits/bias`), else {}.
    labels: the names in the preset's labels.txt (one a line, in the
      head's order), else None.
  """
  arrays: Dict[str, np.ndarray]
  config: AlbertConfig
  vocabulary: Optional[bytes]
  do_lower_case: Optional[bool]
  keep_accents: Optional[bool]
  wordpiece: bool = False
  task: Optional[str] = None
  head: Dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
  labels: Optional[List[str]] = None


def task_class(path: str) -> Optional[str]:
  """The class of the preset's task (task.json), None without one.

  Raises:
    UserInputError: a task no head of ours expresses, or an
      AlbertTextClassifier whose activation is not on logits.
  """
  task_file = file_io.join(path, "task.json")
  if not file_io.exists(task_file):
    return None
  try:
    task = json.loads(file_io.read_text(task_file))
  except ValueError as e:
    raise UserInputError(f"bad {task_file}: {e}") from e
  name = task.get("class_name")
  if name not in keras_tables.KERAS_HUB_TASKS:
    raise UserInputError(
        f"{path} is a keras-hub {name} preset; the ALBERT tasks read here "
        f"are {', '.join(keras_tables.KERAS_HUB_TASKS)}")
  if name == keras_tables.KERAS_HUB_CLASSIFIER:
    keras_tables.check_activation(
        task.get("config", {}).get("activation"), task_file)
  _check_task_backbone(path, task)
  return name


def _check_task_backbone(path: str, task) -> None:
  """keras-hub builds a task from the backbone config inside task.json, the
  backbone alone from config.json: both must describe one architecture.

  Raises:
    UserInputError: naming the values that differ.
  """
  inner = (task.get("config", {}).get("backbone") or {}).get("config")
  if not isinstance(inner, dict):
    return
  outer = json.loads(file_io.read_text(file_io.join(path, "config.json")))
  outer = outer.get("config", {})
  ignored = ("name", "trainable", "dtype")
  differing = sorted(k for k in set(inner) | set(outer)
                     if k not in ignored and inner.get(k) != outer.get(k))
  if differing:
    raise UserInputError(
        f"keras-hub preset {path}: config.json and task.json's backbone "
        "disagree: " + ", ".join(f"{k}: {outer.get(k)!r} vs {inner.get(k)!r}"
                                 for k in differing))


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
  task = task_class(path)
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
      first = str(e).strip().splitlines()[0] if str(e).strip() else repr(e)
      raise UserInputError(
          f"cannot load keras-hub preset {path} (do its config.json and "
          f"task.json agree with its weights?): {first}") from e
  finally:
    shutil.rmtree(local_dir, ignore_errors=True)
  head_names = head_tables.source_names("keras_hub")
  head = {n: a for n, a in source.items() if n in head_names}
  source = {n: a for n, a in source.items() if n not in head_names}
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
      wordpiece=extra.get("tokenizer") == TOKENIZER_CLASSES["wordpiece"],
      task=task, head=head,
      labels=task_heads.official_labels(file_io.join(path, LABELS_FILE)))


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
