"""--init_savedmodel must be an encoder export: every other folder a user
might give is named, with what it holds and what to pass instead, before
TensorFlow is imported or a model built."""

import os
import subprocess
import sys

import pytest

from albert_common.errors import UserInputError
from albert_tf import saved_model_inspection as inspection
from albert_tf.checkpoints import locate
from albert_tf.training.finetuning import params as finetuning_params

ROOT = os.path.abspath(os.path.join(__file__, "../../../../.."))


def test_the_signatures_are_read_without_tensorflow(fake_exports):
  assert inspection.read_signatures(fake_exports["export/preprocessor"]) == {
      "serving_default": (["sentences"], sorted(
          ["input_word_ids", "input_mask", "input_type_ids"])),
      "two_segments": (["text_a", "text_b"], sorted(
          ["input_word_ids", "input_mask", "input_type_ids"]))}
  # In a fresh interpreter, the check imports no TensorFlow.
  script = ("import sys\n"
            "from albert_tf import saved_model_inspection as inspection\n"
            f"inspection.check_encoder_savedmodel({fake_exports['export/encoder']!r}); "  # noqa: E501
            "print('tensorflow' in sys.modules)")
  result = subprocess.run([sys.executable, "-c", script], cwd=ROOT,
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=ROOT))
  assert result.stdout.strip() == "False", result.stderr[-2000:]


def _error(fake_exports, name):
  path = fake_exports[name]
  with pytest.raises(UserInputError) as raised:
    inspection.check_encoder_savedmodel(path)
  message = str(raised.value)
  assert "\n" not in message
  return message.replace(os.path.dirname(fake_exports["export"]), "R")


def test_an_encoder_export_passes(fake_exports):
  inspection.check_encoder_savedmodel(fake_exports["export/encoder"])


def test_the_wrong_folders_are_named(fake_exports):
  assert _error(fake_exports, "export/preprocessor") == (
      "--init_savedmodel=R/export/preprocessor is the preprocessor of an "
      "export (signatures: serving_default(sentences), "
      "two_segments(text_a, text_b)), not an encoder; pass R/export/encoder")
  assert _error(fake_exports, "export") == (
      "--init_savedmodel=R/export is an export folder (encoder/, "
      "preprocessor/), not a SavedModel; pass R/export/encoder")
  assert _error(fake_exports, "classifier") == (
      "--init_savedmodel=R/classifier is a fine-tuned classifier export "
      "(run_classifier --export_dir) (signatures: serving_default(text_a, "
      "text_b)), not an encoder; pass <export_dir>/encoder of "
      "tools.export_savedmodel")
  assert "is a fine-tuned SQuAD export" in _error(fake_exports, "squad")
  assert "is a fine-tuned RACE export" in _error(fake_exports, "race")
  assert _error(fake_exports, "checkpoint") == (
      "--init_savedmodel=R/checkpoint holds a checkpoint, not a SavedModel; "
      "pass it as --init_checkpoint")
  assert _error(fake_exports, "plain") == (
      "--init_savedmodel=R/plain is not a SavedModel (no saved_model.pb in "
      "it); pass <export_dir>/encoder of tools.export_savedmodel")


def test_the_finetuning_checks_run_it(fake_exports):
  params = finetuning_params.FinetuningParams.from_flat(
      output_dir="out", do_train=True,
      init_savedmodel=fake_exports["export/preprocessor"])
  with pytest.raises(UserInputError, match="preprocessor of an export"):
    finetuning_params.validate_params(params)


@pytest.mark.parametrize("name", ["export/encoder", "export"])
def test_a_savedmodel_given_as_a_checkpoint_is_named(fake_exports, name):
  with pytest.raises(UserInputError,
                     match=r"is (a SavedModel|an export), not a checkpoint "
                     r"\(fine-tuning takes an exported encoder as "
                     r"--init_savedmodel=.*export/encoder\)"):
    locate.resolve_path(fake_exports[name])


CLI_CASES = {
    "run_classifier": ("export/preprocessor", (
        "is the preprocessor of an export (signatures: "
        "serving_default(sentences), two_segments(text_a, text_b)), not an "
        "encoder; pass {export/encoder}")),
    "run_squad": ("export", (
        "is an export folder (encoder/, preprocessor/), not a "
        "SavedModel; pass {export/encoder}")),
    "run_race": ("classifier", (
        "is a fine-tuned classifier export (run_classifier "
        "--export_dir) (signatures: serving_default(text_a, text_b)), not "
        "an encoder; pass <export_dir>/encoder of tools.export_savedmodel")),
}


@pytest.mark.parametrize("tool", sorted(CLI_CASES))
def test_the_tools_give_one_line(fake_exports, tmp_path, tool):
  """Each fine-tuning tool's error, before TensorFlow is imported: one
  line, exit 1."""
  given, expected = CLI_CASES[tool]
  spm = tmp_path / "x.model"
  spm.write_bytes(b"unused: the check comes first")
  data = tmp_path / "data"
  data.mkdir()
  for split in ("train", "dev"):
    (data / f"{split}.tsv").write_text("sentence\tlabel\na b\t1\n")
  (data / "train.json").write_text('{"version": "1.1", "data": []}')
  task = {"run_classifier": ["--task_name=SST-2", f"--data_dir={data}"],
          "run_squad": [f"--train_file={data / 'train.json'}"],
          "run_race": [f"--data_dir={data}"]}[tool]
  result = subprocess.run(
      [sys.executable, "-m", f"tools.{tool}", *task,
       f"--output_dir={tmp_path / 'out'}", f"--spm_model_file={spm}",
       "--do_train", f"--init_savedmodel={fake_exports[given]}"],
      cwd=ROOT, capture_output=True, text=True, timeout=120,
      env=dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3"))
  assert result.returncode == 1, result.stderr[-3000:]
  assert "Traceback" not in result.stderr
  lines = [line for line in result.stderr.splitlines() if line.strip()]
  assert len(lines) == 1, result.stderr
  assert lines[0] == (
      f"error: --init_savedmodel={fake_exports[given]} " +
      expected.replace("{export/encoder}", fake_exports["export/encoder"]))


def test_the_vocabulary_comes_from_the_export(fake_exports, tmp_path,
                                              spm_model):
  """--init_savedmodel without --spm_model_file / --vocab_file: the
  encoder export's assets hold the vocabulary (and the config); a wrong
  folder is named before the vocabulary is missed."""
  import shutil

  from albert_tf.config import AlbertConfig
  encoder = tmp_path / "export" / "encoder"
  shutil.copytree(fake_exports["export/encoder"], encoder)
  (encoder / "assets").mkdir(exist_ok=True)
  shutil.copy(spm_model, encoder / "assets" / "albert.model")
  AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
               num_hidden_layers=2, num_attention_heads=4,
               intermediate_size=64).to_json_file(
                   str(encoder / "assets" / "albert_config.json"))
  params = finetuning_params.FinetuningParams.from_flat(
      output_dir=str(tmp_path / "out"), do_train=True,
      init_savedmodel=str(encoder))
  prepared = finetuning_params.prepare(params, require_vocabulary=True)
  assert prepared.params.spm_model_file == str(
      encoder / "assets" / "albert.model")
  assert prepared.tokenizer.encode("hello") == prepared.tokenizer.encode(
      "Hello")
  wrong = finetuning_params.FinetuningParams.from_flat(
      output_dir=str(tmp_path / "out"), do_train=True,
      init_savedmodel=fake_exports["export/preprocessor"])
  with pytest.raises(UserInputError, match="preprocessor of an export"):
    finetuning_params.prepare(wrong, require_vocabulary=True)


def test_config_and_vocabulary_come_from_the_checkpoint_folder(tmp_path,
                                                               spm_model):
  """--init_checkpoint=DIR (tools.extend_vocabulary's output) without
  --albert_config_file and a vocabulary: DIR's albert_config.json and its
  one tokenizer file; what the user gives wins; two tokenizer files are
  not guessed between."""
  import shutil

  from albert_tf.config import AlbertConfig
  folder = tmp_path / "extended"
  folder.mkdir()
  shutil.copy(spm_model, folder / "extended.model")
  AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
               num_hidden_layers=2, num_attention_heads=4,
               intermediate_size=64).to_json_file(
                   str(folder / "albert_config.json"))

  def prepare(**flags):
    return finetuning_params.prepare(
        finetuning_params.FinetuningParams.from_flat(
            output_dir=str(tmp_path / "out"), do_train=True,
            init_checkpoint=str(folder), **flags), require_vocabulary=True)

  prepared = prepare()
  assert prepared.params.albert_config_file == str(
      folder / "albert_config.json")
  assert prepared.params.spm_model_file == str(folder / "extended.model")
  assert prepared.config.vocab_size == 2000
  shutil.copy(spm_model, tmp_path / "given.model")
  given = prepare(spm_model_file=str(tmp_path / "given.model"))
  assert given.params.spm_model_file == str(tmp_path / "given.model")
  shutil.copy(spm_model, folder / "second.model")
  with pytest.raises(UserInputError, match="give --spm_model_file"):
    prepare()
