"""Running an ONNX file with onnxruntime, and its dynamic int8 variant.

`OnnxModel(model, num_threads=2)` is an onnxruntime CPU session called
with a dict of int32 arrays (the inputs it takes are picked from the dict)
that returns a dict of numpy outputs by name. Its options are those a
server sets:

  num_threads   intra-op threads (inter-op: 1, sequential execution);
  spinning      True: onnxruntime's default, idle threads spin for work;
                False sets `session.intra_op.allow_spinning=0`, which costs
                a little at batch 1 on an idle machine and saves a lot on a
                shared one: a spinning pool holds its cores while waiting
                and slows 3-5x when another process takes one;
  optimization  the session's graph optimization level: "disable",
                "basic", "extended" or "all" (onnxruntime's default).

`quantize_dynamic_int8(model)` is onnxruntime.quantization.quantize_dynamic
with int8 weights per output channel (MatMul and the embedding Gathers),
activations quantized at run time.
"""

import contextlib
import logging
import os
import tempfile
from typing import Dict, Union

import numpy as np

OPTIMIZATION_LEVELS = ("disable", "basic", "extended", "all")


def session_options(num_threads: int = 2, spinning: bool = True,
                    optimization: str = "all"):
  """onnxruntime.SessionOptions as the module docstring describes."""
  import onnxruntime as ort
  levels = {"disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
            "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
            "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
            "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}
  options = ort.SessionOptions()
  options.intra_op_num_threads = num_threads
  options.inter_op_num_threads = 1
  options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
  options.graph_optimization_level = levels[optimization]
  if not spinning:
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
  options.log_severity_level = 3
  return options


class OnnxModel:
  """An ONNX model in an onnxruntime CPU session (module docstring).

  Args:
    model: the serialized model (bytes), an onnx.ModelProto or a path.
    num_threads, spinning, optimization: the session's options.
  """

  def __init__(self, model, num_threads: int = 2, spinning: bool = True,
               optimization: str = "all"):
    import onnxruntime as ort
    if hasattr(model, "SerializeToString"):
      model = model.SerializeToString()
    self.session = ort.InferenceSession(
        model, session_options(num_threads, spinning, optimization),
        providers=["CPUExecutionProvider"])
    self.input_names = [i.name for i in self.session.get_inputs()]
    self.output_names = [o.name for o in self.session.get_outputs()]

  def __call__(self, inputs: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
    feed = {name: np.asarray(inputs[name], np.int32)
            for name in self.input_names}
    return dict(zip(self.output_names, self.session.run(None, feed)))


def quantize_dynamic_int8(model: Union[bytes, "onnx.ModelProto"]) -> bytes:  # noqa: F821
  """The model with int8 weights per output channel (MatMul, Gather) and
  activations quantized at run time (onnxruntime's quantize_dynamic); a
  weight shared by several nodes is quantized once."""
  import onnx
  from onnxruntime.quantization import QuantType
  from onnxruntime.quantization import quantize_dynamic
  if isinstance(model, bytes):
    model = onnx.load_from_string(model)
  with tempfile.TemporaryDirectory() as work, _quiet_logging():
    out = os.path.join(work, "int8.onnx")
    quantize_dynamic(model, out, per_channel=True,
                     weight_type=QuantType.QInt8)
    with open(out, "rb") as f:
      return f.read()


@contextlib.contextmanager
def _quiet_logging():
  """The quantizer logs a line per tensor through the root logger; only
  its errors are shown."""
  root = logging.getLogger()
  level = root.level
  root.setLevel(logging.ERROR)
  try:
    yield
  finally:
    root.setLevel(level)
