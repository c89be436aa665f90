"""The command blocks of docs/continued-pretraining.md, read from the page
and run by bash as written, from a source folder in each layout a user
downloads:

- released: a google-research/albert download, our tiny model written in
  the official TF1 layout by our converter, with no `checkpoint` state
  file, albert_config.json and 30k-clean.model;
- huggingface: config.json, model.safetensors and spiece.model, no
  albert_config.json (written by our converter: transformers' own
  AlbertForMaskedLM needs torch, which is not installed).

Only the sizes change (each replaced value must be on the page, so the test
fails when the page changes them): sequence 32 instead of 512, a few
steps, a few new pieces. The SOURCE and SPM lines are set to the folder.
tools run: create_pretraining_data, run_pretraining, extend_vocabulary,
run_classifier.
"""

import csv
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.checkpoints import converter
from albert_tf.config import AlbertConfig
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.networks.albert_encoder import AlbertEncoder
from tests.albert_tf.training.pretraining import domain_text

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "continued-pretraining.md"
TEST = "test_the_recipe_runs_as_written"
V = 2000
CONFIG = AlbertConfig(vocab_size=V, embedding_size=16, hidden_size=32,
                      num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=32)
# The page's value -> the test's (each must be on the page).
SIZES = {"--max_seq_length=512": "--max_seq_length=32",
         "--max_seq_length=128": "--max_seq_length=32",
         "--max_predictions_per_seq=20": "--max_predictions_per_seq=5",
         "--train_batch_size=512": "--train_batch_size=8",
         "--num_train_steps=10000": "--num_train_steps=4 "
                                    "--iterations_per_loop=2 "
                                    "--save_checkpoints_steps=2",
         "--num_warmup_steps=500": "--num_warmup_steps=1",
         "--new_pieces=2000": "--new_pieces=40"}


def _blocks():
  """The page's command blocks marked as run by this test."""
  text = PAGE.read_text(encoding="utf-8")
  marker = re.escape(f"*Tested by* `tests/tools/{pathlib.Path(__file__).name}"
                     f"::{TEST}`")
  return re.findall(marker + r"\n\n```sh\n(.*?)\n```", text, re.S)


def _script(block, source, spm_name):
  """The block with the test's folder and sizes."""
  lines = block.splitlines()
  assert lines[0].startswith("SOURCE=") and lines[1].startswith(
      "SPM=$SOURCE/30k-clean.model"), lines[:2]
  body = "\n".join(lines[2:])
  for page, ours in SIZES.items():
    body = body.replace(page, ours)
  return "\n".join([
      "set -euo pipefail", 'python() { "$PYTHON" "$@"; }',
      f"SOURCE={source}", f"SPM=$SOURCE/{spm_name}", body])


def _source(folder, layout, spm_model):
  """A tiny random ALBERT as a user downloads it: (folder, tokenizer name)."""
  model = AlbertPretrainer(AlbertEncoder(CONFIG))
  rng = np.random.default_rng(0)
  for v in model.weights:
    v.assign(rng.normal(0.0, 0.05, size=v.shape).astype(np.float32))
  ours = tf.train.Checkpoint(model=model).write(str(folder / "ours" / "ckpt"))
  source = folder / "albert_tiny"
  if layout == "released":
    converter.convert_checkpoint(CONFIG, ours,
                                 str(source / "model.ckpt-best"), "official")
    os.remove(source / "checkpoint")  # a download has none
    CONFIG.to_json_file(str(source / "albert_config.json"))
    shutil.copy(spm_model, source / "30k-clean.model")
    return source, "30k-clean.model"
  converter.convert_checkpoint(CONFIG, ours, str(source), "huggingface",
                               spm_model_file=spm_model)
  assert not (source / "albert_config.json").exists()
  assert {"config.json", "model.safetensors", "spiece.model"} <= set(
      os.listdir(source))
  return source, "spiece.model"


def _inputs(folder):
  """notes.txt, notes_heldout.txt and tickets/{train,dev}.csv."""
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


def _run(script, folder):
  result = subprocess.run(
      ["bash", "-c", script], cwd=folder, capture_output=True, text=True,
      timeout=1200, check=False,
      env=dict(os.environ, PYTHON=sys.executable, PYTHONPATH=str(ROOT),
               TF_CPP_MIN_LOG_LEVEL="2"))
  assert result.returncode == 0, result.stderr[-4000:]
  return result.stderr


def _ids(path):
  ids = set()
  for record in tf.data.TFRecordDataset(path):
    example = tf.train.Example.FromString(record.numpy())
    ids.update(example.features.feature["input_ids"].int64_list.value)
  return ids


def test_the_page_marks_two_blocks_and_every_size_is_on_it():
  blocks = _blocks()
  assert len(blocks) == 2
  text = "\n".join(blocks)
  for page in SIZES:
    assert page in text, page


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["released", "huggingface"])
def test_the_recipe_runs_as_written(layout, tmp_path, spm_model):
  """Recipe: records, then run_pretraining from the folder (its config read
  from it, its heads restored). End to end: extend_vocabulary from the
  folder, records with the extended tokenizer, run_pretraining from the
  extension, run_classifier from that run with an export."""
  source, spm_name = _source(tmp_path, layout, spm_model)
  _inputs(tmp_path)
  recipe, end_to_end = _blocks()

  log = _run(_script(recipe, source, spm_name), tmp_path)
  config_file = source / ("albert_config.json" if layout == "released"
                          else "config.json")
  assert f"--albert_config_file={config_file} (from --init_checkpoint)" in log
  # Our converter writes the SOP head in both layouts.
  assert (f"--init_checkpoint={source} ("
          f"{'official' if layout == 'released' else 'huggingface'} layout): "
          "restored encoder, MLM head, SOP head;") in log, log[-3000:]
  assert tf.train.latest_checkpoint(str(tmp_path / "runs" / "domain"))
  assert (tmp_path / "domain" / "eval.tfrecord").exists()

  log = _run(_script(end_to_end, source, spm_name), tmp_path)
  notes = tmp_path / "albert_notes"
  report = json.loads((notes / "vocabulary_extension.json").read_text())
  assert report["vocab_size"] == V + 40
  assert max(_ids(str(tmp_path / "notes_data" / "train.tfrecord"))) >= V
  assert json.loads((notes / "data_settings.json").read_text()) == {
      "do_lower_case": True, "tokenizer": "sentencepiece"}
  assert AlbertConfig.from_json_file(
      str(tmp_path / "runs" / "notes" / "albert_config.json")
  ).vocab_size == V + 40
  assert "--init_checkpoint=albert_notes (ours layout): restored " in log
  assert (tmp_path / "runs" / "tickets_export" / "saved_model.pb").exists()
