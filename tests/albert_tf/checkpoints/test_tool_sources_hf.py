"""Hugging Face task folders through the tools, compared with PyTorch.

transformers writes each folder itself (`AlbertFor*(config)
.save_pretrained`, spiece.model copied in); the folder alone is the
tool's --init_checkpoint:
  AlbertForQuestionAnswering -> run_squad: predictions.json is what
    PyTorch's start / end logits give; the export's token_ids signature
    gives PyTorch's logits (1e-5); an update runs from it.
  AlbertForTokenClassification -> run_ner: the export's tag logits are
    PyTorch's (1e-5), in the head's tag order; an update runs from it.
  AlbertForMaskedLM -> run_pretraining: the evaluation before any update
    has the MLM loss and accuracy of PyTorch's MLM logits on the same
    records (1e-5), and one warning says the SOP head and the pooler are
    new.
"""

import json
import logging
import math
import os

import numpy as np
import pytest

from tests.albert_tf.checkpoints import tool_sources_kit as kit
from tests.albert_tf.checkpoints.task_model_kit import torch_outputs

torch = pytest.importorskip("torch")

# Three tools, each evaluating, exporting and training: ~2 minutes.
pytestmark = pytest.mark.slow

TAGS = ["I-PER", "O", "B-LOC", "B-PER", "I-LOC", "B-ORG", "I-ORG"]


def _folder(root, model_class, spm_model, seed, **kwargs):
  folder = root / model_class
  return folder, kit.hf_folder(folder, model_class, spm_model, seed,
                               **kwargs)


def _train(tool, *args, out):
  assert kit.run_tool(tool, *args, f"--output_dir={out}", "--do_train",
                      "--train_step=1", "--warmup_step=0",
                      "--train_batch_size=4",
                      "--save_checkpoints_steps=1") == 0
  assert (out / "ckpt-1.index").exists()


def test_hf_question_answering_through_run_squad(tmp_path, spm_model,
                                                 english_corpus):
  folder, torch_model = _folder(tmp_path, "AlbertForQuestionAnswering",
                                spm_model, 3,
                                max_position_embeddings=kit.SEQ * 2)
  squad = kit.squad_files(tmp_path, english_corpus, False)
  examples, features, arrays = kit.squad_features(squad, spm_model)
  inputs = {k: arrays[k] for k in ("input_word_ids", "input_mask",
                                   "input_type_ids")}
  outputs = torch_outputs(torch_model, inputs)
  start = outputs.start_logits.numpy()
  end = outputs.end_logits.numpy()
  common = kit.squad_tool_equals(folder, squad, tmp_path, examples,
                                 features, arrays, inputs, start, end)
  _train("run_squad", *common, f"--train_file={squad}", out=tmp_path / "t")


def test_hf_token_classification_through_run_ner(tmp_path, spm_model):
  from tests.albert_tf.training.finetuning.test_task_model_sources_ner import (
    _sentences,
  )
  from tests.scripts import ner_data
  folder, torch_model = _folder(
      tmp_path, "AlbertForTokenClassification", spm_model, 5,
      max_position_embeddings=kit.SEQ * 2, num_labels=len(TAGS),
      id2label=dict(enumerate(TAGS)))
  dev = ner_data.write_conll(tmp_path / "dev.txt", _sentences())
  out, export_dir = tmp_path / "eval", tmp_path / "export"
  common = [f"--init_checkpoint={folder}", f"--dev_file={dev}",
            f"--max_seq_length={kit.SEQ * 2}", "--length_buckets=none"]
  assert kit.run_tool("run_ner", *common, f"--output_dir={out}", "--do_eval",
                      f"--export_dir={export_dir}") == 0
  assert json.loads((out / "labels.json").read_text())["labels"] == TAGS
  inputs = kit.text_ids(["the volcano is in Paris", "a bird sings"],
                        spm_model, seq=kit.SEQ * 2)
  inputs["input_type_ids"][:, 5:] = 1  # the token type embedding too
  served = kit.serving_token_ids(export_dir, inputs)
  want = torch_outputs(torch_model, inputs).logits.numpy()
  valid = inputs["input_mask"].astype(bool)
  np.testing.assert_allclose(served["tag_logits"][valid], want[valid],
                             atol=1e-5)
  _train("run_ner", *common, f"--train_file={dev}", out=tmp_path / "t")


def test_hf_masked_lm_through_run_pretraining(tmp_path, pretraining_records,
                                              caplog):
  """Step 0's evaluation (before the update) is PyTorch's MLM loss and
  accuracy on the same eval records; the SOP loss is about ln 2."""
  from data_pipeline.pretraining import reader
  from tests.albert_tf.training.pretraining.test_continued_pretraining import (
    _eval_scalars,
  )
  folder, torch_model = _folder(tmp_path, "AlbertForMaskedLM",
                                pretraining_records["spm_model"], 2,
                                max_position_embeddings=32)
  batches = list(reader.pretraining_dataset(
      pretraining_records["path"], batch_size=16, max_seq_length=32,
      max_predictions_per_seq=5, is_training=False).take(2))
  total_ce = total_correct = total_weight = 0.0
  for batch in batches:
    batch = {k: v.numpy() for k, v in batch.items()}
    logits = torch_outputs(torch_model, batch).logits.numpy()
    logits = np.take_along_axis(
        logits, batch["masked_lm_positions"][..., None], axis=1)
    log_probs = logits - np.log(np.exp(
        logits - logits.max(-1, keepdims=True)).sum(-1, keepdims=True)) - (
            logits.max(-1, keepdims=True))
    ce = -np.take_along_axis(log_probs, batch["masked_lm_ids"][..., None],
                             axis=-1)[..., 0]
    weights = batch["masked_lm_weights"]
    total_ce += float((ce * weights).sum())
    total_correct += float(((logits.argmax(-1) == batch["masked_lm_ids"]) *
                            weights).sum())
    total_weight += float(weights.sum())
  out = tmp_path / "continued"
  caplog.set_level(logging.INFO, logger="absl")
  assert kit.run_tool(
      "run_pretraining", f"--init_checkpoint={folder}",
      f"--input_file={pretraining_records['path']}",
      f"--eval_file={pretraining_records['path']}", f"--output_dir={out}",
      "--max_seq_length=32", "--max_predictions_per_seq=5",
      "--train_batch_size=16", "--eval_batch_size=16", "--max_eval_steps=2",
      "--num_train_steps=1", "--num_warmup_steps=0",
      "--save_checkpoints_steps=1", "--iterations_per_loop=1",
      "--seed=0") == 0
  start = _eval_scalars(str(out))[0]
  assert start["mlm_loss"] == pytest.approx(total_ce / total_weight,
                                            abs=1e-5)
  assert start["mlm_accuracy"] == pytest.approx(
      total_correct / total_weight, abs=1e-6)
  assert abs(start["sop_loss"] - math.log(2)) < 0.05, start
  warnings = [r.getMessage() for r in caplog.records
              if r.levelno == logging.WARNING and "init_checkpoint" in
              r.getMessage()]
  assert len(warnings) == 1, warnings
  assert "has no SOP head" in warnings[0] and "pooler" in warnings[0]
  assert os.path.exists(out / "ckpt-1.index")
