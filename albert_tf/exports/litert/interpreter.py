"""Running a converted model with LiteRT's maintained interpreter.

`ai_edge_litert.interpreter` (pinned in requirements.txt), not the deprecated
`tf.lite.Interpreter`; it imports no TensorFlow, as on a device. The plain
interpreter has only the built-in kernels: a model with Flex ops fails here.
"""

from typing import Dict, List

import numpy as np


class LiteRTModel:
  """A .tflite model's `serving_default` signature, batched over examples.

  Args:
    model_content: the flatbuffer bytes.
    num_threads: the interpreter's CPU threads.

  Call with a dict of int32 arrays [n, ...] (any n): runs the fixed batch
  size of the file, padding the last batch, and returns the outputs
  concatenated to [n, ...].
  """

  def __init__(self, model_content: bytes, num_threads: int = 2):
    from ai_edge_litert.interpreter import Interpreter
    self.interpreter = Interpreter(model_content=model_content,
                                   num_threads=num_threads)
    self.runner = self.interpreter.get_signature_runner("serving_default")
    details = self.runner.get_input_details()
    self.input_shapes = {name: tuple(d["shape"])
                         for name, d in details.items()}
    self.batch_size = next(iter(self.input_shapes.values()))[0]

  def op_names(self) -> List[str]:
    """The sorted distinct op names in the model."""
    return sorted({d["op_name"] for d in self.interpreter._get_ops_details()})

  def __call__(self, inputs: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
    n = len(next(iter(inputs.values())))
    chunks = []
    for start in range(0, n, self.batch_size):
      batch = {}
      for name, shape in self.input_shapes.items():
        x = np.asarray(inputs[name][start:start + self.batch_size], np.int32)
        if len(x) < self.batch_size:  # Pad with copies of the first row.
          x = np.concatenate([x, np.repeat(x[:1], self.batch_size - len(x),
                                           axis=0)])
        batch[name] = x
      chunks.append(self.runner(**batch))
    return {name: np.concatenate([c[name] for c in chunks])[:n]
            for name in chunks[0]}
