"""Multiple-choice inputs, shared by RACE and one's own multiple-choice files.

As google-research/albert `race_utils.py`: for each choice,
`[CLS] context [SEP] question+choice [SEP]`, where question+choice is the
question with "_" replaced by the choice if it has a blank, else
"question choice"; the question+choice keeps its LAST `max_qa_length`
pieces, and the context is cut to fill `max_seq_length`. The raw-text
export (albert_tf.exports.serving.race) builds the same inputs in-graph.
"""

from typing import Dict, Sequence

import numpy as np

from albert_common.encoder_inputs import INPUT_MASK
from albert_common.encoder_inputs import INPUT_TYPE_IDS
from albert_common.encoder_inputs import INPUT_WORD_IDS
from albert_common.errors import UserInputError


def question_option_text(question: str, option: str) -> str:
  """The question with its blank filled by the option, else both joined."""
  if "_" in question:
    return question.replace("_", option)
  return " ".join([question, option])


def check_max_qa_length(max_qa_length: int, max_seq_length: int) -> None:
  if max_qa_length <= 0 or max_qa_length > max_seq_length - 3:
    raise UserInputError(
        f"--max_qa_length ({max_qa_length}) must be in [1, max_seq_length - "
        f"3 = {max_seq_length - 3}]")


def pack_choices(tokenizer, contexts: Sequence[str],
                 questions: Sequence[str],
                 choices: Sequence[Sequence[str]], max_seq_length: int,
                 max_qa_length: int) -> Dict[str, np.ndarray]:
  """Model inputs of n questions with C choices each (module docstring).

  Args:
    tokenizer: a SentencePieceTokenizer or WordPieceTokenizer.
    contexts, questions: n strings each ("" when there is none).
    choices: n lists of the same length C.
    max_seq_length, max_qa_length: see the module docstring.

  Returns:
    input_word_ids, input_mask, input_type_ids: int32 [n, C,
    max_seq_length].
  """
  check_max_qa_length(max_qa_length, max_seq_length)
  cls_id, sep_id, pad_id = tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id
  n, c = len(choices), len(choices[0]) if len(choices) else 0
  word_ids = np.full((n, c, max_seq_length), pad_id, np.int32)
  mask = np.zeros((n, c, max_seq_length), np.int32)
  type_ids = np.zeros((n, c, max_seq_length), np.int32)
  context_cache = {}
  for i, (context_text, question, options) in enumerate(
      zip(contexts, questions, choices)):
    if context_text not in context_cache:  # consecutive questions share one
      context_cache = {context_text: tokenizer.encode(context_text)}
    context_ids = context_cache[context_text]
    for j, option in enumerate(options):
      qa = tokenizer.encode(question_option_text(question, option))
      qa = qa[-max_qa_length:]
      context = context_ids[:max_seq_length - 3 - len(qa)]
      ids = [cls_id] + context + [sep_id] + qa + [sep_id]
      word_ids[i, j, :len(ids)] = ids
      mask[i, j, :len(ids)] = 1
      type_ids[i, j, len(context) + 2:len(ids)] = 1
  return {INPUT_WORD_IDS: word_ids, INPUT_MASK: mask,
          INPUT_TYPE_IDS: type_ids}


def softmax(logits: np.ndarray) -> np.ndarray:
  """float64 probabilities over the last axis."""
  logits = np.asarray(logits, np.float64)
  probabilities = np.exp(logits - logits.max(-1, keepdims=True))
  return probabilities / probabilities.sum(-1, keepdims=True)
