"""tf.data options for the datasets our runners iterate.

TensorFlow 2.20's tf.data autotuner runs a model thread per iterator that
wakes after 10 ms and then doubles its period (to 60 s). Destroying the
iterator -- at the end of every Keras `fit` and `predict` -- can wait for
that thread's next wake: a `fit` whose steps took 10.9 s returned after
20.48 s, a 3.5 s `predict` after 5.1 s; a third to a half of the calls
wait (benchmarks/investigations/iterator_teardown.py). Our input pipelines are
in-memory examples through a parallel map and a prefetch, which run as fast
without the autotuner (the same steps per second, measured in that
benchmark); with it off, `num_parallel_calls=AUTOTUNE` uses every core and
prefetch buffers grow as the consumer waits, as before.
"""

import tensorflow as tf


def without_autotune_thread(dataset: tf.data.Dataset) -> tf.data.Dataset:
  """`dataset` with tf.data's autotuning model thread off (see above)."""
  options = tf.data.Options()
  options.autotune.enabled = False
  return dataset.with_options(options)
