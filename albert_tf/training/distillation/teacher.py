"""The teacher: a fine-tuned classifier of one's own files, read and
checked before anything is written.

  run directory  (run_classifier --output_dir, or a tools.distill one)
                 albert_config.json, labels.json, and the best dev
                 checkpoint (DIR/best/ckpt-*; else the latest DIR/ckpt-*)
  export         (run_classifier --export_dir; saved_model.pb) its assets
                 albert_config.json, labels.json and vocabulary, and its
                 variables (the serving module's `model` is the classifier)

Its identity for the logits cache is the SHA-256 of the checkpoint's
files (the weights' bytes), so retraining the teacher in place makes a new
identity.
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
    vocabulary_file: an export's SentencePiece model or vocab.txt ("" for
      a run directory, which does not keep one).
  """
  path: str
  config: AlbertConfig
  label_list: LabelList
  checkpoint: str
  digest: str
  vocabulary_file: str = ""
  config_file: str = ""


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
                         "--output_dir or --export_dir of a run_classifier "
                         "run)")
  vocabulary = ""
  if file_io.exists(file_io.join(path, "saved_model.pb")):
    folder = file_io.join(path, "assets")
    checkpoint = file_io.join(path, "variables", "variables")
    names = file_io.listdir(folder) if file_io.isdir(folder) else []
    found = sorted(n for n in names if n.endswith((".model", ".txt")) and
                   n != "labels.txt")
    vocabulary = file_io.join(folder, found[0]) if found else ""
  else:
    folder = path
    checkpoint = _latest(file_io.join(path, BEST_DIR)) or _latest(path)
  config_file = file_io.join(folder, "albert_config.json")
  labels = label_list_lib.read(folder)
  if not file_io.exists(config_file) or labels is None or not checkpoint:
    raise UserInputError(
        f"--teacher={path} is not a fine-tuned classifier of your own "
        "files: it needs albert_config.json, labels.json and weights "
        "(run_classifier --train_file ... --output_dir or --export_dir)")
  if labels.task_type == "token_classification":
    raise UserInputError(f"--teacher={path} is a token classifier "
                         "(run_ner); tools.distill distils classifiers")
  return TeacherRun(path, AlbertConfig.from_json_file(config_file), labels,
                    checkpoint, checkpoint_digest(checkpoint), vocabulary,
                    config_file)


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


def check_vocabulary(teacher: TeacherRun, vocabulary_file: str) -> None:
  """UserInputError when an export teacher's vocabulary file differs from
  the run's (a run directory keeps none: the config's vocab_size is
  checked instead)."""
  if teacher.vocabulary_file and (
      file_io.read_bytes(teacher.vocabulary_file) !=
      file_io.read_bytes(vocabulary_file)):
    raise UserInputError(
        f"--spm_model_file / --vocab_file {vocabulary_file} differs from "
        f"the teacher's vocabulary {teacher.vocabulary_file}: the student "
        "reads the teacher's")


def build_teacher_model(teacher: TeacherRun):
  """The teacher's AlbertClassifier with its weights (float32). A
  distilled run's checkpoint (the student inside DistillationModel, an
  intermediate loss on) is read as well: a student can teach."""

  from albert_tf.models.albert_classifier import AlbertClassifier
  from albert_tf.networks.albert_encoder import AlbertEncoder
  model = AlbertClassifier(AlbertEncoder(teacher.config, name="encoder"),
                           teacher.label_list.num_labels,
                           initializer_range=teacher.config.initializer_range)
  restore_weights(model, teacher)
  return model


def restore_weights(model, teacher: TeacherRun, is_teacher: bool = True
                   ) -> None:
  """Loads the teacher's weights into `model`, an AlbertClassifier of the
  same variables (the teacher's, or a student with fewer applications:
  `is_teacher` False). An export's weights are checked by the teacher's
  answers (build_teacher_model, before any student is built).

  Raises:
    UserInputError: they do not fit.
  """
  import tensorflow as tf
  names = [name for name, _ in tf.train.list_variables(teacher.checkpoint)]
  root = model
  if any(name.startswith("model/student/") for name in names):
    root = tf.train.Checkpoint(student=model)
  status = tf.train.Checkpoint(model=root).restore(
      teacher.checkpoint).expect_partial()
  try:
    if teacher.vocabulary_file:  # an export: its graph is the serving one
      status.assert_nontrivial_match()
      if is_teacher:
        _check_answers_as_export(model, teacher)
    else:
      status.assert_existing_objects_matched()
  except AssertionError as e:
    raise UserInputError(
        f"--teacher={teacher.path}: its weights are not a plain "
        "classifier's (an --early_exit run?): "
        f"{str(e).splitlines()[0][:200]}") from None


def _check_answers_as_export(model, teacher: TeacherRun) -> None:
  """AssertionError unless `model` (restored from an export's variables)
  gives the export's token_ids logits on a probe batch: every variable
  was bound (the export's object graph is the serving module's, so
  Checkpoint's own matching cannot tell)."""
  import numpy as np
  import tensorflow as tf

  from albert_tf.exports import load_saved_model
  rng = np.random.default_rng(0)
  ids = rng.integers(5, teacher.config.vocab_size, size=(2, 8))
  inputs = dict(input_word_ids=tf.constant(ids, tf.int32),
                input_mask=tf.ones([2, 8], tf.int32),
                input_type_ids=tf.zeros([2, 8], tf.int32))
  served = load_saved_model(teacher.path).signatures["token_ids"](**inputs)
  ours = model(inputs, training=False)["logits"]
  if not np.allclose(served["logits"].numpy(), ours.numpy(), atol=1e-4):
    raise AssertionError("its logits differ from the export's own")
