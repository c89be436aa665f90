"""The teacher: a fine-tuned run directory of run_classifier on one's own
files, read and checked before anything is written.

Read from DIR: albert_config.json, labels.json, and the best dev
checkpoint (DIR/best/ckpt-*; else the latest DIR/ckpt-*). Its identity for
the logits cache is the SHA-256 of that checkpoint's files (the weights'
bytes), so retraining the teacher in place makes a new identity.
"""

import dataclasses
import hashlib

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf.config import AlbertConfig
from data_pipeline.tasks import label_list as label_list_lib
from data_pipeline.tasks.label_list import LabelList

BEST_DIR = "best"  # the fine-tuning runner's


@dataclasses.dataclass(frozen=True)
class TeacherRun:
  """A fine-tuned teacher.

  Attributes:
    path: the run directory (--teacher).
    config: its encoder config.
    label_list: its labels (task type, names: the logits' order).
    checkpoint: the checkpoint prefix its weights come from.
    digest: SHA-256 hex of the checkpoint's files.
  """
  path: str
  config: AlbertConfig
  label_list: LabelList
  checkpoint: str
  digest: str


def _latest(folder: str) -> str:
  """The newest ckpt-<step> prefix in folder, or ""."""
  if not file_io.isdir(folder):
    return ""
  steps = []
  for name in file_io.listdir(folder):
    stem = name[:-len(".index")] if name.endswith(".index") else ""
    if stem.startswith("ckpt-") and stem[5:].isdigit():
      steps.append(int(stem[5:]))
  return file_io.join(folder, f"ckpt-{max(steps)}") if steps else ""


def checkpoint_digest(prefix: str) -> str:
  """SHA-256 of a checkpoint's .index and data files (sorted by name)."""
  folder, stem = file_io.dirname(prefix), file_io.basename(prefix)
  digest = hashlib.sha256()
  for name in sorted(file_io.listdir(folder)):
    if name == stem + ".index" or name.startswith(stem + ".data-"):
      digest.update(name.encode())
      digest.update(file_io.read_bytes(file_io.join(folder, name)))
  return digest.hexdigest()


def read_teacher(path: str) -> TeacherRun:
  """The teacher in run directory `path`.

  Raises:
    UserInputError: not a fine-tuned run directory of one's own files.
  """
  if not path or not file_io.isdir(path):
    raise UserInputError(f"--teacher={path} is not a folder (give the "
                         "--output_dir of a run_classifier run)")
  config_file = file_io.join(path, "albert_config.json")
  labels = label_list_lib.read(path)
  checkpoint = _latest(file_io.join(path, BEST_DIR)) or _latest(path)
  if not file_io.exists(config_file) or labels is None or not checkpoint:
    raise UserInputError(
        f"--teacher={path} is not a fine-tuned run of your own files: it "
        "needs albert_config.json, labels.json and a checkpoint "
        "(run_classifier --train_file ... --output_dir)")
  if labels.task_type == "token_classification":
    raise UserInputError(f"--teacher={path} is a token classifier "
                         "(run_ner); tools.distill distils classifiers")
  return TeacherRun(path, AlbertConfig.from_json_file(config_file), labels,
                    checkpoint, checkpoint_digest(checkpoint))


def check_same_task(teacher: TeacherRun, labels: LabelList,
                    source: str) -> None:
  """UserInputError unless the run's data has the teacher's task type and
  labels (in the teacher's order)."""
  if (labels.task_type != teacher.label_list.task_type or
      tuple(labels.labels) != tuple(teacher.label_list.labels)):
    raise UserInputError(
        f"{source} gives a {labels.task_type} task with labels "
        f"{list(labels.labels)}, but --teacher={teacher.path} is "
        f"{teacher.label_list.task_type} with "
        f"{list(teacher.label_list.labels)}: distil on the teacher's task")


def build_teacher_model(teacher: TeacherRun):
  """The teacher's AlbertClassifier with its weights (float32). A
  distilled run's checkpoint (the student inside DistillationModel, an
  intermediate loss on) is read as well: a student can teach."""
  import tensorflow as tf

  from albert_tf.models.albert_classifier import AlbertClassifier
  from albert_tf.networks.albert_encoder import AlbertEncoder
  model = AlbertClassifier(AlbertEncoder(teacher.config, name="encoder"),
                           teacher.label_list.num_labels,
                           initializer_range=teacher.config.initializer_range)
  names = [name for name, _ in tf.train.list_variables(teacher.checkpoint)]
  root = model
  if any(name.startswith("model/student/") for name in names):
    root = tf.train.Checkpoint(student=model)
  tf.train.Checkpoint(model=root).restore(
      teacher.checkpoint).expect_partial().assert_existing_objects_matched()
  return model
