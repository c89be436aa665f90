"""EinsumDense computed as one 2-D MatMul when its equation allows."""

import tensorflow as tf
import tf_keras


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class MatMulEinsumDense(tf_keras.layers.EinsumDense):
  """`tf_keras.layers.EinsumDense`, same variables, faster on CPU.

  For a projection equation `free + contracted, contracted + kept -> free +
  kept` (MultiHeadAttention's "abc,cde->abde" and "abcd,cde->abe"), the
  input is reshaped to [rows, contracted], the kernel to [contracted, kept]
  and one MatMul computes the result. TensorFlow's CPU Einsum op, and above
  all its gradient, runs such contractions up to 1.5x slower than MatMul
  here (benchmarks/BENCHMARKS.md). Other equations use EinsumDense's einsum.
  Kernel and bias shapes, names and initialisation are EinsumDense's, so
  checkpoints are interchangeable.
  """

  def __init__(self, equation, *args, **kwargs):
    super().__init__(equation, *args, **kwargs)
    self._plan = _matmul_plan(equation)

  def call(self, inputs):
    if self._plan is None:
      return super().call(inputs)
    num_free, num_contracted = self._plan
    kernel_shape = tf.shape(self.kernel)
    contracted = tf.reduce_prod(kernel_shape[:num_contracted])
    rows = tf.reshape(inputs, [-1, contracted])
    kernel = tf.reshape(self.kernel, [contracted, -1])
    outputs = tf.matmul(rows, kernel)
    outputs = tf.reshape(outputs, tf.concat(
        [tf.shape(inputs)[:num_free], kernel_shape[num_contracted:]], 0))
    if self.bias is not None:
      outputs += self.bias
    if self.activation is not None:
      outputs = self.activation(outputs)
    return outputs


def _matmul_plan(equation: str):
  """(num_free, num_contracted) if `equation` is a flattenable projection.

  "abc,cde->abde" -> (2, 1); "abcd,cde->abe" -> (2, 2); None otherwise.
  """
  try:
    operands, output = equation.replace(" ", "").split("->")
    lhs, kernel = operands.split(",")
  except ValueError:
    return None
  if "." in equation:
    return None
  contracted = "".join(c for c in lhs if c in kernel and c not in output)
  free = lhs[:len(lhs) - len(contracted)]
  kept = kernel[len(contracted):]
  if (not contracted or lhs != free + contracted
      or not kernel.startswith(contracted) or output != free + kept
      or set(free) & set(kernel)):
    return None
  return len(free), len(contracted)
