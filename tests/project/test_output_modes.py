"""What exports, conversions and fine-tuning write locally has the modes of
ordinary files and folders (0644 / 0755 under umask 022)."""

import json
import os
import random
import subprocess
import sys

import pytest
import tensorflow as tf

from albert_tf import exports
from albert_tf.checkpoints import converter
from albert_tf.training.finetuning.task_settings import GlueOptions
from albert_tf.training.finetuning.tasks import (
  classifier as classifier_finetuning,
)
from tests.project import filesystem_kit as kit

# A subprocess exporting, converting and fine-tuning: `make test-all` only.
pytestmark = pytest.mark.slow


def _modes(root):
  """{relative path: mode} of every file and folder under `root`."""
  found = {".": os.stat(root).st_mode & 0o777}
  for folder, dirs, files in os.walk(root):
    for name in dirs + files:
      path = os.path.join(folder, name)
      found[os.path.relpath(path, root)] = os.stat(path).st_mode & 0o777
  return found


def _make_local_outputs(folder, spm_model):
  """Under umask 022, writes into the local `folder` what exports,
  conversions and fine-tuning write; returns {name: output folder}."""
  old = os.umask(0o022)
  try:
    config = kit.config(vocab_size=2000)
    source = os.path.join(folder, "pretrained", "ckpt")
    tf.train.Checkpoint(model=kit.random_pretrainer(config)).write(source)
    outputs = {"export": os.path.join(folder, "export")}
    exports.export_savedmodel(config, source, spm_model, outputs["export"],
                              seq_length=kit.SEQ)
    for output_format in kit.WRITERS:
      outputs[output_format] = os.path.join(folder, output_format)
      converter.convert_checkpoint(
          config, source, outputs[output_format] + (
              "" if output_format == "huggingface" else "/model.ckpt"),
          output_format)
    single = os.path.join(folder, "single", "weights.safetensors")
    converter.convert_checkpoint(config, source, single, "huggingface")
    outputs["single"] = os.path.dirname(single)

    data_dir = os.path.join(folder, "SST-2")
    kit.write_sst2(data_dir, [f"w{i}" for i in range(50)], random.Random(0))
    config_file = os.path.join(folder, "albert_config.json")
    config.to_json_file(config_file)
    outputs["finetuning"] = os.path.join(folder, "sst2")
    outputs["classifier_export"] = os.path.join(folder, "sst2_export")
    classifier_finetuning.run_classifier(
        kit.finetuning_params(outputs["finetuning"], spm_model_file=spm_model,
                              albert_config_file=config_file,
                              init_checkpoint=source, do_predict=True),
        GlueOptions(task_name="sst-2", data_dir=data_dir,
                    export_dir=outputs["classifier_export"]))
  finally:
    os.umask(old)
  return outputs


@pytest.fixture(scope="module", autouse=True)
def local_outputs(tmp_path_factory, spm_model):
  """`_make_local_outputs` in a process of its own (this file run as a
  script); the modes test reads its result."""
  folder = str(tmp_path_factory.mktemp("local_outputs"))
  root = os.path.abspath(os.path.join(__file__, "../../.."))
  process = subprocess.Popen(
      [sys.executable, os.path.abspath(__file__), folder, spm_model],
      cwd=root, env=dict(os.environ, PYTHONPATH=root,
                         TF_CPP_MIN_LOG_LEVEL="3"),
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
  yield process
  if process.poll() is None:
    process.kill()
  process.communicate()


def test_outputs_have_ordinary_modes(local_outputs):
  stdout, stderr = local_outputs.communicate(timeout=900)
  assert local_outputs.returncode == 0, stderr[-3000:]
  outputs = json.loads(stdout.strip().splitlines()[-1])
  wrong = {}
  for name, root in outputs.items():
    modes = _modes(root)
    assert len(modes) >= 2, name
    for path, mode in modes.items():
      want = 0o755 if os.path.isdir(os.path.join(root, path)) else 0o644
      if mode != want:
        wrong[f"{name}/{path}"] = oct(mode)
  assert not wrong


if __name__ == "__main__":
  # python tests/project/test_output_modes.py FOLDER SPM_MODEL (see
  # local_outputs)
  print(json.dumps(_make_local_outputs(sys.argv[1], sys.argv[2])))
