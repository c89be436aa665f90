"""The teacher cache's fingerprint holds every setting that changes the
records: changing any one of them makes the cache stale (one line naming
the flag), an unchanged rerun reads the cached logits, and settings that
do not change the records leave it valid."""

import dataclasses

import numpy as np
import pytest

from albert_common import settings_fields
from albert_common.errors import UserInputError
from albert_tf.training.distillation import teacher_cache
from albert_tf.training.finetuning.own_data_settings import OwnDataOptions
from albert_tf.training.finetuning.params import FinetuningParams
from albert_tf.training.runtime_params import RuntimeParams


def _settings():
  own = OwnDataOptions.from_flat(train_file="train.csv", dev_file="dev.csv")
  params = FinetuningParams(runtime=RuntimeParams(output_dir="unused"),
                            max_seq_length=64)
  return own, params


def _other_value(field, value):
  """A different valid value of a leaf field."""
  if field.choices:
    return next(c for c in field.choices if c != value)
  if field.type is bool:
    return not value
  if field.type in (int, float):
    return value + 1
  if field.type is tuple:
    return tuple(value) + ("-",)
  return value + "_other"


def _expected(tmp_path, own, params):
  vocabulary = tmp_path / "vocab.model"
  if not vocabulary.exists():
    vocabulary.write_bytes(b"pieces")
  data = tmp_path / "train.csv"
  if not data.exists():
    data.write_text("id,text,label\n1,a,x\n")
  return teacher_cache.fingerprint(
      "teacher-digest", {"train": str(data)}, str(vocabulary),
      teacher_cache.record_settings(own, params))


def test_the_records_settings_are_the_own_data_fields_and_two_params():
  own, params = _settings()
  names = set(teacher_cache.record_settings(own, params))
  # The ones a review found missing, and max_seq_length of before.
  assert {"text_a_column", "text_b_column", "label_column", "input_format",
          "skip_bad_records", "label_separator", "skip_labels", "task_type",
          "do_lower_case", "max_seq_length"} <= names
  leaves = {f.name for f in settings_fields.leaf_fields(OwnDataOptions)}
  assert names == (leaves - set(teacher_cache.NOT_RECORD_SETTINGS)) | set(
      teacher_cache.RECORD_PARAMS)


def test_each_records_setting_changed_makes_the_cache_stale(tmp_path):
  own, params = _settings()
  out = str(tmp_path / "run")
  logits = {"train": np.arange(6, dtype=np.float32).reshape(3, 2)}
  teacher_cache.write_cache(out, _expected(tmp_path, own, params), logits)
  # Unchanged: a hit, the same logits.
  cached, _ = teacher_cache.read_cache(out, _expected(tmp_path, own, params))
  np.testing.assert_array_equal(cached["train"], logits["train"])
  changed = 0
  for field in settings_fields.leaf_fields(OwnDataOptions):
    if field.name in teacher_cache.NOT_RECORD_SETTINGS:
      continue
    value = teacher_cache.getattr_path(own, field.path)
    other = settings_fields.replace(
        own, **{field.name: _other_value(field, value)})
    with pytest.raises(UserInputError, match=f"--{field.name}"):
      teacher_cache.read_cache(out, _expected(tmp_path, other, params))
    changed += 1
  for name in teacher_cache.RECORD_PARAMS:
    other = dataclasses.replace(params, **{name: _other_value(
        next(f for f in settings_fields.leaf_fields(FinetuningParams)
             if f.name == name), getattr(params, name))})
    with pytest.raises(UserInputError, match=f"--{name}"):
      teacher_cache.read_cache(out, _expected(tmp_path, own, other))
    changed += 1
  assert changed >= 10
  # What does not change the records leaves the cache valid.
  other_own = settings_fields.replace(own, export_dir="export", threshold=0.7,
                                      test_file="test.csv")
  other_params = dataclasses.replace(params, learning_rate=1e-3,
                                     length_buckets="none")
  cached, _ = teacher_cache.read_cache(
      out, _expected(tmp_path, other_own, other_params))
  np.testing.assert_array_equal(cached["train"], logits["train"])


def test_a_cache_written_without_the_settings_is_stale(tmp_path):
  own, params = _settings()
  out = str(tmp_path / "run")
  old = _expected(tmp_path, own, params)
  del old["settings"]
  old["max_seq_length"] = 64  # the fingerprint of before
  teacher_cache.write_cache(out, old, {"train": np.zeros((3, 2))})
  with pytest.raises(UserInputError, match="record settings"):
    teacher_cache.read_cache(out, _expected(tmp_path, own, params))
