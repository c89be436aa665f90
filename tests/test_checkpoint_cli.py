"""python -m tools.convert_checkpoint and python -m tools.export_savedmodel."""

import os
import subprocess
import sys

import numpy as np
import tensorflow as tf

from albert_tf.checkpoints import converter
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.networks.albert_encoder import AlbertEncoder

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(tool, *args):
  return subprocess.run([sys.executable, "-m", f"tools.{tool}", *args],
                        cwd=_REPO, capture_output=True, text=True,
                        timeout=300, check=False)


def _pretrainer_checkpoint(tmp_path, config):
  model = AlbertPretrainer(AlbertEncoder(config))
  rng = np.random.default_rng(0)
  for v in model.weights:
    v.assign(rng.normal(0.0, 0.1, size=v.shape).astype(np.float32))
  path = str(tmp_path / "ours" / "ckpt")
  tf.train.Checkpoint(model=model).write(path)
  config_file = str(tmp_path / "albert_config.json")
  config.to_json_file(config_file)
  return model, path, config_file


def test_convert_cli_to_official_and_back_from_hf(tmp_path, tiny_config):
  model, ours, config_file = _pretrainer_checkpoint(tmp_path, tiny_config)
  official = str(tmp_path / "official" / "model.ckpt")
  result = _run("convert_checkpoint", f"--albert_config_file={config_file}",
                f"--input_checkpoint={ours}", f"--output_checkpoint={official}",
                "--output_format=official")
  assert result.returncode == 0, result.stderr
  assert "converted 32 variables" in result.stdout
  assert converter.detect_format(official) == "official"
  hf = str(tmp_path / "hf")
  converter.convert_checkpoint(tiny_config, official, hf, "huggingface")
  # A Hugging Face folder brings its own config.json.
  back = str(tmp_path / "back" / "ckpt")
  result = _run("convert_checkpoint", f"--input_checkpoint={hf}",
                f"--output_checkpoint={back}")
  assert result.returncode == 0, result.stderr
  restored = AlbertPretrainer(AlbertEncoder(tiny_config))
  converter.load_weights_into(restored, back)
  for a, b in zip(model.weights, restored.weights):
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_convert_cli_mismatch_is_one_clear_error(tmp_path, tiny_config):
  import dataclasses
  _, ours, _ = _pretrainer_checkpoint(tmp_path, tiny_config)
  wrong = str(tmp_path / "wrong.json")
  dataclasses.replace(tiny_config, vocab_size=50).to_json_file(wrong)
  result = _run("convert_checkpoint", f"--albert_config_file={wrong}",
                f"--input_checkpoint={ours}",
                f"--output_checkpoint={tmp_path / 'out' / 'ckpt'}",
                "--output_format=official")
  assert result.returncode == 1
  assert result.stderr.startswith("error: checkpoint ")
  assert "Traceback" not in result.stderr
  assert "is [97, 16], the model needs [50, 16]" in result.stderr
  assert not (tmp_path / "out").exists()
  result = _run("convert_checkpoint", f"--input_checkpoint={tmp_path}/none",
                f"--output_checkpoint={tmp_path / 'out'}")
  assert result.returncode == 1 and "--albert_config_file" in result.stderr


def test_export_cli(tmp_path, spm_model):
  from albert_tf.config import AlbertConfig
  config = AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=32)
  model, ours, config_file = _pretrainer_checkpoint(tmp_path, config)
  # From the released TF1 layout.
  official = str(tmp_path / "official" / "model.ckpt")
  converter.convert_checkpoint(config, ours, official, "official")
  export_dir = str(tmp_path / "export")
  result = _run("export_savedmodel", f"--albert_config_file={config_file}",
                f"--init_checkpoint={official}", f"--spm_model_file={spm_model}",
                f"--export_dir={export_dir}", "--with_mlm", "--seq_length=24")
  assert result.returncode == 0, result.stderr
  import tensorflow_text  # noqa: F401  (registers the preprocessor's ops)
  preprocessor = tf.saved_model.load(os.path.join(export_dir, "preprocessor"))
  encoder = tf.saved_model.load(os.path.join(export_dir, "encoder"))
  inputs = preprocessor(tf.constant(["hello world", "a number"]))
  assert inputs["input_word_ids"].shape == (2, 24)
  np.testing.assert_allclose(encoder(inputs)["pooled_output"],
                             model.encoder(inputs)["pooled_output"],
                             atol=1e-5)
  result = _run("export_savedmodel", f"--albert_config_file={config_file}",
                f"--init_checkpoint={ours}",
                f"--spm_model_file={tmp_path}/missing.model",
                f"--export_dir={tmp_path / 'export2'}", "--seq_length=24")
  assert result.returncode == 1
  assert "missing.model" in result.stderr and "Traceback" not in result.stderr
  assert not (tmp_path / "export2").exists()
