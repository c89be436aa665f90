"""The distillation tests' teacher: a 2-layer classifier fine-tuned
once a test run on a crafted three-class task (every distillation test
file, in every xdist worker, reads the same one)."""

import pathlib

import pytest

from albert_tf.training.finetuning.own_data_settings import OwnDataOptions
from albert_tf.training.finetuning.tasks import own_data
from tests.albert_tf.training.finetuning import own_data_kit as kit
from tests.built_once import built_once


@pytest.fixture(scope="session")
def task(tmp_path_factory, english_corpus, spm_model):
  """{name: path} of the task's files, the teacher's run and export ("root"
  a pathlib.Path), once a run for all xdist workers (tests/built_once.py:
  the tests read the teacher, and write only in folders of their own)."""
  files = built_once(tmp_path_factory, "distill",
                     lambda root: _teacher(root, english_corpus, spm_model))
  return dict(files, root=pathlib.Path(files["root"]))


def _teacher(root, english_corpus, spm_model):
  """The task's files and the fine-tuned teacher, in the pathlib.Path
  `root`; {name: str path}."""
  lines = kit.corpus_lines(english_corpus, 700)
  columns = ("id", "text", "label")
  files = {"root": str(root), "spm": spm_model,
           "config": kit.tiny_config(root / "albert_config.json")}
  for split, part, seed in (("train", lines[:400], 1),
                            ("dev", lines[400:560], 2),
                            ("dev2", lines[560:700], 3)):
    files[split] = kit.write_csv(root / f"{split}.csv",
                                 kit.classification_rows(part, seed), columns)
  teacher_dir = root / "teacher"
  own_data.run_own_data(
      kit.run_settings(teacher_dir, files["config"], spm_model,
                       train_step=150, save_checkpoints_steps=150),
      OwnDataOptions.from_flat(train_file=files["train"],
                               dev_file=files["dev"],
                               export_dir=str(root / "teacher_export")))
  files["teacher"] = str(teacher_dir)
  files["teacher_export"] = str(root / "teacher_export")
  files["unlabeled"] = kit.write_csv(
      root / "unlabeled.csv", kit.classification_rows(lines[560:700], 3),
      ("id", "text"))
  return files

