"""The early-exit loop (networks/early_exit_encoder.py) and its model."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from albert_tf import AlbertConfig
from albert_tf import AlbertEncoder
from albert_tf.models import AlbertClassifier
from albert_tf.models import AlbertEarlyExitClassifier
from albert_tf.networks import early_exit_encoder

LAYERS = 6


def _model(num_classes, seed=3):
  """A tiny model whose per-application predictions differ between
  examples and change from layer to layer, so that exits are mixed: heads
  share a part (predictions persist) plus a per-application part, and their
  biases centre the pooled vectors of `_inputs(32)` (a random model's
  [CLS] vectors are much alike)."""
  tf_keras.utils.set_random_seed(seed)
  config = AlbertConfig(vocab_size=50, embedding_size=16, hidden_size=32,
                        num_hidden_layers=LAYERS, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=32,
                        hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0,
                        initializer_range=0.2)
  model = AlbertEarlyExitClassifier(AlbertEncoder(config), num_classes)
  rng = np.random.default_rng(seed)
  shape = model.head_kernel.shape
  kernel = 4.0 * (rng.normal(size=shape[1:]) + 0.6 * rng.normal(size=shape))
  pooled = early_exit_encoder.per_layer_pooled(
      model.encoder, _inputs(32), training=False).numpy()  # (B, L, H)
  bias = -np.einsum("lh,lhc->lc", pooled.mean(0), kernel)
  model.head_kernel.assign(kernel.astype(np.float32))
  model.head_bias.assign(bias.astype(np.float32))
  return model


def _inputs(batch, seq=16, seed=0):
  rng = np.random.default_rng(seed)
  lengths = rng.integers(3, seq + 1, batch)
  mask = (np.arange(seq)[None, :] < lengths[:, None]).astype(np.int32)
  word_ids = rng.integers(4, 50, (batch, seq)).astype(np.int32) * mask
  word_ids[:, 0] = 2
  return dict(input_word_ids=word_ids, input_mask=mask,
              input_type_ids=np.zeros((batch, seq), np.int32))


def reference_exit(all_logits, patience, threshold=0.0, regression=False):
  """The PABEE rule in NumPy on every application's logits [b, L, C]:
  (logits at the exit [b, C], exit layer 1..L [b])."""
  logits, layers = [], []
  for example in all_logits:
    streak, previous, exit_index = 0, None, len(example) - 1
    for j, out in enumerate(example):
      prediction = out[0] if regression else int(np.argmax(out))
      if previous is not None and (
          abs(prediction - previous) < threshold if regression
          else prediction == previous):
        streak += 1
      else:
        streak = 0
      previous = prediction
      if patience > 0 and streak >= patience:
        exit_index = j
        break
    logits.append(example[exit_index])
    layers.append(exit_index + 1)
  return np.array(logits), np.array(layers)


# The three forms of the loop: compaction with its [CLS]-first branch,
# compaction unbranched (LiteRT's), masking.
LOOPS = {"branched": dict(compact=True, branches=True),
         "unbranched": dict(compact=True, branches=False),
         "masking": dict(compact=False)}


@pytest.mark.parametrize("loop", sorted(LOOPS))
@pytest.mark.parametrize("num_classes,threshold", [(3, 0.0), (1, 0.5)])
def test_loop_equals_the_numpy_rule(num_classes, threshold, loop):
  model = _model(num_classes)
  inputs = _inputs(32)
  all_logits = model(inputs, training=False)["all_logits"].numpy()
  regression = num_classes == 1
  seen = set()
  for patience in range(LAYERS):
    want_logits, want_layers = reference_exit(all_logits, patience,
                                              threshold, regression)
    got = model.early_exit(inputs, patience, threshold, **LOOPS[loop])
    np.testing.assert_array_equal(got["exit_layer"].numpy(), want_layers)
    # The loop computes an exit application's [CLS] as a one-row query
    # (as the full-depth classifier's last block), the reference in full
    # rows: float32 rounding of other MatMul shapes, ~1e-6 of the pooled
    # vector, which these heads (32 weights of ~4 per class) scale to
    # ~1e-5 of a logit. A wrong exit layer moves a logit by ~1.
    np.testing.assert_allclose(got["logits"].numpy(), want_logits,
                               rtol=1e-5, atol=3e-5)
    seen.add(len(set(want_layers.tolist())))
  assert max(seen) >= 3  # mixed exits in one batch were exercised


def test_patience_0_is_the_full_depth_classifier():
  model = _model(3)
  inputs = _inputs(8)
  full = AlbertClassifier(model.encoder, 3)
  full.classifier.dense.kernel.assign(model.head_kernel[-1])
  full.classifier.dense.bias.assign(model.head_bias[-1])
  want = full(inputs, training=False)["logits"].numpy()
  got = model.early_exit(inputs, 0)
  np.testing.assert_allclose(got["logits"].numpy(), want, atol=1e-5)
  np.testing.assert_array_equal(got["exit_layer"].numpy(), [LAYERS] * 8)
  # The model's full-depth output (every application computed) agrees.
  np.testing.assert_allclose(
      model(inputs, training=False)["logits"].numpy(), want, atol=1e-5)


@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_an_example_exits_the_same_alone_and_in_any_batch(loop):
  model = _model(3)
  inputs = _inputs(32)
  batched = model.early_exit(inputs, 2, **LOOPS[loop])
  layers = batched["exit_layer"].numpy()
  assert len(set(layers.tolist())) >= 3
  for i in (0, 7, 31):
    alone = model.early_exit({k: v[i:i + 1] for k, v in inputs.items()}, 2,
                             **LOOPS[loop])
    assert alone["exit_layer"].numpy()[0] == layers[i]
    np.testing.assert_allclose(alone["logits"].numpy()[0],
                               batched["logits"].numpy()[i], atol=1e-5)
  shuffled = np.random.default_rng(1).permutation(32)
  mixed = model.early_exit({k: v[shuffled] for k, v in inputs.items()}, 2,
                           **LOOPS[loop])
  np.testing.assert_array_equal(mixed["exit_layer"].numpy(), layers[shuffled])


def test_the_loop_creates_no_variables_and_cuts_at_max_layers():
  model = _model(3)
  before = len(model.variables)
  got = tf.function(lambda x: model.early_exit(x, 0, max_layers=2))(
      _inputs(4))
  assert len(model.variables) == before
  np.testing.assert_array_equal(got["exit_layer"].numpy(), [2] * 4)
  all_logits = model(_inputs(4), training=False)["all_logits"].numpy()
  np.testing.assert_allclose(got["logits"].numpy(), all_logits[:, 1],
                             rtol=1e-5, atol=1e-5)


def test_pabee_loss_weighs_application_j_by_j():
  model = _model(2)
  all_logits = tf.constant(np.random.default_rng(0).normal(
      size=(4, LAYERS, 2)), tf.float32)
  labels = tf.constant([0, 1, 1, 0])
  per_layer = tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=tf.tile(labels[:, None], [1, LAYERS]), logits=all_logits)
  j = np.arange(1, LAYERS + 1)
  want = (per_layer.numpy() * j).sum(1) / j.sum()
  got = model.loss(labels, dict(all_logits=all_logits)).numpy()
  np.testing.assert_allclose(got, want, rtol=1e-6)
  # Not the plain mean over applications.
  assert not np.allclose(got, per_layer.numpy().mean(1), rtol=1e-3)


def test_unshared_layers_are_refused():
  config = AlbertConfig(vocab_size=50, embedding_size=16, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=32,
                        share_parameters="none")
  with pytest.raises(ValueError, match="share_parameters='none'"):
    AlbertEarlyExitClassifier(AlbertEncoder(config), 2)


def test_packed_rows_give_every_application_as_unpacked():
  """--pack_examples: each slot's per-application logits, the PABEE loss
  and its gradients equal those of the examples unpacked."""
  from albert_tf.models.albert_early_exit_classifier import early_exit_loss
  from albert_tf.training.finetuning.model import FinetuningTrainer
  from tests.albert_tf.training.finetuning.test_packing_finetuning import (
    _packed_batch,
  )
  packed, packed_labels, unpacked, labels, real = _packed_batch()
  tf_keras.utils.set_random_seed(1)
  config = AlbertConfig(vocab_size=100, embedding_size=16, hidden_size=32,
                        num_hidden_layers=3, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=32,
                        hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
  model = AlbertEarlyExitClassifier(AlbertEncoder(config), 3,
                                    dropout_rate=0.0)

  def loss_fn(y, outputs):
    return early_exit_loss(y, outputs, regression=False)
  trainer = FinetuningTrainer(model, loss_fn)
  context = tf.distribute.get_replica_context()
  with tf.GradientTape() as tape:
    packed_all = model.packed_call(packed, training=True)["all_logits"]
    packed_loss, _ = trainer._packed_loss(packed, packed_labels, context)  # noqa: SLF001
  packed_grads = tape.gradient(packed_loss, model.trainable_variables)
  with tf.GradientTape() as tape:
    outputs = model(unpacked, training=True)
    loss = tf.reduce_mean(loss_fn(labels, outputs))
  grads = tape.gradient(loss, model.trainable_variables)
  np.testing.assert_allclose(packed_all.numpy()[real],
                             outputs["all_logits"].numpy(), atol=1e-5)
  assert float(packed_loss) == pytest.approx(float(loss), abs=1e-6)
  for a, b in zip(packed_grads, grads):
    np.testing.assert_allclose(tf.convert_to_tensor(a).numpy(),
                               tf.convert_to_tensor(b).numpy(), atol=1e-5)


# Per row, its predicted class at each of the 6 applications, and so its
# exit at patience 2 (the same class 3 applications running): row 0 at
# application 3, row 1 at 4, row 2 at 5, row 4 at 3; rows 3 and 5 never
# settle and run to the last (6).
CRAFTED_CLASSES = np.array([[0, 0, 0, 0, 0, 0],
                            [0, 1, 1, 1, 1, 1],
                            [0, 1, 0, 0, 0, 0],
                            [0, 1, 0, 1, 0, 1],
                            [1, 1, 1, 0, 0, 0],
                            [1, 0, 1, 0, 1, 1]])
CRAFTED_EXITS = [3, 4, 5, 6, 3, 6]
# Rows not yet exited before each application: all 6 until two leave
# after application 3, one after 4, one after 5.
ROWS_LEFT = [6, 6, 6, 4, 3, 2]


def _crafted_model():
  """A tiny two-class model whose heads give CRAFTED_CLASSES on
  _inputs(6): application j's kernel solves pooled_j [6, H] @ kernel =
  +-3 logits (6 rows, H = 32: exact), so the margins do not depend on
  the random encoder."""
  model = _model(2)
  pooled = early_exit_encoder.per_layer_pooled(
      model.encoder, _inputs(6), training=False).numpy()  # (6, L, H)
  target = np.where(CRAFTED_CLASSES[..., None] == np.arange(2), 3.0, -3.0)
  kernel = np.stack([np.linalg.pinv(pooled[:, j]) @ target[:, j]
                     for j in range(LAYERS)])  # (L, H, 2)
  model.head_kernel.assign(kernel.astype(np.float32))
  model.head_bias.assign(np.zeros([LAYERS, 2], np.float32))
  return model


@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_exited_rows_leave_the_batch(loop):
  """Compaction computes each application on the rows not yet exited (a
  compaction that kept every row would give the same outputs: this
  counts the rows); masking computes the whole batch every time."""
  model = _crafted_model()
  inputs = _inputs(6)
  all_logits = model(inputs, training=False)["all_logits"].numpy()
  np.testing.assert_array_equal(all_logits.argmax(-1), CRAFTED_CLASSES)
  got = early_exit_encoder.early_exit(
      model.encoder, model.head_kernel, model.head_bias, inputs, 2,
      count_rows=True, **LOOPS[loop])
  np.testing.assert_array_equal(got["exit_layer"].numpy(), CRAFTED_EXITS)
  want = [6] * LAYERS if loop == "masking" else ROWS_LEFT
  np.testing.assert_array_equal(got["rows_computed"].numpy(), want)
