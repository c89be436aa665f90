"""What a traced gradient graph holds: its matrix products, and the bytes
of the forward tensors its backward pass reads (the tensors a training step
keeps from the forward pass to the backward).

Read from a tf.function's graph before Grappler rewrites it. The forward
pass is every op the loss depends on; the backward pass is every other op
(tf.GradientTape's gradient ops, the sums of the gradients of a weight
used several times, and a recomputed block's second forward pass, which
runs inside the backward). A forward tensor the backward reads lives at
least from the forward op that makes it until the loss is computed, so
all of them are held at once at the turn from forward to backward.
Activations are the kept tensors that depend on the step's data (not the
weights' reads and reshapes); tensors that are views of another (Reshape,
Identity, ...) are counted once, as the tensor they view.
"""

import collections
from typing import Callable, Dict, Sequence

import tensorflow as tf

PRODUCTS = ("MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3",
            "Einsum")
# Ops whose output shares its input's buffer (TensorFlow forwards it).
VIEWS = ("Reshape", "Identity", "IdentityN", "ExpandDims", "Squeeze",
         "StopGradient", "Snapshot")


def products(graph: tf.Graph) -> int:
  """Matrix products (MatMul, BatchMatMul, Einsum) in the graph."""
  return sum(op.type in PRODUCTS for op in graph.get_operations())


def trace_gradient(loss_fn: Callable[[Dict[str, tf.Tensor]], tf.Tensor],
                   variables: Sequence[tf.Variable],
                   specs: Dict[str, tf.TensorSpec]):
  """(graph, loss tensor) of a tf.function computing d loss / d variables,
  the data fed as placeholders of `specs`."""

  def step(data):
    with tf.GradientTape() as tape:
      loss = loss_fn(data)
    gradients = tape.gradient(loss, variables)
    assert all(g is not None for g in gradients)
    return loss, gradients

  concrete = tf.function(step).get_concrete_function(specs)
  graph = concrete.graph
  loss = graph.outputs[0].op.inputs[0] if graph.outputs[0].op.type == (
      "Identity") else graph.outputs[0]
  return graph, loss


def _ancestors(tensor: tf.Tensor) -> set:
  seen, stack = set(), [tensor.op]
  while stack:
    op = stack.pop()
    if op in seen:
      continue
    seen.add(op)
    stack.extend(t.op for t in op.inputs)
    stack.extend(op.control_inputs)
  return seen


def _depends_on_data(forward: set) -> set:
  """The forward ops downstream of a placeholder (the step's data)."""
  data = set()
  for op in _topological(forward):
    if op.type == "Placeholder" and op.outputs[0].dtype != tf.resource:
      data.add(op)
    elif any(t.op in data for t in op.inputs):
      data.add(op)
  return data


def _topological(ops: set):
  order, done = [], set()
  for root in ops:
    stack = [(root, False)]
    while stack:
      op, expanded = stack.pop()
      if op in done:
        continue
      if expanded:
        done.add(op)
        order.append(op)
        continue
      stack.append((op, True))
      stack.extend((t.op, False) for t in op.inputs if t.op in ops
                   and t.op not in done)
  return order


def _viewed(tensor: tf.Tensor) -> tf.Tensor:
  while tensor.op.type in VIEWS:
    index = tensor.value_index if tensor.op.type == "IdentityN" else 0
    tensor = tensor.op.inputs[index]
  return tensor


def kept_bytes(graph: tf.Graph, loss: tf.Tensor) -> int:
  """Bytes of the data-dependent forward tensors the backward pass reads
  (module docstring); every shape must be static."""
  forward = _ancestors(loss)
  data = _depends_on_data(forward)
  kept = {}
  for op in graph.get_operations():
    if op in forward:
      continue
    for tensor in op.inputs:
      if tensor.op in data:
        base = _viewed(tensor)
        kept[base.name] = base
  total = collections.Counter()
  for tensor in kept.values():
    count = tensor.shape.num_elements()
    assert count is not None, f"{tensor.name} has no static shape"
    total[tensor.name] = count * tensor.dtype.size
  return sum(total.values())
