"""run_ner's settings: Hugging Face's recipe from the training file, the
derived --doc_stride, the flag checks; all before TensorFlow loads."""

import os
import subprocess
import sys

import pytest

from albert_common.errors import UserInputError
from albert_tf.training.finetuning import ner_settings
from albert_tf.training.finetuning.params import FinetuningParams

ROOT = os.path.abspath(os.path.join(__file__, "../../../../.."))


def _params(**kwargs):
  return FinetuningParams.from_flat(**dict(
      dict(output_dir="out", albert_config_file="c.json", do_train=True),
      **kwargs))


def test_the_recipe_is_three_epochs_of_the_training_file():
  options = ner_settings.NerOptions(train_file="t.txt")
  recipe = ner_settings.ner_recipe(_params(train_batch_size=32), options, 100)
  assert recipe == dict(learning_rate=5e-5, train_batch_size=32,
                        max_seq_length=128, train_step=12, warmup_step=1,
                        save_checkpoints_steps=4)
  # Your batch size and epochs count; warmup follows your --train_step.
  recipe = ner_settings.ner_recipe(
      _params(train_batch_size=10, train_step=200),
      ner_settings.NerOptions(num_train_epochs=2.5), 100,
      user_set={"train_batch_size", "train_step"})
  assert (recipe["train_step"], recipe["warmup_step"],
          recipe["save_checkpoints_steps"]) == (25, 20, 10)
  assert "train_step" not in ner_settings.ner_recipe(
      _params(do_train=False, do_eval=True), options, 100)


def test_doc_stride_is_derived_only_when_unset():
  options = ner_settings.NerOptions()
  short = _params(max_seq_length=32)
  assert ner_settings.derive_ner(short, options, set()).doc_stride == 15
  assert ner_settings.derive_ner(short, options,
                                 {"doc_stride"}).doc_stride == 64
  assert ner_settings.derive_ner(_params(max_seq_length=128), options,
                                 set()).doc_stride == 64


def test_checks_name_the_flag(tmp_path):
  with pytest.raises(UserInputError, match="--do_train needs --train_file"):
    ner_settings.check_ner(_params(), ner_settings.NerOptions())
  with pytest.raises(UserInputError, match="--dev_file=.*does not exist"):
    ner_settings.check_ner(_params(do_train=False, do_eval=True),
                           ner_settings.NerOptions(dev_file="none.txt"))
  train = tmp_path / "t.txt"
  train.write_text("a O\n")
  with pytest.raises(UserInputError, match="--doc_stride must be positive"):
    ner_settings.check_ner(_params(), ner_settings.NerOptions(
        train_file=str(train), doc_stride=0))


def test_run_ner_checks_its_files_before_tensorflow():
  code = ("import sys\n"
          "import albert_tf.training.finetuning.ner_settings\n"
          "import data_pipeline.tasks.ner.task_files\n"
          "import data_pipeline.tasks.ner.features\n"
          "import data_pipeline.tasks.ner.entity_spans\n"
          "import tools.run_ner\n"
          "assert 'tensorflow' not in sys.modules\n")
  subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True,
                 env=dict(os.environ, PYTHONPATH=ROOT), timeout=60)
