"""The token-ids signature every serving export carries beside its raw-text one.

A raw-text signature runs SentencePiece (tensorflow-text ops) in-graph, which
on-device runtimes do not have. The `token_ids` signature is the model alone:
int32 `input_word_ids`, `input_mask`, `input_type_ids` [batch, seq] ([batch,
choices, seq] for RACE) in, the model's outputs under their raw-text names
out. `tools.export_tflite` converts it; TF Serving clients that tokenize
themselves can call it too.

Outputs:
  classifier  `logits`, `probabilities` float32 [batch, C] (regression:
              `predictions` float32 [batch]; multi-label: `probabilities`
              are each label's sigmoid).
  SQuAD       `start_logits`, `end_logits` float32 [batch, seq]; the v2.0
              answer-class model also takes `p_mask` (int32 [batch, seq], 1
              where no answer may start or end) and gives its beam:
              `start_top_log_probs`, `start_top_index`, `end_top_log_probs`,
              `end_top_index` and `cls_logits`.
  RACE        `logits`, `probabilities` float32 [batch, 4] (one's own
              multiple choice: [batch, choices]).
  NER         `tag_logits`, `tag_probabilities` float32 [batch, seq, tags].
The encoder's `serving_default` already is a token-ids signature.

`token_ids_function` finds the signature in an export and `model_spec` says
what it is (serving_kinds.py), for the converters (litert/, onnx/).
"""

import dataclasses
from typing import Callable, Dict, Optional, Sequence, Tuple

import tensorflow as tf

from albert_common import file_io
from albert_common.encoder_inputs import ENCODER_INPUT_NAMES
from albert_common.errors import UserInputError
from albert_tf import saved_model_inspection as inspection
from albert_tf.exports import serving_kinds
from albert_tf.exports.saved_model_loading import load_saved_model

TOKEN_IDS = "token_ids"
# An early-exit export's token-ids signature without the loop (every
# example at full depth): what export_onnx converts (ONNX Runtime ran the
# loop slower than the layers it saves; docs/early-exit.md).
TOKEN_IDS_FULL_DEPTH = inspection.TOKEN_IDS_FULL_DEPTH
# An early-exit export's token-ids signature with the exit loop in its
# unbranched form (early_exit_encoder.early_exit(branches=False)): what
# export_tflite converts (LiteRT prepares an IF's branch again on each
# call: the branched loop ran 3x slower there; docs/early-exit.md).
TOKEN_IDS_UNBRANCHED = "token_ids_unbranched"


def token_ids_signature(fn: Callable[[Dict[str, tf.Tensor]], Dict],
                        num_choices: Optional[int] = None,
                        extra_inputs: Sequence[str] = ()) -> Callable:
  """A tf.function with the signature's keyword inputs around `fn`.

  Args:
    fn: dict of int32 inputs -> dict of outputs.
    num_choices: None for [batch, seq] inputs; else [batch, num_choices,
      seq] (RACE).
    extra_inputs: more int32 inputs of the same shape (SQuAD v2.0's p_mask).
  """
  names = tuple(ENCODER_INPUT_NAMES) + tuple(extra_inputs)
  shape = [None, None] if num_choices is None else [None, num_choices, None]
  specs = [tf.TensorSpec(shape, tf.int32, name=name) for name in names]

  # A signature's input names are its function's parameter names.
  if len(names) == 3:
    @tf.function(input_signature=specs)
    def token_ids(input_word_ids, input_mask, input_type_ids):
      return fn(dict(zip(names, (input_word_ids, input_mask,
                                 input_type_ids))))
  elif tuple(extra_inputs) == ("p_mask",):
    @tf.function(input_signature=specs)
    def token_ids(input_word_ids, input_mask, input_type_ids, p_mask):
      return fn(dict(zip(names, (input_word_ids, input_mask, input_type_ids,
                                 p_mask))))
  else:
    raise ValueError(f"unsupported extra inputs {extra_inputs}")
  return token_ids


def classification_outputs(logits: tf.Tensor, regression: bool,
                           multi_label: bool = False) -> Dict:
  """logits float32 [batch, C] -> the classifier's numeric outputs
  (`probabilities`: softmax, or each label's sigmoid for multi_label)."""
  logits = tf.cast(logits, tf.float32)
  if regression:
    return dict(predictions=logits[:, 0])
  if multi_label:
    return dict(logits=logits, probabilities=tf.sigmoid(logits))
  return dict(logits=logits, probabilities=tf.nn.softmax(logits, axis=-1))


@dataclasses.dataclass(frozen=True)
class ModelSpec:
  """What a token-ids signature is, for the converters and the runners.

  Attributes:
    kind: a serving_kinds.KINDS name: "encoder", "classifier",
      "regression", "squad", "squad_beam", "race", ...
    input_names: the int32 inputs, in order.
    input_shape: of each input, e.g. [1, 128] or [1, 4, 128] (None where
      the axis is dynamic).
    output_names: the outputs kept, sorted.
  """
  kind: str
  input_names: Tuple[str, ...]
  input_shape: Tuple[Optional[int], ...]
  output_names: Tuple[str, ...]


def token_ids_function(saved_model: str):
  """(loaded SavedModel, its token-ids signature function).

  Raises:
    UserInputError: no such signature (not our export, a preprocessor, or
      one written before exports carried it).
  """
  loaded = load_saved_model(saved_model)
  signatures = loaded.signatures
  if TOKEN_IDS in signatures:
    return loaded, signatures[TOKEN_IDS]
  default = signatures.get("serving_default")
  if default is not None:
    inputs = default.structured_input_signature[1]
    if (set(ENCODER_INPUT_NAMES) == set(inputs) and
        "pooled_output" in default.structured_outputs):
      return loaded, default
    if set(ENCODER_INPUT_NAMES) <= set(default.structured_outputs):
      raise UserInputError(
          f"--saved_model={saved_model} is a preprocessor (raw strings in, "
          "token ids out); give the encoder beside it "
          "(<export_dir>/encoder) or a fine-tuned model's --export_dir")
  raise UserInputError(
      f"--saved_model={saved_model} has no token-ids signature ('"
      f"{TOKEN_IDS}', or an encoder's serving_default): it is not "
      "an ALBERT export of this project, or predates token-ids signatures; "
      "re-export it")


def model_spec(function, batch_size: Optional[int] = None,
               seq_length: Optional[int] = None,
               saved_model: Optional[str] = None) -> ModelSpec:
  """The ModelSpec of a token-ids signature at an input shape (None:
  dynamic). A classifier of one's own data whose labels.json (in
  `saved_model`'s assets) says multi-label is "multi_label".

  Raises:
    UserInputError: outputs of no known kind.
  """
  specs = function.structured_input_signature[1]
  names = tuple(ENCODER_INPUT_NAMES) + tuple(
      sorted(set(specs) - set(ENCODER_INPUT_NAMES)))
  choices = specs[ENCODER_INPUT_NAMES[0]].shape[1:-1].as_list()
  outputs = function.structured_outputs
  kind = serving_kinds.kind_of(
      {name: spec.shape.rank for name, spec in outputs.items()},
      bool(choices))
  if kind is None:
    raise UserInputError(
        f"a token-ids signature with outputs {sorted(outputs)} is of no "
        "known serving kind (albert_tf/exports/serving_kinds.py)")
  if kind.name == "classifier" and saved_model is not None:
    from data_pipeline.tasks import label_list
    saved = label_list.read(file_io.join(saved_model, "assets"))
    if saved is not None and saved.task_type == "multi_label":
      kind = serving_kinds.BY_NAME["multi_label"]
  return ModelSpec(kind.name, names, (batch_size, *choices, seq_length),
                   serving_kinds.kept_outputs(kind, list(outputs)))


def max_positions(function) -> Optional[int]:
  """Rows of the position embedding table the signature function reads."""
  for v in function.variables:
    if "position_embedding" in v.name:
      return int(v.shape[0])
  return None


def vocab_size(function) -> int:
  """Rows of the word embedding table the signature function reads."""
  for v in function.variables:
    if "word_embeddings" in v.name:
      return int(v.shape[0])
  return 100
