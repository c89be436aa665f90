"""Another layout's task model written to ours (convert_checkpoint
--output_format=ours), what the conversion says and records: the line names
the task head it wrote; a Hugging Face head with transformers' default
names (LABEL_0, ...) is written without names and the line and the
fine-tuning tool say where names come from; a source without a pooler gets
a new one, recorded in conversion.json, and a classifier started from the
folder starts on a fresh pooler with one warning, as from the source."""

import json
import logging
import os

import numpy as np
import pytest

from albert_common.errors import UserInputError
from albert_tf import models
from albert_tf.checkpoints import configs
from albert_tf.checkpoints import converter
from albert_tf.checkpoints import weight_loading
from albert_tf.checkpoints.task_models.task_heads import HeadRequest
from albert_tf.networks.albert_encoder import AlbertEncoder
from tests.albert_tf.checkpoints.test_task_models_in import ids
from tests.albert_tf.checkpoints.test_task_models_in import save_hf
from tests.albert_tf.checkpoints.test_task_models_in import torch_out

FRESH_POOLER = "the classifier head starts on a fresh pooler"


def _convert(folder, out):
  """convert_checkpoint of a transformers folder to ours; (config, line)."""
  config = configs.load_albert_config(str(folder / "config.json"))
  return config, converter.convert_checkpoint(config, str(folder),
                                              str(out / "ckpt"), "ours")


def test_the_line_names_the_task_head_written(tmp_path):
  """27 variables: the encoder's 23, the pooler's 2, the head's 2."""
  save_hf("AlbertForSequenceClassification", tmp_path / "hf", num_labels=3,
          id2label={0: "b", 1: "c", 2: "a"})
  _, line = _convert(tmp_path / "hf", tmp_path / "ours")
  assert line.startswith("converted 27 variables (heads: classifier) from ")
  assert "classifier head)" in line
  assert json.loads((tmp_path / "ours" / "conversion.json").read_text()) == {
      "source": str(tmp_path / "hf" / "model.safetensors"),
      "layout": "huggingface", "head": "classifier", "new": []}


def test_transformers_default_names_are_no_names(tmp_path):
  """id2label {0: LABEL_0, 1: LABEL_1} (what transformers writes when
  nobody names the labels): labels.json holds none and the line says so;
  the folder and its source each ask for --label_names in one line; a
  labels.txt beside the converted checkpoint names them (head order)."""
  torch_model = save_hf("AlbertForSequenceClassification", tmp_path / "hf",
                        num_labels=2)
  assert torch_model.config.id2label == {0: "LABEL_0", 1: "LABEL_1"}
  config, line = _convert(tmp_path / "hf", tmp_path / "ours")
  ours = tmp_path / "ours"
  assert json.loads((ours / "labels.json").read_text()) == {
      "task_type": "classification", "labels": []}
  assert ("(2 labels without names; the Hugging Face config.json's id2label "
          "holds only transformers' default names LABEL_0, LABEL_1, ..., "
          "which stand for none: a fine-tuning tool started from the folder "
          "needs --label_names") in line

  def load(source, labels=("neg", "pos"), **kwargs):
    model = models.AlbertClassifier(AlbertEncoder(config), 2)
    weight_loading.load_weights_into(model, str(source), head=HeadRequest(
        labels=list(labels), **kwargs))
    return model

  ask = "names none of its head's labels: give --label_names in the head's "
  for source, rest in (
      (tmp_path / "hf", "order (comma-separated); the Hugging Face "
       "config.json's id2label holds only transformers' default names "
       "LABEL_0, LABEL_1, ..., which stand for none"),
      (ours, "order (comma-separated), or put a labels.txt beside the "
       "checkpoint (one name a line)")):
    with pytest.raises(UserInputError) as error:
      load(source)
    assert str(error.value) == f"{source} {ask}{rest}"
  word, mask, types = ids(4)
  want = torch_out(torch_model, word, mask, types).logits.numpy()
  inputs = dict(input_word_ids=word, input_mask=mask, input_type_ids=types)
  named = load(tmp_path / "hf", label_names=["pos", "neg"])
  np.testing.assert_allclose(named(inputs)["logits"], want[:, [1, 0]],
                             atol=1e-5)
  (ours / "labels.txt").write_text("pos\nneg\n")
  np.testing.assert_allclose(load(ours)(inputs)["logits"], want[:, [1, 0]],
                             atol=1e-5)


def test_a_new_pooler_is_recorded_and_said_once(tmp_path, caplog):
  """transformers' AlbertForTokenClassification has no pooler: converted
  to ours, the folder records the new one; a classifier started from the
  folder (--init_head=false) starts on a fresh pooler, with the one warning
  it gets from the source itself; run_ner's head (no pooler read) gets
  none."""
  save_hf("AlbertForTokenClassification", tmp_path / "hf", num_labels=3,
          id2label={0: "O", 1: "B-X", 2: "I-X"})
  config, line = _convert(tmp_path / "hf", tmp_path / "ours")
  ours = tmp_path / "ours"
  assert "(heads: token_classifier)" in line
  assert "the source has no pooler: a new one, recorded there" in line
  assert sorted(os.listdir(ours)) == [
      "albert_config.json", "checkpoint", "ckpt.data-00000-of-00001",
      "ckpt.index", "conversion.json", "labels.json"]
  assert json.loads((ours / "conversion.json").read_text())["new"] == [
      "pooler"]
  caplog.set_level(logging.INFO, logger="absl")
  reports = {}
  for source in (tmp_path / "hf", ours):
    caplog.clear()
    model = models.AlbertClassifier(AlbertEncoder(config), 2)
    reports[source.name] = weight_loading.load_weights_into(
        model, str(source), head=HeadRequest(init_head=False))
    warned = [r for r in caplog.records if FRESH_POOLER in r.getMessage()]
    assert len(warned) == 1 and warned[0].levelno == logging.WARNING
    assert "\n" not in warned[0].getMessage()
  assert reports["ours"].restored() == reports["hf"].restored() == (
      "encoder, a fresh pooler (the source has none), a fresh classifier "
      "head")
  caplog.clear()
  tagger = models.AlbertTokenClassifier(AlbertEncoder(config), 3)
  report = weight_loading.load_weights_into(
      tagger, str(ours), head=HeadRequest(labels=["O", "B-X", "I-X"]))
  assert report.head_from and report.fresh_pooler
  assert "starts on a fresh pooler" not in caplog.text
