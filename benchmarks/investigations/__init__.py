"""One-off investigations: each answered one question behind a decision and
is kept runnable, but is not a figure a user compares. Their sections sit
under BENCHMARKS.md's History.

  ablations          each pretraining-step optimisation undone (the
                     optimisation log's evidence; rerun only to re-check it)
  before_after       the step in two source trees (a refactor's regression
                     check)
  byte_identity      the same output bytes before and after a change
  iterator_teardown  tf.data autotuning's wait at the end of fit / predict
  small_matmuls      batch-1 matmul kernels, TensorFlow against ORT
  step_overhead      the fine-tuning step's fixed cost
"""
