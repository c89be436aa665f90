"""Span labeler, SQuAD v2.0, multiple choice: shapes, config, structure."""

import numpy as np
import tensorflow as tf
import tf_keras

from albert_tf.models.albert_multiple_choice import AlbertMultipleChoice
from albert_tf.models.albert_span_labeler import AlbertSpanLabeler
from albert_tf.models.albert_squad_v2 import AlbertSquadV2
from albert_tf.networks.albert_encoder import AlbertEncoder
from albert_tf.training.finetuning.tasks import squad as squad_finetuning


def test_span_labeler_shapes_and_config(tiny_config, make_inputs):
  model = AlbertSpanLabeler(AlbertEncoder(tiny_config))
  inputs = make_inputs(batch_size=2, seq_length=10)
  out = model(inputs)
  assert out["start_logits"].shape == (2, 10)
  assert out["end_logits"].shape == (2, 10)
  clone = AlbertSpanLabeler.from_config(model.get_config())
  assert len(clone.trainable_variables) == len(model.trainable_variables)
  # The head adds exactly one kernel and one bias.
  assert len(model.trainable_variables) == len(
      model.encoder.trainable_variables) + 2


def test_squad_v2_beam_and_training_outputs(tiny_config, make_inputs):
  model = AlbertSquadV2(AlbertEncoder(tiny_config), start_n_top=3,
                        end_n_top=2)
  inputs = make_inputs(batch_size=2, seq_length=12)
  p_mask = np.zeros((2, 12), np.int32)
  p_mask[:, 1:4] = 1
  beam = model(dict(inputs, p_mask=p_mask))
  assert beam["start_top_index"].shape == (2, 3)
  assert beam["end_top_index"].shape == (2, 6)
  assert beam["cls_logits"].shape == (2,)
  # Masked positions are never proposed.
  assert not np.isin(beam["start_top_index"].numpy(), [1, 2, 3]).any()
  assert not np.isin(beam["end_top_index"].numpy(), [1, 2, 3]).any()
  starts = beam["start_top_index"][:, 0].numpy()
  teacher = model(dict(inputs, p_mask=p_mask, start_positions=starts))
  assert teacher["start_log_probs"].shape == (2, 12)
  # With the beam's best start forced, the end log-probs agree with the beam.
  best_end = tf.reduce_max(teacher["end_log_probs"], -1).numpy()
  np.testing.assert_allclose(best_end, beam["end_top_log_probs"][:, 0],
                             rtol=1e-5, atol=1e-5)
  # The end depends on the start.
  other = model(dict(inputs, p_mask=p_mask,
                     start_positions=np.where(starts == 5, 6, 5)))
  assert not np.allclose(other["end_log_probs"], teacher["end_log_probs"])
  clone = AlbertSquadV2.from_config(model.get_config())
  assert len(clone.trainable_variables) == len(model.trainable_variables)
  loss = squad_finetuning.squad_v2_loss(
      dict(start_positions=starts, end_positions=starts,
           is_impossible=np.array([0, 1])), teacher)
  assert loss.shape == (2,) and np.isfinite(loss.numpy()).all()


def test_multiple_choice_shapes_and_shared_encoder(tiny_config, make_inputs):
  model = AlbertMultipleChoice(AlbertEncoder(tiny_config), num_choices=4)
  flat = make_inputs(batch_size=8, seq_length=10)
  inputs = {k: v.reshape(2, 4, 10) for k, v in flat.items()}
  logits = model(inputs)["logits"]
  assert logits.shape == (2, 4)
  # Each option is scored alone: the same as encoding the flat batch.
  pooled = model.encoder(flat)["pooled_output"]
  expected = model.multiple_choice(pooled, training=False)
  np.testing.assert_allclose(logits, expected, rtol=1e-5, atol=1e-6)
  clone = AlbertMultipleChoice.from_config(model.get_config())
  assert clone.num_choices == 4
  assert len(model.trainable_variables) == len(
      model.encoder.trainable_variables) + 2
  assert isinstance(model, tf_keras.Model)
