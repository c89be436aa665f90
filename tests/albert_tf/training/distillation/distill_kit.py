"""Helpers of the distillation run tests: a run of
distillation.run_distillation on the conftest's task, and a run's student
weights."""

import os

from albert_tf.training.distillation import run as distillation
from albert_tf.training.distillation import teacher as teacher_lib
from albert_tf.training.distillation.settings import DistillationOptions
from albert_tf.training.finetuning.own_data_settings import OwnDataOptions
from tests.albert_tf.training.finetuning import own_data_kit as kit


def distil(task, output_dir, dev="dev", export_dir="", vocab_file="",
           **values):
  """tools.distill's library path on the task (a 1-application student
  unless `values` says otherwise) into output_dir."""
  distill = dict(teacher=task["teacher"], student_layers=1)
  distill.update({k: values.pop(k) for k in list(values)
                  if k in DistillationOptions.__dataclass_fields__})
  settings = dict(train_step=60, save_checkpoints_steps=60)
  settings.update(values)
  run = kit.run_settings(output_dir, os.path.join(task["teacher"],
                                                  "albert_config.json"),
                         "" if vocab_file else task["spm"], vocab_file,
                         **settings)
  return distillation.run_distillation(
      run, OwnDataOptions.from_flat(train_file=task["train"],
                                    dev_file=task[dev],
                                    export_dir=export_dir),
      DistillationOptions.from_flat(**distill))


def student_weights(task, out, step):
  """The student's weights in out/ckpt-<step>."""
  teacher = teacher_lib.read_teacher(task["teacher"])
  config = teacher.config.__class__.from_json_file(
      str(out / "albert_config.json"))
  return teacher_lib.build_teacher_model(teacher_lib.TeacherRun(
      str(out), config, teacher.label_list, str(out / f"ckpt-{step}"),
      "")).get_weights()
