"""The command blocks of docs/continued-pretraining.md, read from the page
and run by bash as written (tests/tools/docs_commands.py), from a source
folder in each layout a user downloads:

- released: a google-research/albert download, our tiny model written in
  the official TF1 layout by our converter, with no `checkpoint` state
  file, albert_config.json and 30k-clean.model;
- huggingface: what transformers' own AlbertForMaskedLM.save_pretrained
  writes (config.json, model.safetensors; no pooler, no SOP head) and
  spiece.model, no albert_config.json.

Only the sizes change (each replaced value must be on the page, so the test
fails when the page changes them): sequence 32 instead of 512, a few
steps, a few new pieces. The SOURCE and SPM lines are set to the folder.
tools run: create_pretraining_data, run_pretraining, extend_vocabulary,
run_classifier.
"""

import json

import pytest
import tensorflow as tf

from albert_tf.config import AlbertConfig
from tests.tools import docs_commands

PAGE = "continued-pretraining.md"
TEST = "test_the_recipe_runs_as_written"
V = 2000
CONFIG = docs_commands.tiny_config(V)
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
  return docs_commands.blocks(PAGE, __file__, TEST)


def _script(block, source, spm_name):
  """The block with the test's folder and sizes."""
  assert block.splitlines()[1].startswith("SPM=$SOURCE/30k-clean.model")
  return docs_commands.script(
      block, {"SOURCE": source, "SPM": f"$SOURCE/{spm_name}"}, SIZES)


def _source(folder, layout, spm_model):
  """A tiny random ALBERT as a user downloads it: (folder, tokenizer name)."""
  source = folder / "albert_tiny"
  if layout == "released":
    docs_commands.released_folder(source, CONFIG, spm_model)
    return source, "30k-clean.model"
  docs_commands.huggingface_folder(source, CONFIG, spm_model,
                                   "AlbertForMaskedLM")
  return source, "spiece.model"


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
  extension, run_classifier from that run with an export (released only:
  it reads runs/notes, a run directory of ours from either layout)."""
  source, spm_name = _source(tmp_path, layout, spm_model)
  docs_commands.domain_inputs(tmp_path)
  recipe, end_to_end = _blocks()

  log = docs_commands.run(_script(recipe, source, spm_name), tmp_path)
  config_file = source / ("albert_config.json" if layout == "released"
                          else "config.json")
  assert f"--albert_config_file={config_file} (from --init_checkpoint)" in log
  # A download has both pretraining heads; transformers' AlbertForMaskedLM
  # has the MLM head and neither the pooler nor the SOP head.
  restored = ("official layout): restored encoder, MLM head, SOP head;"
              if layout == "released" else
              "huggingface layout): restored encoder, a fresh pooler (the "
              "source has none: the SOP head reads it), MLM head;")
  assert f"--init_checkpoint={source} ({restored}" in log, log[-3000:]
  assert tf.train.latest_checkpoint(str(tmp_path / "runs" / "domain"))
  assert (tmp_path / "domain" / "eval.tfrecord").exists()

  if layout == "huggingface":
    end_to_end = docs_commands.up_to(end_to_end, "tools.run_classifier")
  log = docs_commands.run(_script(end_to_end, source, spm_name), tmp_path)
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
  if layout == "released":
    assert (tmp_path / "runs" / "tickets_export" / "saved_model.pb").exists()

