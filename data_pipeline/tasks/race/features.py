"""RACE examples -> multiple-choice model inputs; accuracy and predictions.

Features as google-research/albert `race_utils.py`
(data_pipeline.tasks.choice_inputs, shared with one's own multiple-choice
files): for each option, `[CLS] article [SEP] question+option [SEP]`.
"""

import json
from typing import Dict, Optional, Sequence

import numpy as np

from albert_common import file_io
from data_pipeline.tasks import choice_inputs
from data_pipeline.tasks.choice_inputs import question_option_text
from data_pipeline.tasks.race.examples import LABELS
from data_pipeline.tasks.race.examples import LEVELS
from data_pipeline.tasks.race.examples import RaceExample
from data_pipeline.tokenization.sentencepiece_tokenizer import (
  SentencePieceTokenizer,
)

__all__ = ["accuracy", "convert_examples_to_arrays", "question_option_text",
           "write_predictions"]


def convert_examples_to_arrays(examples: Sequence[RaceExample],
                               tokenizer: SentencePieceTokenizer,
                               max_seq_length: int = 512,
                               max_qa_length: int = 128
                              ) -> Dict[str, np.ndarray]:
  """Model inputs of every example (choice_inputs.pack_choices).

  Returns:
    dict: input_word_ids, input_mask, input_type_ids int32
      [n, num_choices, max_seq_length]; label_ids int32 [n].
  """
  arrays = choice_inputs.pack_choices(
      tokenizer, [e.article for e in examples],
      [e.question for e in examples], [e.options for e in examples],
      max_seq_length, max_qa_length)
  if not examples:
    arrays = {k: np.zeros((0, len(LABELS), max_seq_length), np.int32)
              for k in arrays}
  arrays["label_ids"] = np.array([e.label for e in examples], np.int32)
  return arrays


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
  probs = choice_inputs.softmax(logits)
  if predictions is None:
    predictions = probs.argmax(-1)
  content = {e.example_id: {"answer": LABELS[int(p)],
                            "probabilities": [float(x) for x in row]}
             for e, p, row in zip(examples, predictions, probs)}
  file_io.write_atomic(path, json.dumps(content, indent=2))
