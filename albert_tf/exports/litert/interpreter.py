"""Running a converted model with LiteRT's maintained interpreter.

`ai_edge_litert.interpreter` (pinned in requirements.txt), not the deprecated
`tf.lite.Interpreter`; it imports no TensorFlow, as on a device. The plain
interpreter has only the built-in kernels: a model with Flex ops fails here.
"""

import collections
from typing import Dict, List

import numpy as np

from albert_common.encoder_inputs import INPUT_MASK

# Where a bucket's output is shorter than the full-length one along the
# sequence axis, the runner pads it back with this (logits: a masked score,
# so no padded position wins an argmax) or 0 (hidden states).
_PAD_LOGITS = -1e9


class LiteRTModel:
  """A .tflite model's signatures, batched over examples.

  Args:
    model_content: the flatbuffer bytes.
    num_threads: the interpreter's CPU threads.

  Call with a dict of int32 arrays [n, ..., seq] (any n, seq at most the
  file's longest): each batch of the file's fixed batch size (the last one
  padded) runs on the signature of the smallest sequence length that holds
  its longest example (the input_mask's sum); the file of
  `export_tflite(..., length_buckets=...)` has one per bucket
  (`serving_default` is the longest), an older file just one. The outputs
  come back concatenated to [n, ...], an output's sequence axis at the
  longest length: positions past the bucket hold -1e9 in logits and 0
  elsewhere (padding, which no task reads).
  """

  def __init__(self, model_content: bytes, num_threads: int = 2):
    from ai_edge_litert.interpreter import Interpreter
    self.interpreter = Interpreter(model_content=model_content,
                                   num_threads=num_threads)
    self.runners = {}  # sequence length -> signature runner
    for key in self.interpreter.get_signature_list():
      runner = self.interpreter.get_signature_runner(key)
      shape = runner.get_input_details()[INPUT_MASK]["shape"]
      self.runners[int(shape[-1])] = runner
    self.buckets = tuple(sorted(self.runners))
    self.seq_length = self.buckets[-1]
    self.runner = self.runners[self.seq_length]
    details = self.runner.get_input_details()
    self.input_shapes = {name: tuple(d["shape"])
                         for name, d in details.items()}
    self.batch_size = next(iter(self.input_shapes.values()))[0]
    self._full_output_shapes = {
        name: tuple(d["shape"])
        for name, d in self.runner.get_output_details().items()}
    # Calls per bucket, for tests and reports.
    self.bucket_calls = collections.Counter()

  def op_names(self) -> List[str]:
    """The sorted distinct op names in the model."""
    return sorted({d["op_name"] for d in self.interpreter._get_ops_details()})

  def bucket_for(self, input_mask: np.ndarray) -> int:
    """The smallest sequence length holding every example of the batch."""
    longest = int(np.max(np.sum(input_mask, axis=-1), initial=0))
    return next((b for b in self.buckets if b >= longest), self.seq_length)

  def __call__(self, inputs: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
    n = len(next(iter(inputs.values())))
    chunks = []
    for start in range(0, n, self.batch_size):
      batch = {}
      for name in self.input_shapes:
        x = np.asarray(inputs[name][start:start + self.batch_size], np.int32)
        if len(x) < self.batch_size:  # Pad with copies of the first row.
          x = np.concatenate([x, np.repeat(x[:1], self.batch_size - len(x),
                                           axis=0)])
        batch[name] = x
      bucket = self.bucket_for(batch[INPUT_MASK])
      self.bucket_calls[bucket] += 1
      outputs = self.runners[bucket](
          **{k: v[..., :bucket] for k, v in batch.items()})
      chunks.append({k: self._full_length(k, v) for k, v in outputs.items()})
    return {name: np.concatenate([c[name] for c in chunks])[:n]
            for name in chunks[0]}

  def _full_length(self, name: str, value: np.ndarray) -> np.ndarray:
    """A bucket's output padded to the full-length output's shape."""
    full = self._full_output_shapes[name]
    if value.shape == full:
      return value
    # A dynamic output (an early-exit loop's) reports a placeholder shape
    # before the first call: nothing to pad where the value is as large.
    pad = [(0, max(f - v, 0)) for v, f in zip(value.shape, full)]
    fill = _PAD_LOGITS if name.endswith("logits") else 0
    return np.pad(value, pad, constant_values=np.array(fill, value.dtype))
