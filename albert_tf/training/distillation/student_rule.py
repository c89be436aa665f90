"""The student's config rule (no TensorFlow: tools.distill checks it
before importing it).

  --student_layers=k  the teacher's config with num_hidden_layers=k: the
                      same variables (share_parameters="all", k a multiple
                      of num_hidden_groups, one block per layer), so the
                      student starts as the teacher's own weights stopped
                      after k applications; nothing is new.
  --student_config    a narrower model, same vocabulary (and, for
                      attention_relation and tinybert, the same number of
                      heads), initialised from --student_init_checkpoint
                      (any layout --init_checkpoint takes); variables the
                      checkpoint lacks are left initialised and listed by
                      the warm start. Without an init checkpoint it is
                      refused: copying the teacher's matrices into other
                      shapes has no rule that keeps them meaningful.
  tinybert            the student's layers k divide the teacher's L
                      (layer_map: student layer m -> teacher layer m*L/k).
"""

import dataclasses
from typing import List, Tuple

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf.config import AlbertConfig
from albert_tf.training.distillation.settings import DistillationOptions


def student_config(teacher: AlbertConfig,
                   options: DistillationOptions) -> AlbertConfig:
  """The student's config by the rule above.

  Raises:
    UserInputError: a student the rule refuses (naming the flag).
  """
  if options.student_config and options.student_layers:
    raise UserInputError("give --student_layers (fewer applications) or "
                         "--student_config (a narrower student), not both")
  if options.student_config:
    if not file_io.exists(options.student_config):
      raise UserInputError(f"--student_config={options.student_config} "
                           "does not exist")
    config = AlbertConfig.from_json_file(options.student_config)
    if config.vocab_size != teacher.vocab_size:
      raise UserInputError(
          f"--student_config={options.student_config} has vocab_size "
          f"{config.vocab_size}, the teacher's is {teacher.vocab_size}: a "
          "student reads the teacher's vocabulary")
    if not options.student_init_checkpoint:
      raise UserInputError(
          f"--student_config={options.student_config}: give "
          "--student_init_checkpoint (the narrower student's initial "
          "weights); a randomly initialised student is not distilled here")
    if (options.intermediate_loss in ("attention_relation", "tinybert") and
        config.num_attention_heads != teacher.num_attention_heads):
      raise UserInputError(
          f"--intermediate_loss={options.intermediate_loss} needs the "
          f"teacher's {teacher.num_attention_heads} heads; --student_config "
          f"has {config.num_attention_heads} (use hidden_projection)")
    _check_layer_map(config, teacher, options)
    return config
  layers = teacher.num_hidden_layers
  k = options.student_layers
  if not 1 <= k <= layers:
    raise UserInputError(f"--student_layers={k} must be between 1 and the "
                         f"teacher's num_hidden_layers={layers}")
  if teacher.share_parameters != "all" or teacher.inner_group_num != 1 or (
      k % teacher.num_hidden_groups):
    raise UserInputError(
        f"--student_layers={k}: the teacher (share_parameters="
        f"{teacher.share_parameters}, num_hidden_groups="
        f"{teacher.num_hidden_groups}, inner_group_num="
        f"{teacher.inner_group_num}) has no k-application form; it needs "
        "share_parameters=all, inner_group_num=1 and k a multiple of the "
        "groups (or give --student_config)")
  config = dataclasses.replace(teacher, num_hidden_layers=k)
  _check_layer_map(config, teacher, options)
  return config


def layer_map(student_layers: int, teacher_layers: int
             ) -> List[Tuple[int, int]]:
  """TinyBERT's uniform mapping (Jiao et al. 2020, g(m) = m * L / k):
  [(student layer m, teacher layer g(m))] for m = 1..k, 1-based (layer 0,
  the embeddings, maps to 0). ValueError unless k divides L."""
  if student_layers < 1 or teacher_layers % student_layers:
    raise ValueError(f"{student_layers} student layers do not divide the "
                     f"teacher's {teacher_layers}")
  step = teacher_layers // student_layers
  return [(m, m * step) for m in range(1, student_layers + 1)]


def _check_layer_map(config: AlbertConfig, teacher: AlbertConfig,
                     options: DistillationOptions) -> None:
  """tinybert needs the student's layers to divide the teacher's."""
  if (options.intermediate_loss == "tinybert" and
      teacher.num_hidden_layers % config.num_hidden_layers):
    raise UserInputError(
        f"--intermediate_loss=tinybert maps student layer m to teacher "
        f"layer m*L/k: the student's {config.num_hidden_layers} layers must "
        f"divide the teacher's num_hidden_layers={teacher.num_hidden_layers}")
