"""One's own multiple-choice examples -> model inputs; accuracy and the
predictions file.

Inputs are RACE's (data_pipeline.tasks.choice_inputs): per choice
`[CLS] context [SEP] question+choice [SEP]`, int32 [n, choices, seq]. The
predictions file (`test_predictions.jsonl`, `dev_predictions.jsonl`) holds
one JSON object per question in input order: its id (when the file has an
id column), "answer_index", "choice" (the chosen choice's text) and
"probabilities" (one per choice, in the record's order).
"""

import json
from typing import Dict, List, Sequence

import numpy as np

from albert_common import file_io
from albert_common.encoder_inputs import ENCODER_INPUT_NAMES
from data_pipeline.tasks import choice_inputs
from data_pipeline.tasks.multiple_choice.examples import ChoiceExample


def featurize(examples: Sequence[ChoiceExample], tokenizer,
              max_seq_length: int, max_qa_length: int
             ) -> Dict[str, np.ndarray]:
  """Model inputs: input_word_ids, input_mask, input_type_ids int32
  [n, choices, max_seq_length]; with labels also label_ids int32 [n]."""
  arrays = choice_inputs.pack_choices(
      tokenizer, [e.context for e in examples],
      [e.question for e in examples], [e.choices for e in examples],
      max_seq_length, max_qa_length)
  if examples and examples[0].label is not None:
    arrays["label_ids"] = np.array([e.label for e in examples], np.int32)
  return arrays


def model_inputs(arrays: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
  return {k: arrays[k] for k in ENCODER_INPUT_NAMES}


def compute_metrics(label_ids: np.ndarray, logits: np.ndarray
                   ) -> Dict[str, float]:
  """accuracy (fraction of questions answered right), loss (mean
  cross-entropy) and num_examples."""
  probabilities = choice_inputs.softmax(logits)
  label_ids = np.asarray(label_ids)
  chosen = probabilities[np.arange(len(label_ids)), label_ids]
  return {"accuracy": float(np.mean(probabilities.argmax(-1) == label_ids)),
          "loss": float(-np.mean(np.log(np.maximum(chosen, 1e-30)))),
          "num_examples": float(len(label_ids))}


def prediction_records(examples: Sequence[ChoiceExample],
                       logits: np.ndarray) -> List[Dict]:
  """One dict per question (module docstring)."""
  probabilities = choice_inputs.softmax(logits)
  records = []
  for example, row in zip(examples, probabilities):
    index = int(row.argmax())
    record = {"id": example.record_id} if example.record_id is not None \
        else {}
    record.update(answer_index=index, choice=example.choices[index],
                  probabilities=[float(p) for p in row])
    records.append(record)
  return records


def write_predictions(path: str, records: Sequence[Dict]) -> str:
  """JSON lines (UTF-8, not escaped), published atomically."""
  file_io.write_atomic(path, "".join(
      json.dumps(r, ensure_ascii=False) + "\n" for r in records))
  return path
