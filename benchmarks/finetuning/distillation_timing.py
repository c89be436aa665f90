"""Timings of `benchmarks.finetuning.distillation`'s models: a SavedModel's
token-ids signature at batch 1 and 32, and its LiteRT dynamic-int8 file at
batch 1 (token ids in, fixed length: tokenization is not timed)."""

import os
import time
from typing import Dict, Optional

import numpy as np
import tensorflow as tf

BATCH = 32


class EarlyExitTokenIds(tf.Module):
  """A token-ids SavedModel of an early-exit model at one patience, with
  the unbranched loop export_tflite converts (as run_classifier
  --early_exit's export carries both)."""

  def __init__(self, model, patience: int):
    super().__init__()
    self.model = model
    self.patience = patience

  def outputs(self, inputs, branches=True):
    out = self.model.early_exit(inputs, self.patience, branches=branches)
    return dict(logits=out["logits"],
                probabilities=tf.nn.softmax(out["logits"]),
                exit_layer=out["exit_layer"])

  def unbranched_outputs(self, inputs):
    return self.outputs(inputs, branches=False)


def save_early_exit(model, patience: int, path: str) -> str:
  from albert_tf.exports import token_ids
  module = EarlyExitTokenIds(model, patience)
  tf.saved_model.save(module, path, signatures={
      token_ids.TOKEN_IDS: token_ids.token_ids_signature(module.outputs),
      token_ids.TOKEN_IDS_UNBRANCHED: token_ids.token_ids_signature(
          module.unbranched_outputs)})
  return path


def median_ms(call, singles, repeats: int) -> float:
  """Median over examples of each example's best-of-repeats ms, one at a
  time."""
  call(singles[0])
  best = np.full(len(singles), np.inf)
  for _ in range(repeats):
    for i, one in enumerate(singles):
      start = time.perf_counter()
      call(one)
      best[i] = min(best[i], time.perf_counter() - start)
  return float(1000 * np.median(best))


def time_model(saved_model: str, dev: Dict[str, np.ndarray], work: str,
               seq_length: int, examples: int, repeats: int,
               threads: int, labels: Optional[np.ndarray] = None
               ) -> Dict[str, float]:
  """{"savedmodel_ms", "litert_ms", "per_s"} of one SavedModel: batch-1
  medians over `examples` dev examples spread over the file, and the
  SavedModel's batch-32 examples/s over the dev set (best of repeats);
  with labels (one per dev row), "litert_accuracy": the int8 file's dev
  accuracy, every row at batch 1 (after the timings)."""
  from albert_tf.exports import load_saved_model
  from albert_tf.exports.litert import converter as litert
  from albert_tf.exports.litert.interpreter import LiteRTModel
  function = load_saved_model(saved_model).signatures["token_ids"]

  def saved(inputs):
    return function(**{k: tf.constant(v) for k, v in inputs.items()}
                    )["logits"].numpy()
  n = len(next(iter(dev.values())))
  picks = np.linspace(0, n - 1, min(n, examples)).astype(int)
  singles = [{k: v[i:i + 1] for k, v in dev.items()} for i in picks]
  path = os.path.join(work, os.path.basename(saved_model) + "_int8.tflite")
  litert.export_tflite(saved_model, path, seq_length=seq_length,
                       batch_size=1, quantize="dynamic_int8")
  with open(path, "rb") as f:
    interpreter = LiteRTModel(f.read(), num_threads=threads)
  result = dict(savedmodel_ms=median_ms(saved, singles, repeats),
                litert_ms=median_ms(interpreter, singles, repeats))
  batches = [{k: v[i:i + BATCH] for k, v in dev.items()}
             for i in range(0, n - n % BATCH or n, BATCH)]
  saved(batches[0])
  best = float("inf")
  for _ in range(repeats):
    start = time.perf_counter()
    for batch in batches:
      saved(batch)
    best = min(best, time.perf_counter() - start)
  result["per_s"] = sum(len(b["input_word_ids"]) for b in batches) / best
  if labels is not None:
    predicted = interpreter(dev)["logits"].argmax(-1)
    result["litert_accuracy"] = float(np.mean(predicted == labels))
  return result
