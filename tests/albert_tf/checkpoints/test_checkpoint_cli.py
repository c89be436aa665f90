"""python -m tools.convert_checkpoint and python -m tools.export_savedmodel.

Every command runs once, in the module fixture `runs`, two processes at a
time (each pays the TensorFlow import); the tests assert on their results.
"""

import concurrent.futures
import dataclasses
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.checkpoints import converter
from albert_tf.config import AlbertConfig
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.networks.albert_encoder import AlbertEncoder

_REPO = os.path.abspath(os.path.join(__file__, "../../../.."))

# Seven tool processes (about 3 minutes on 2 cores); make test converts
# in-process (test_checkpoint_round_trips.py) and runs every tool's --help.
pytestmark = pytest.mark.slow


def _run(tool, *args):
  return subprocess.run([sys.executable, "-m", f"tools.{tool}", *args],
                        cwd=_REPO, capture_output=True, text=True,
                        timeout=300, check=False)


def _pretrainer_checkpoint(folder, config):
  model = AlbertPretrainer(AlbertEncoder(config))
  rng = np.random.default_rng(0)
  for v in model.weights:
    v.assign(rng.normal(0.0, 0.1, size=v.shape).astype(np.float32))
  path = str(folder / "ours" / "ckpt")
  tf.train.Checkpoint(model=model).write(path)
  config_file = str(folder / "albert_config.json")
  config.to_json_file(config_file)
  return model, path, config_file


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_config, spm_model):
  """{name: CompletedProcess} of every command, and the paths they used."""
  convert = tmp_path_factory.mktemp("convert")
  model, ours, config_file = _pretrainer_checkpoint(convert, tiny_config)
  wrong = str(convert / "wrong.json")
  dataclasses.replace(tiny_config, vocab_size=50).to_json_file(wrong)
  export = tmp_path_factory.mktemp("export")
  export_config = AlbertConfig(
      vocab_size=2000, embedding_size=16, hidden_size=32, num_hidden_layers=2,
      num_attention_heads=4, intermediate_size=64, max_position_embeddings=32)
  export_model, export_ours, export_config_file = _pretrainer_checkpoint(
      export, export_config)
  # Exported from the released TF1 layout.
  export_official = str(export / "official" / "model.ckpt")
  converter.convert_checkpoint(export_config, export_ours, export_official,
                               "official")
  paths = dict(convert=convert, model=model, official=str(
      convert / "official" / "model.ckpt"), hf=str(convert / "hf"),
               back=str(convert / "back" / "ckpt"), export=export,
               export_model=export_model)
  commands = {
      "to_official": ("convert_checkpoint",
                      f"--albert_config_file={config_file}",
                      f"--input_checkpoint={ours}",
                      f"--output_checkpoint={paths['official']}",
                      "--output_format=official"),
      "export": ("export_savedmodel",
                 f"--albert_config_file={export_config_file}",
                 f"--init_checkpoint={export_official}",
                 f"--spm_model_file={spm_model}",
                 f"--export_dir={export / 'export'}", "--with_mlm",
                 "--seq_length=24", "--length_buckets=16"),
      "mismatch": ("convert_checkpoint", f"--albert_config_file={wrong}",
                   f"--input_checkpoint={ours}",
                   f"--output_checkpoint={convert / 'out' / 'ckpt'}",
                   "--output_format=official"),
      "no_config": ("convert_checkpoint",
                    f"--input_checkpoint={convert}/none",
                    f"--output_checkpoint={convert / 'out2'}"),
      "export_missing_spm": ("export_savedmodel",
                             f"--albert_config_file={export_config_file}",
                             f"--init_checkpoint={export_ours}",
                             f"--spm_model_file={export}/missing.model",
                             f"--export_dir={export / 'export2'}",
                             "--seq_length=24"),
      "export_bad_buckets": ("export_savedmodel",
                             f"--albert_config_file={export_config_file}",
                             f"--init_checkpoint={export_ours}",
                             f"--spm_model_file={spm_model}",
                             f"--export_dir={export / 'export3'}",
                             "--seq_length=24", "--length_buckets=16,32"),
  }
  with concurrent.futures.ThreadPoolExecutor(2) as pool:
    futures = {name: pool.submit(_run, *command)
               for name, command in commands.items()}
    results = {"to_official": futures["to_official"].result()}
    if results["to_official"].returncode == 0:
      # A Hugging Face folder brings its own config.json.
      converter.convert_checkpoint(tiny_config, paths["official"],
                                   paths["hf"], "huggingface")
      futures["from_hf"] = pool.submit(
          _run, "convert_checkpoint", f"--input_checkpoint={paths['hf']}",
          f"--output_checkpoint={paths['back']}")
    results.update({name: f.result() for name, f in futures.items()})
  return results, paths


def test_convert_cli_to_official_and_back_from_hf(runs, tiny_config):
  results, paths = runs
  result = results["to_official"]
  assert result.returncode == 0, result.stderr
  assert "converted 32 variables" in result.stdout
  assert converter.detect_format(paths["official"]) == "official"
  result = results["from_hf"]
  assert result.returncode == 0, result.stderr
  restored = AlbertPretrainer(AlbertEncoder(tiny_config))
  converter.load_weights_into(restored, paths["back"])
  for a, b in zip(paths["model"].weights, restored.weights):
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_convert_cli_mismatch_is_one_clear_error(runs):
  results, paths = runs
  result = results["mismatch"]
  assert result.returncode == 1
  assert result.stderr.startswith("error: checkpoint ")
  assert "Traceback" not in result.stderr
  assert "is [97, 16], the model needs [50, 16]" in result.stderr
  assert not (paths["convert"] / "out").exists()
  result = results["no_config"]
  assert result.returncode == 1 and "--albert_config_file" in result.stderr


def test_export_cli(runs):
  results, paths = runs
  result = results["export"]
  assert result.returncode == 0, result.stderr
  import tensorflow_text  # noqa: F401  (registers the preprocessor's ops)
  export_dir = str(paths["export"] / "export")
  preprocessor = tf.saved_model.load(os.path.join(export_dir, "preprocessor"))
  encoder = tf.saved_model.load(os.path.join(export_dir, "encoder"))
  inputs = preprocessor(tf.constant(["hello world", "a number"]))
  assert inputs["input_word_ids"].shape == (2, 24)  # TF Hub's fixed length
  assert "length buckets 16,24" in result.stdout
  served = preprocessor.signatures["serving_default"](
      sentences=tf.constant(["hello world", "a number"]))
  assert served["input_word_ids"].shape == (2, 16)
  np.testing.assert_array_equal(served["input_word_ids"],
                                inputs["input_word_ids"][:, :16])
  np.testing.assert_allclose(
      encoder(inputs)["pooled_output"],
      paths["export_model"].encoder(inputs)["pooled_output"], atol=1e-5)
  result = results["export_missing_spm"]
  assert result.returncode == 1
  assert "missing.model" in result.stderr and "Traceback" not in result.stderr
  assert not (paths["export"] / "export2").exists()
  result = results["export_bad_buckets"]
  assert result.returncode == 1 and "Traceback" not in result.stderr
  assert [line for line in result.stderr.splitlines()
          if line.startswith("error:")] == [
              "error: --length_buckets=16,32: 32 exceeds --seq_length=24"]
  assert not (paths["export"] / "export3").exists()
