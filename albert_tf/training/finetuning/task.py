"""What a fine-tuning task gives the generic runner (GLUE, SQuAD, RACE, ...).

A task describes itself with a `FinetuningTask`: how to build its model on
an encoder, its per-example loss, its training data and how to evaluate on
its dev set; albert_tf.training.finetuning.runner does the rest, the same
for every task.
"""

import dataclasses
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf
import tf_keras

from albert_tf.config import AlbertConfig
from data_pipeline.tasks import length_buckets

# (features, labels) -> model outputs dict -> per-example loss [batch].
LossFn = Callable[[Any, Dict[str, tf.Tensor]], tf.Tensor]
# predict(dataset of feature dicts) -> dict of numpy arrays (concatenated).
PredictFn = Callable[[tf.data.Dataset], Dict[str, np.ndarray]]


@dataclasses.dataclass
class FinetuningTask:
  """What a task gives the runner.

  Args:
    name: for logs.
    build_model: (encoder, config) -> tf_keras.Model taking the task's feature
      dict and returning a dict of float32 outputs. `encoder` is an
      AlbertEncoder or a hub.KerasLayer of an exported encoder: call it on
      dict(input_word_ids=..., input_mask=..., input_type_ids=...). Keep it as
      `model.encoder` (warm start looks for the AlbertEncoder there).
    loss_fn: (labels, outputs) -> per-example float32 loss [batch].
    train_dataset: (global_batch_size, seed) -> tf.data.Dataset of
      (features, labels), repeated, shuffled, batched with drop_remainder.
    evaluate: (predict) -> {metric: float}; `predict(dataset)` runs the model
      over a finite dataset of feature dicts and returns its outputs as numpy
      arrays in dataset order.
    main_metric: key of `evaluate`'s result that selects the best checkpoint.
    higher_is_better: direction of main_metric.
    write_eval_outputs: (directory) -> None, optional: writes the files of
      the last `evaluate` call (predictions, say) into `output_dir`; called
      when that evaluation is the best so far, so that they always belong
      to the checkpoint in eval_results.json.
    length_buckets: the bucket lengths the task's datasets are batched by
      (data_pipeline.tasks.length_buckets); more than one: training traces its
      step once per bucket (albert_tf.training.finetuning.bucketed_steps).
    packed_training: train_dataset gives packed batches
      (data_pipeline.tasks.packing: one static shape, the model's
      `packed_call`); evaluation still runs in length_buckets.
    initialises_encoder: the task's caller sets the model's weights after
      the runner is built (distillation's student): no "random weights"
      warning without --init_checkpoint.
    head_labels: the label names of the model's outputs, in order, for a
      head with named labels (classification, multi-label, NER): an
      --init_checkpoint's head is matched to them by name. None for
      regression and label-free heads.
  """

  name: str
  build_model: Callable[[Any, AlbertConfig], tf_keras.Model]
  loss_fn: LossFn
  train_dataset: Optional[Callable[[int, Optional[int]],
                                   tf.data.Dataset]] = None
  evaluate: Optional[Callable[[PredictFn], Dict[str, float]]] = None
  main_metric: str = "accuracy"
  higher_is_better: bool = True
  write_eval_outputs: Optional[Callable[[str], None]] = None
  length_buckets: Tuple[int, ...] = ()
  packed_training: bool = False
  initialises_encoder: bool = False
  head_labels: Optional[Sequence[str]] = None


def training_batches(inputs, labels, num_examples: int,
                     buckets: Sequence[int], global_batch_size: int, seed,
                     sequence_labels: bool = False) -> tf.data.Dataset:
  """A task's `train_dataset` over in-memory arrays: (inputs, labels)
  repeated, shuffled in a buffer of up to 10,000 examples (`seed`), in full
  batches of `global_batch_size` by length bucket
  (data_pipeline.tasks.length_buckets; `sequence_labels`: one label per
  piece, cut to the bucket with the inputs), prefetched."""
  dataset = tf.data.Dataset.from_tensor_slices((inputs, labels))
  dataset = dataset.repeat().shuffle(min(num_examples, 10000), seed=seed)
  return length_buckets.batch(dataset, buckets, global_batch_size,
                              drop_remainder=True,
                              sequence_labels=sequence_labels).prefetch(2)
