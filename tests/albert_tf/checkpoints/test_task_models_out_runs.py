"""Task models out, the slow runs: the command line on a run dir alone, a
real fine-tuning run (run_classifier's library path) and its export, a
WordPiece export (test_task_models_out.py has the rest)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import AlbertConfig
from albert_tf.checkpoints import converter
from data_pipeline.tasks import label_list as label_list_lib
from tests.albert_tf.checkpoints.task_model_kit import CONFIG
from tests.albert_tf.checkpoints.task_model_kit import SEQ
from tests.albert_tf.checkpoints.task_model_kit import assert_round_trip
from tests.albert_tf.checkpoints.task_model_kit import build
from tests.albert_tf.checkpoints.task_model_kit import ids
from tests.albert_tf.checkpoints.task_model_kit import load_hf
from tests.albert_tf.checkpoints.task_model_kit import save_run
from tests.albert_tf.checkpoints.task_model_kit import torch_outputs
from tests.albert_tf.training.finetuning import own_data_kit

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


def run_tool(*flags):
  return subprocess.run(
      [sys.executable, "-m", "tools.convert_checkpoint", *flags],
      cwd=REPO, capture_output=True, text=True, timeout=300,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))


@pytest.mark.slow
def test_the_tool_reads_the_run_dir_alone(tmp_path):
  """Only --input_checkpoint (the run dir), --output_checkpoint and
  --output_format (huggingface, official): the config and labels come from
  the run; a squad_v2 run to huggingface is one line, exit 1, nothing
  written. (docs/checkpoints.md's commands.) The two conversions run the
  tool's main in this process (its flags, as `python -m` parses them); the
  refusal runs the command line, whose exit status and stderr it checks."""
  labels = ("b", "a")
  model = build("classifier", 2)
  run_dir = save_run(model, str(tmp_path / "run"),
                     label_list_lib.LabelList("classification", labels))
  out = str(tmp_path / "hf")
  assert own_data_kit.run_tool(
      "convert_checkpoint", f"--input_checkpoint={run_dir}",
      f"--output_checkpoint={out}", "--output_format=huggingface") == 0
  with open(os.path.join(out, "config.json")) as f:
    values = json.load(f)
  assert values["architectures"] == ["AlbertForSequenceClassification"]
  assert values["id2label"] == {"0": "b", "1": "a"}
  official = tmp_path / "official"
  assert own_data_kit.run_tool(
      "convert_checkpoint", f"--input_checkpoint={run_dir}",
      f"--output_checkpoint={official / 'model.ckpt'}",
      "--output_format=official") == 0
  assert (official / "labels.txt").read_text() == "b\na\n"
  v2 = save_run(build("squad_v2"), str(tmp_path / "v2"))
  failed = run_tool(f"--input_checkpoint={v2}",
                    f"--output_checkpoint={tmp_path / 'v2_hf'}",
                    "--output_format=huggingface")
  assert failed.returncode == 1
  assert failed.stderr.strip().count("\n") == 0, failed.stderr
  assert "cannot hold the official SQuAD v2.0 head" in failed.stderr
  assert not (tmp_path / "v2_hf").exists()


@pytest.mark.slow
def test_a_real_run_and_its_export_to_huggingface_and_official(
    tmp_path, spm_model, english_corpus):
  """run_classifier's library path (own data, 4 steps, --export_dir) writes
  the run; the run dir alone converts to Hugging Face with its tokenizer
  (the export's spiece.model, recorded in export.json) and id2label
  (labels.json, sorted by the run: fruit, music, volcano), and PyTorch gives
  the export's token_ids logits; the export converts to official with
  labels.txt."""
  from albert_tf.exports import load_saved_model
  from albert_tf.training.finetuning.own_data_settings import OwnDataOptions
  from albert_tf.training.finetuning.tasks import own_data
  from tests.albert_tf.training.finetuning import own_data_kit as kit
  lines = kit.corpus_lines(english_corpus, 80)
  train = kit.write_csv(tmp_path / "train.csv",
                        kit.classification_rows(lines[:64], 0),
                        ["text", "label"])
  dev = kit.write_csv(tmp_path / "dev.csv",
                      kit.classification_rows(lines[64:], 1),
                      ["text", "label"])
  config_file = kit.tiny_config(tmp_path / "albert_config.json")
  run_dir, export_dir = tmp_path / "run", str(tmp_path / "export")
  own_data.run_own_data(
      kit.run_settings(run_dir, config_file, spm_model, train_step=4,
                       warmup_step=1, save_checkpoints_steps=2,
                       train_batch_size=8),
      OwnDataOptions.from_flat(train_file=train, dev_file=dev,
                               export_dir=export_dir))
  config = AlbertConfig.from_json_file(config_file)
  out = str(tmp_path / "hf")
  converter.convert_checkpoint(config, str(run_dir), out, "huggingface")
  assert {"spiece.model", "config.json", "model.safetensors"} <= set(
      os.listdir(out))
  hf = load_hf("AutoModelForSequenceClassification", out)
  assert hf.config.id2label == {0: "fruit", 1: "music", 2: "volcano"}
  assert hf.config.problem_type == "single_label_classification"
  inputs = ids(3)
  inputs["input_word_ids"] = (inputs["input_word_ids"] * 17 %
                              config.vocab_size * inputs["input_mask"])
  serving = load_saved_model(export_dir).signatures["token_ids"]
  want = serving(**{k: tf.constant(v) for k, v in inputs.items()})
  np.testing.assert_allclose(torch_outputs(hf, inputs).logits.numpy(),
                             want["logits"].numpy(), atol=1e-5)
  prefix = str(tmp_path / "official" / "model.ckpt")
  line = converter.convert_checkpoint(config, export_dir, prefix, "official")
  assert "labels fruit, music, volcano" in line
  assert (tmp_path / "official" / "labels.txt").read_text() == (
      "fruit\nmusic\nvolcano\n")
  assert tf.train.load_checkpoint(prefix).get_variable_to_shape_map()[
      "output_weights"] == [3, 32]


@pytest.mark.slow
def test_an_export_converts_with_its_vocabulary_and_labels(tmp_path):
  """A classifier export (WordPiece): its weights, its vocab.txt (as
  vocab.txt + tokenizer.json) and labels.txt names, the head's order."""
  from albert_tf.exports.serving.classifier import export_classifier
  labels = ("spam", "ham")
  model = build("classifier", 2)
  config_file = str(tmp_path / "albert_config.json")
  CONFIG.to_json_file(config_file)
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] +
                             [f"w{i}" for i in range(94)]) + "\n")
  export_dir = export_classifier(model, str(tmp_path / "export"), "", labels,
                                 1, SEQ, albert_config_file=config_file,
                                 vocab_file=str(vocab))
  out = str(tmp_path / "hf")
  converter.convert_checkpoint(CONFIG, export_dir, out, "huggingface")
  assert {"vocab.txt", "tokenizer.json"} <= set(os.listdir(out))
  hf = load_hf("AutoModelForSequenceClassification", out)
  assert hf.config.id2label == {0: "spam", 1: "ham"}
  inputs = ids(3)
  np.testing.assert_allclose(torch_outputs(hf, inputs).logits.numpy(),
                             model(inputs, training=False)["logits"].numpy(),
                             atol=1e-5)
  assert_round_trip(model, out, "classifier")


@pytest.mark.slow
def test_a_real_ner_run_to_huggingface(tmp_path, spm_model):
  """run_ner's library path (3 steps): its run dir (labels.json, the tags
  of the training file) is a token classifier; AutoModelForTokenClassification
  loads it with the tags in id2label and gives our logits."""
  from albert_tf.checkpoints.task_models import task_sources
  from albert_tf.training.finetuning.ner_settings import NerOptions
  from albert_tf.training.finetuning.params import FinetuningParams
  from albert_tf.training.finetuning.tasks import ner as ner_finetuning
  from tests.scripts import ner_data
  config_file = str(tmp_path / "albert_config.json")
  config = AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=SEQ)
  config.to_json_file(config_file)
  train = ner_data.write_conll(tmp_path / "train.txt",
                               ner_data.english_sentences(40, 0))
  run_dir = str(tmp_path / "ner")
  ner_finetuning.run_ner(FinetuningParams.from_flat(
      output_dir=run_dir, spm_model_file=spm_model,
      albert_config_file=config_file, do_train=True, max_seq_length=SEQ,
      train_batch_size=8, learning_rate=1e-3, train_step=3, warmup_step=1,
      save_checkpoints_steps=3, iterations_per_loop=1, seed=3),
      NerOptions(train_file=train, doc_stride=16))
  tags = json.loads((tmp_path / "ner" / "labels.json").read_text())["labels"]
  out = str(tmp_path / "hf")
  converter.convert_checkpoint(config, run_dir, out, "huggingface",
                               spm_model_file=spm_model)
  hf = load_hf("AutoModelForTokenClassification", out)
  assert hf.config.id2label == dict(enumerate(tags))
  source = task_sources.read_task_source(task_sources.find_source(run_dir),
                                         config)
  assert source.head == "token_classifier"
  from albert_tf.models.albert_token_classifier import AlbertTokenClassifier
  from albert_tf.networks.albert_encoder import AlbertEncoder
  model = AlbertTokenClassifier(AlbertEncoder(config), len(tags))
  tf.train.Checkpoint(model=model).read(
      tf.train.latest_checkpoint(run_dir)).expect_partial()
  inputs = ids(2)
  np.testing.assert_allclose(torch_outputs(hf, inputs).logits.numpy(),
                             model(inputs, training=False)["logits"].numpy(),
                             atol=1e-5)
