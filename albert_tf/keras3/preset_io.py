"""keras-hub ALBERT preset directories, written and read with keras-hub.

The Keras 3 half of `albert_tf.checkpoints.keras_hub_presets.preset` (which maps
names and configs and handles user paths). Everything here works on a local
directory and plain numpy arrays keyed by keras-hub variable paths
("token_embedding/embeddings", "group_0_inner_layer_0/...",
"mlm_head/output_bias").
"""

from typing import Dict, Optional, Tuple

import numpy as np

from albert_common import file_io

MLM_PREFIX = "mlm_head/"
CLASSIFIER_PREFIX = "logits/"  # AlbertTextClassifier's Dense


def _backbone(backbone_kwargs):
  import keras_hub
  # Fixed names: the same checkpoint always gives the same preset files.
  return keras_hub.models.AlbertBackbone(dtype="float32",
                                         name="albert_backbone",
                                         **backbone_kwargs)


def _assign(variables, arrays: Dict[str, np.ndarray], what: str) -> None:
  by_path = {v.path: v for v in variables}
  missing = sorted(set(by_path) - set(arrays))
  unknown = sorted(set(arrays) - set(by_path))
  if missing or unknown:  # the name table and keras-hub disagree: a bug
    raise AssertionError(f"{what}: missing {missing}, unknown {unknown}")
  for path, variable in by_path.items():
    variable.assign(arrays[path])


# What a preset's tokenizer is: keras-hub's own AlbertTokenizer (the preset
# loads with keras-hub alone), ours (the official ids on every path; loading
# needs `import albert_tf.keras3`), or, for a WordPiece vocabulary,
# keras-hub's BertTokenizer (loads with keras-hub alone).
TOKENIZERS = ("stock", "official", "wordpiece")


def _tokenizer(tokenizer_kind: str, vocabulary, do_lower_case: bool):
  import keras_hub

  from albert_tf.keras3 import official_albert_tokenizer
  if tokenizer_kind == "wordpiece":
    # BERT uncased: lowercase and strip accents together, as officially.
    return keras_hub.models.BertTokenizer(
        vocabulary=list(vocabulary), lowercase=do_lower_case,
        strip_accents=do_lower_case, name="albert_tokenizer")
  tokenizer_class = (official_albert_tokenizer.OfficialAlbertTokenizer
                     if tokenizer_kind == "official" else
                     keras_hub.models.AlbertTokenizer)
  return tokenizer_class(proto=vocabulary, name="albert_tokenizer")


def save_preset(local_dir: str, backbone_kwargs: dict,
                arrays: Dict[str, np.ndarray], vocabulary,
                sequence_length: int, tokenizer_kind: str = "stock",
                do_lower_case: bool = True,
                classifier_dropout: float = 0.1) -> None:
  """Writes a preset: backbone, tokenizer, classifier preprocessor and, when
  `arrays` holds `logits/...`, an AlbertTextClassifier task with that head,
  else when it holds `mlm_head/...`, an AlbertMaskedLM task with its head.

  Args:
    local_dir: an existing empty local directory.
    backbone_kwargs: AlbertBackbone constructor arguments.
    arrays: keras-hub variable path -> array (float32).
    vocabulary: the tokenizer's SentencePiece model bytes, or for
      "wordpiece" the vocabulary's tokens (list of str, in id order).
    sequence_length: the preprocessors' default sequence length.
    tokenizer_kind: one of TOKENIZERS.
    do_lower_case: for "wordpiece": lowercase and strip accents.
    classifier_dropout: the AlbertTextClassifier's dropout rate.
  """
  import keras_hub

  if tokenizer_kind not in TOKENIZERS:
    raise ValueError(f"tokenizer_kind must be one of {TOKENIZERS}, got "
                     f"{tokenizer_kind!r}")
  backbone = _backbone(backbone_kwargs)
  _assign(backbone.weights,
          {k: v for k, v in arrays.items()
           if not k.startswith((MLM_PREFIX, CLASSIFIER_PREFIX))}, "backbone")
  tokenizer = _tokenizer(tokenizer_kind, vocabulary, do_lower_case)
  head = {k: v for k, v in arrays.items() if k.startswith(CLASSIFIER_PREFIX)}
  if head:
    task = keras_hub.models.AlbertTextClassifier(
        backbone, num_classes=int(head["logits/kernel"].shape[-1]),
        preprocessor=keras_hub.models.AlbertTextClassifierPreprocessor(
            tokenizer, sequence_length=sequence_length,
            name="albert_text_classifier_preprocessor"),
        dropout=classifier_dropout, name="albert_text_classifier")
    _assign([v for v in task.weights if v.path.startswith(CLASSIFIER_PREFIX)],
            head, "classifier head")
    task.save_to_preset(local_dir)
  elif any(k.startswith(MLM_PREFIX) for k in arrays):
    task = keras_hub.models.AlbertMaskedLM(
        backbone, keras_hub.models.AlbertMaskedLMPreprocessor(
            tokenizer, sequence_length=sequence_length,
            name="albert_masked_lm_preprocessor"), name="albert_masked_lm")
    # Build the head's variables (they are created on first call).
    task({"token_ids": np.zeros((1, 2), "int32"),
          "segment_ids": np.zeros((1, 2), "int32"),
          "padding_mask": np.ones((1, 2), "int32"),
          "mask_positions": np.zeros((1, 1), "int32")})
    head = [v for v in task.weights if v.path.startswith(MLM_PREFIX)]
    _assign(head, {k: v for k, v in arrays.items()
                   if k.startswith(MLM_PREFIX)}, "masked LM head")
    task.save_to_preset(local_dir)
  else:
    backbone.save_to_preset(local_dir)
    tokenizer.save_to_preset(local_dir)
  # preprocessor.json: what AlbertTextClassifier.from_preset builds (the
  # masked LM task keeps its own preprocessor inside task.json).
  keras_hub.models.AlbertTextClassifierPreprocessor(
      tokenizer, sequence_length=sequence_length,
      name="albert_text_classifier_preprocessor").save_to_preset(local_dir)


def load_preset(local_dir: str
                ) -> Tuple[dict, Dict[str, np.ndarray], Optional[bytes]]:
  """(backbone config dict, path -> array, vocabulary bytes or None: the
  SentencePiece model, or a WordPiece preset's vocabulary.txt).

  The arrays hold the backbone's variables and, when the preset has an
  AlbertMaskedLM task with weights, its head's (`mlm_head/...`), or an
  AlbertTextClassifier's, its head's (`logits/...`).
  """
  import json

  import keras_hub
  task_file = file_io.join(local_dir, "task.json")
  model, prefix = None, None
  if (file_io.exists(task_file) and
      file_io.exists(file_io.join(local_dir, "task.weights.h5"))):
    task = json.loads(file_io.read_text(task_file))
    for class_name, head_prefix in (("AlbertMaskedLM", MLM_PREFIX),
                                    ("AlbertTextClassifier",
                                     CLASSIFIER_PREFIX)):
      if task.get("class_name") == class_name:
        # load_task_weights: the head too; no preprocessor needed.
        model = getattr(keras_hub.models, class_name).from_preset(
            local_dir, preprocessor=None)
        backbone, prefix = model.backbone, head_prefix
  if model is None:
    backbone = keras_hub.models.AlbertBackbone.from_preset(local_dir)
  arrays = {v.path: np.asarray(v.numpy(), np.float32)
            for v in backbone.weights}
  if model is not None:
    arrays.update({v.path: np.asarray(v.numpy(), np.float32)
                   for v in model.weights if v.path.startswith(prefix)})
  vocabulary = None
  for name in ("vocabulary.spm", "vocabulary.txt"):  # SentencePiece, WordPiece
    vocab_file = file_io.join(local_dir, "assets", "tokenizer", name)
    if file_io.exists(vocab_file):
      vocabulary = file_io.read_bytes(vocab_file)
  return backbone.get_config(), arrays, vocabulary
