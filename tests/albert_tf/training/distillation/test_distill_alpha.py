"""--alpha=0 is the gold labels only: an intermediate loss adds nothing
(the weights of the run without one), --unlabeled_file is refused in one
line; and --intermediate_loss=tinybert trains a student end to end."""

import numpy as np
import pytest

from albert_common.errors import UserInputError
from albert_tf.training.distillation import teacher as teacher_lib
from tests.albert_tf.training.distillation.distill_kit import distil
from tests.albert_tf.training.distillation.distill_kit import student_weights

_SHORT = dict(train_step=3, save_checkpoints_steps=3, warmup_step=1,
              do_eval=False)


def test_alpha_zero_with_an_intermediate_loss_is_the_gold_only_run(
    task, tmp_path):
  gold = student_weights(task, _run(task, tmp_path / "gold", "none"), 3)
  kind = "attention_relation"
  weights = student_weights(task, _run(task, tmp_path / kind, kind), 3)
  assert len(weights) == len(gold)
  for a, b in zip(weights, gold):
    np.testing.assert_array_equal(a, b)
  # The runs trained: the student moved from the teacher's weights.
  teacher = teacher_lib.build_teacher_model(
      teacher_lib.read_teacher(task["teacher"])).get_weights()
  assert max(np.abs(a - b).max() for a, b in zip(gold, teacher)
             if a.shape == b.shape) > 1e-4


def _run(task, out, kind):
  distil(task, out, alpha=0.0, intermediate_loss=kind, **_SHORT)
  return out


def test_alpha_zero_with_unlabeled_records_is_refused_in_one_line(task,
                                                                  tmp_path):
  out = tmp_path / "never"
  with pytest.raises(UserInputError, match="--alpha=0 .*--unlabeled_file"):
    distil(task, out, alpha=0.0, unlabeled_file=task["unlabeled"], **_SHORT)
  assert not out.exists()


@pytest.mark.slow
def test_tinybert_trains_a_student_and_moves_it(task, tmp_path):
  """A 1-application student of the 2-layer teacher (student layer 1 ->
  teacher layer 2): the intermediate loss trains it (its weights differ
  from those of the same run with soft targets alone)."""
  tiny = student_weights(task, _tinybert(task, tmp_path / "tiny", "tinybert"),
                         3)
  soft = student_weights(task, _tinybert(task, tmp_path / "soft", "none"), 3)
  assert max(np.abs(a - b).max() for a, b in zip(tiny, soft)) > 1e-5
  assert all(np.isfinite(w).all() for w in tiny)


def _tinybert(task, out, kind):
  distil(task, out, intermediate_loss=kind, **_SHORT)
  return out
