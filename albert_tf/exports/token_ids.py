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
"""

from typing import Callable, Dict, Optional, Sequence

import tensorflow as tf

from albert_common.encoder_inputs import ENCODER_INPUT_NAMES

TOKEN_IDS = "token_ids"


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
