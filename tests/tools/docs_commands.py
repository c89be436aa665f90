"""Running a docs page's command blocks as written, and the source folders
they start from, as a user downloads them.

A block is the fenced `sh` block right after a line
"*Tested by* `tests/tools/<test file>::<test>`". It runs in bash with
`python` meaning this interpreter; the test sets its leading variable lines
(`SOURCE=...`, `SPM=...`) to its own folder and shrinks the sizes: each
size it replaces must be on the page, so the test fails when the page
changes one.

Source folders:

- `released_folder`: a google-research/albert download: our tiny model in
  the official TF1 layout (written by our converter), `albert_config.json`,
  `30k-clean.model`, and no `checkpoint` state file (downloads ship none);
- `huggingface_folder`: what transformers itself saves
  (`AlbertFor*(config).save_pretrained`: `config.json`,
  `model.safetensors`) plus the tokenizer's `spiece.model`.
"""

import csv
import os
import pathlib
import re
import shutil
import subprocess
import sys

import numpy as np
import tensorflow as tf

from albert_tf.checkpoints import configs
from albert_tf.checkpoints import converter
from albert_tf.config import AlbertConfig
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.networks.albert_encoder import AlbertEncoder
from tests.albert_tf.training.pretraining import domain_text

ROOT = pathlib.Path(__file__).resolve().parents[2]


def blocks(page, test_file, test):
  """The `sh` blocks of docs/`page` marked as run by `test_file`::`test`."""
  text = (ROOT / "docs" / page).read_text(encoding="utf-8")
  marker = re.escape(f"*Tested by* `tests/tools/"
                     f"{pathlib.Path(test_file).name}::{test}`")
  return re.findall(marker + r"\n\n```sh\n(.*?)\n```", text, re.S)


def script(block, variables, sizes):
  """`block` as a bash script: its first lines, which must set exactly
  `variables` (in order), set to the test's values; each size of `sizes`
  (the page's text -> the test's) replaced."""
  lines = block.splitlines()
  names = [line.split("=", 1)[0] for line in lines[:len(variables)]]
  assert names == list(variables), lines[:len(variables)]
  body = "\n".join(lines[len(variables):])
  for page, ours in sizes.items():
    body = body.replace(page, ours)
  return "\n".join(["set -euo pipefail", 'python() { "$PYTHON" "$@"; }'] +
                   [f"{name}={value}" for name, value in variables.items()] +
                   [body])


def up_to(block, command):
  """`block`'s lines before the first that runs `python -m <command>`
  (which must be in it): for a variant of a test that shares everything
  from that command on with another variant."""
  lines = block.splitlines()
  starts = [i for i, line in enumerate(lines)
            if line.startswith(f"python -m {command} ")]
  assert starts, f"no `python -m {command}` in the block"
  return "\n".join(lines[:starts[0]])


def run(script_text, folder):
  """Runs `script_text` in bash in `folder`; returns its stderr (the
  tools' logs)."""
  result = subprocess.run(
      ["bash", "-c", script_text], cwd=folder, capture_output=True,
      text=True, timeout=1200, check=False,
      env=dict(os.environ, PYTHON=sys.executable, PYTHONPATH=str(ROOT),
               TF_CPP_MIN_LOG_LEVEL="2"))
  assert result.returncode == 0, result.stderr[-4000:]
  return result.stderr


def tiny_config(vocab_size, seq_length=32):
  return AlbertConfig(vocab_size=vocab_size, embedding_size=16,
                      hidden_size=32, num_hidden_layers=2,
                      num_attention_heads=2, intermediate_size=64,
                      max_position_embeddings=seq_length)


def released_folder(folder, config, spm_model, seed=0):
  """A released download of a tiny random ALBERT (encoder, MLM and SOP
  heads) at `folder`: model.ckpt-best.*, albert_config.json and
  30k-clean.model, no `checkpoint` file."""
  model = AlbertPretrainer(AlbertEncoder(config))
  rng = np.random.default_rng(seed)
  for v in model.weights:
    v.assign(rng.normal(0.0, 0.05, size=v.shape).astype(np.float32))
  scratch = pathlib.Path(folder).parent / f"{pathlib.Path(folder).name}_ours"
  ours = tf.train.Checkpoint(model=model).write(str(scratch / "ckpt"))
  converter.convert_checkpoint(config, ours, str(folder / "model.ckpt-best"),
                               "official")
  os.remove(folder / "checkpoint")  # a download has none
  shutil.rmtree(scratch)
  config.to_json_file(str(folder / "albert_config.json"))
  shutil.copy(spm_model, folder / "30k-clean.model")
  assert {"albert_config.json", "30k-clean.model", "model.ckpt-best.index"
          } <= set(os.listdir(folder))
  return folder


def huggingface_folder(folder, config, spm_model, model_class, seed=0,
                       **config_kwargs):
  """transformers' `model_class` (a name: "AlbertForMaskedLM", ...) of
  `config`'s sizes, random (seeded), saved by its own save_pretrained at
  `folder`, with `spm_model` as spiece.model; returns the torch model in
  eval mode."""
  import torch  # noqa: PLC0415 (only the tests that write one need it)
  import transformers  # noqa: PLC0415
  torch.manual_seed(seed)
  hf_config = transformers.AlbertConfig(**{
      **configs.config_to_huggingface(config, (model_class,)),
      **config_kwargs})
  model = getattr(transformers, model_class)(hf_config).eval()
  with torch.no_grad():  # non-zero biases, so that a lost bias shows
    for name, p in model.named_parameters():
      if name.endswith("bias"):
        p.normal_(0, 0.5)
  model.save_pretrained(folder)
  shutil.copy(spm_model, folder / "spiece.model")
  assert not (folder / "albert_config.json").exists()
  assert {"config.json", "model.safetensors", "spiece.model"} <= set(
      os.listdir(folder))
  return model


def domain_inputs(folder):
  """notes.txt, notes_heldout.txt (clinical text) and tickets/{train,dev}.csv
  (columns text, team: "cardio" or "other")."""
  domain_text.write_corpus(str(folder / "notes.txt"),
                           domain_text.clinical_sentences(300))
  domain_text.write_corpus(str(folder / "notes_heldout.txt"),
                           domain_text.clinical_sentences(60, held_out=True))
  (folder / "tickets").mkdir()
  for split, count in (("train", 48), ("dev", 16)):
    with open(folder / "tickets" / f"{split}.csv", "w", newline="") as f:
      writer = csv.writer(f)
      writer.writerow(["text", "team"])
      for line in domain_text.clinical_sentences(
          count, held_out=split == "dev"):
        writer.writerow([line, "cardio" if "cardi" in line else "other"])
