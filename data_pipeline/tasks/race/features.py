"""RACE examples -> multiple-choice model inputs; accuracy and predictions.

Features as google-research/albert `race_utils.py`: for each option,
`[CLS] article [SEP] question+option [SEP]`, where question+option is the
question with "_" replaced by the option if it has a blank, else
"question option"; the question+option keeps its LAST `max_qa_length`
pieces, and the article is cut to fill `max_seq_length`.
"""

import json
from typing import Dict, Optional, Sequence

import numpy as np

from albert_common import file_io
from albert_common.encoder_inputs import INPUT_MASK
from albert_common.encoder_inputs import INPUT_TYPE_IDS
from albert_common.encoder_inputs import INPUT_WORD_IDS
from albert_common.errors import UserInputError
from data_pipeline.tasks.race.examples import LABELS
from data_pipeline.tasks.race.examples import LEVELS
from data_pipeline.tasks.race.examples import RaceExample
from data_pipeline.tokenization.sentencepiece_tokenizer import (
  SentencePieceTokenizer,
)


def question_option_text(question: str, option: str) -> str:
  """The question with its blank filled by the option, else both joined."""
  if "_" in question:
    return question.replace("_", option)
  return " ".join([question, option])


def convert_examples_to_arrays(examples: Sequence[RaceExample],
                               tokenizer: SentencePieceTokenizer,
                               max_seq_length: int = 512,
                               max_qa_length: int = 128
                              ) -> Dict[str, np.ndarray]:
  """Model inputs of every example.

  Returns:
    dict: input_word_ids, input_mask, input_type_ids int32
      [n, num_choices, max_seq_length]; label_ids int32 [n].
  """
  if max_qa_length <= 0 or max_qa_length > max_seq_length - 3:
    raise UserInputError(
        f"--max_qa_length ({max_qa_length}) must be in [1, max_seq_length - "
        f"3 = {max_seq_length - 3}]")
  cls_id, sep_id, pad_id = tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id
  n, c = len(examples), len(LABELS)
  word_ids = np.full((n, c, max_seq_length), pad_id, np.int32)
  mask = np.zeros((n, c, max_seq_length), np.int32)
  type_ids = np.zeros((n, c, max_seq_length), np.int32)
  article_cache = {}
  for i, example in enumerate(examples):
    if example.article not in article_cache:
      article_cache = {example.article: tokenizer.encode(example.article)}
    article = article_cache[example.article]
    for j, option in enumerate(example.options):
      qa = tokenizer.encode(question_option_text(example.question, option))
      qa = qa[-max_qa_length:]
      context = article[:max_seq_length - 3 - len(qa)]
      ids = [cls_id] + context + [sep_id] + qa + [sep_id]
      word_ids[i, j, :len(ids)] = ids
      mask[i, j, :len(ids)] = 1
      type_ids[i, j, len(context) + 2:len(ids)] = 1
  labels = np.array([e.label for e in examples], np.int32)
  return {INPUT_WORD_IDS: word_ids, INPUT_MASK: mask,
          INPUT_TYPE_IDS: type_ids, "label_ids": labels}


def accuracy(examples: Sequence[RaceExample], predictions: Sequence[int]
            ) -> Dict[str, float]:
  """Accuracy overall and per level, fractions in [0, 1].

  Returns:
    {"accuracy", "accuracy_middle", "accuracy_high", "num_examples", ...}:
    a level's entries only when it has questions.
  """
  predictions = np.asarray(predictions)
  labels = np.array([e.label for e in examples])
  out = {"accuracy": float(np.mean(predictions == labels)),
         "num_examples": float(len(examples))}
  for level in LEVELS:
    selected = np.array([e.level == level for e in examples])
    if selected.any():
      out[f"accuracy_{level}"] = float(
          np.mean(predictions[selected] == labels[selected]))
      out[f"num_examples_{level}"] = float(selected.sum())
  return out


def write_predictions(path: str, examples: Sequence[RaceExample],
                      logits: np.ndarray,
                      predictions: Optional[Sequence[int]] = None) -> None:
  """`{example_id: {"answer": "A".."D", "probabilities": [4]}}` as JSON."""
  logits = np.asarray(logits, np.float64)
  probs = np.exp(logits - logits.max(-1, keepdims=True))
  probs /= probs.sum(-1, keepdims=True)
  if predictions is None:
    predictions = probs.argmax(-1)
  content = {e.example_id: {"answer": LABELS[int(p)],
                            "probabilities": [float(x) for x in row]}
             for e, p, row in zip(examples, predictions, probs)}
  file_io.write_atomic(path, json.dumps(content, indent=2))
