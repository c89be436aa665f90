"""Our fine-tuned task models written out as other layouts' task models.

Run dirs are built as the fine-tuning runner saves them
(tf.train.Checkpoint(model=<task model>, optimizer=...) under
CheckpointManager, best/, albert_config.json, labels.json; task_model_kit);
then convert_checkpoint writes them, and transformers' own Auto classes load
the Hugging Face folders (no missing / unexpected / mismatched keys) and give
our logits on the same ids (1e-5, float32). The official names and shapes
are listed here independently of the library (google-research/albert's
classifier_utils.py, squad_utils.py, race_utils.py). The slow runs (the
command line, a real fine-tuning run and its export) are in
test_task_models_out_runs.py.
"""

import dataclasses
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from albert_common.errors import UserInputError
from albert_tf.checkpoints import converter
from albert_tf.checkpoints import mapping
from albert_tf.checkpoints import name_tables
from albert_tf.checkpoints.task_models import head_tables
from albert_tf.checkpoints.task_models import task_sources
from data_pipeline.tasks import label_list as label_list_lib
from tests.albert_tf.checkpoints.task_model_kit import CONFIG
from tests.albert_tf.checkpoints.task_model_kit import SEQ
from tests.albert_tf.checkpoints.task_model_kit import H
from tests.albert_tf.checkpoints.task_model_kit import assert_round_trip
from tests.albert_tf.checkpoints.task_model_kit import build
from tests.albert_tf.checkpoints.task_model_kit import ids
from tests.albert_tf.checkpoints.task_model_kit import load_hf
from tests.albert_tf.checkpoints.task_model_kit import save_run
from tests.albert_tf.checkpoints.task_model_kit import torch_outputs


@pytest.mark.parametrize("task_type,labels,problem_type", [
    ("classification", ("volcano", "fruit", "music"),
     "single_label_classification"),
    ("multi_label", ("zeta", "alpha"), "multi_label_classification"),
    ("regression", (), "regression")])
def test_sequence_classifier_to_huggingface(tmp_path, task_type, labels,
                                            problem_type):
  """AutoModelForSequenceClassification loads it whole, id2label in the
  head's order (unsorted here), and gives our logits."""
  num_labels = len(labels) or 1
  model = build("classifier", num_labels)
  run_dir = save_run(model, str(tmp_path / "run"),
                     label_list_lib.LabelList(task_type, labels))
  out = str(tmp_path / "hf")
  line = converter.convert_checkpoint(CONFIG, run_dir, out, "huggingface")
  assert "classifier head" in line and "AlbertForSequenceClassification" in (
      line)
  hf = load_hf("AutoModelForSequenceClassification", out)
  assert type(hf).__name__ == "AlbertForSequenceClassification"
  assert hf.config.problem_type == problem_type
  assert hf.config.num_labels == num_labels
  if labels:
    assert hf.config.id2label == dict(enumerate(labels))
    assert hf.config.label2id == {n: i for i, n in enumerate(labels)}
  inputs = ids(4)
  want = model(inputs, training=False)["logits"].numpy()
  got = torch_outputs(hf, inputs).logits.numpy()
  assert got.shape == (4, num_labels)
  np.testing.assert_allclose(got, want, atol=1e-5)
  assert_round_trip(model, out, "classifier")


def test_span_to_huggingface_question_answering(tmp_path):
  model = build("span")
  run_dir = save_run(model, str(tmp_path / "run"))
  out = str(tmp_path / "hf")
  converter.convert_checkpoint(CONFIG, run_dir, out, "huggingface")
  hf = load_hf("AutoModelForQuestionAnswering", out)
  inputs = ids(3)
  want = model(inputs, training=False)
  got = torch_outputs(hf, inputs)
  np.testing.assert_allclose(got.start_logits.numpy(),
                             want["start_logits"].numpy(), atol=1e-5)
  np.testing.assert_allclose(got.end_logits.numpy(),
                             want["end_logits"].numpy(), atol=1e-5)
  assert "albert.pooler.weight" not in json.dumps(
      sorted(hf.state_dict()))  # transformers' QA class has none
  assert_round_trip(model, out, "span")


def test_token_classifier_to_huggingface(tmp_path):
  tags = ("O", "B-PER", "I-PER", "B-LOC", "I-LOC")  # not sorted
  model = build("token_classifier", len(tags))
  run_dir = save_run(model, str(tmp_path / "run"), label_list_lib.LabelList(
      "token_classification", tags, scheme="IOB2"))
  out = str(tmp_path / "hf")
  converter.convert_checkpoint(CONFIG, run_dir, out, "huggingface")
  hf = load_hf("AutoModelForTokenClassification", out)
  assert hf.config.id2label == dict(enumerate(tags))
  inputs = ids(3)
  want = model(inputs, training=False)["logits"].numpy()
  got = torch_outputs(hf, inputs).logits.numpy()
  assert got.shape == (3, SEQ, len(tags))
  np.testing.assert_allclose(got, want, atol=1e-5)
  assert_round_trip(model, out, "token_classifier")


def test_multiple_choice_to_huggingface(tmp_path):
  model = build("multiple_choice")
  run_dir = save_run(model, str(tmp_path / "run"))
  out = str(tmp_path / "hf")
  converter.convert_checkpoint(CONFIG, run_dir, out, "huggingface")
  hf = load_hf("AutoModelForMultipleChoice", out)
  inputs = ids(2, choices=3)
  want = model(inputs, training=False)["logits"].numpy()
  got = torch_outputs(hf, inputs).logits.numpy()
  assert got.shape == (2, 3)
  np.testing.assert_allclose(got, want, atol=1e-5)
  assert_round_trip(model, out, "multiple_choice")


OFFICIAL_HEADS = {  # kind -> the official scripts' names -> shapes (C = 3)
    "classifier": {"output_weights": [3, H], "output_bias": [3]},
    "span": {"cls/squad/output_weights": [2, H],
             "cls/squad/output_bias": [2]},
    "multiple_choice": {"output_weights": [1, H], "output_bias": [1]},
    "squad_v2": {
        "start_logits/dense/kernel": [H, 1], "start_logits/dense/bias": [1],
        "end_logits/dense_0/kernel": [2 * H, H],
        "end_logits/dense_0/bias": [H],
        "end_logits/LayerNorm/gamma": [H], "end_logits/LayerNorm/beta": [H],
        "end_logits/dense_1/kernel": [H, 1], "end_logits/dense_1/bias": [1],
        "answer_class/dense_0/kernel": [2 * H, H],
        "answer_class/dense_0/bias": [H],
        "answer_class/dense_1/kernel": [H, 1]},
}


@pytest.mark.parametrize("kind", sorted(OFFICIAL_HEADS))
def test_task_model_to_official(tmp_path, kind):
  """The official scripts' names and shapes; the arrays read back are
  ours exactly; labels.txt lists a classifier's names in the head's order."""
  from albert_tf.checkpoints import model_variables
  labels = ("not_entailment", "entailment", "contradiction")
  model = build(kind, 3)
  run_dir = save_run(model, str(tmp_path / "run"),
                     label_list_lib.LabelList("classification", labels)
                     if kind == "classifier" else None)
  prefix = str(tmp_path / "official" / "model.ckpt")
  converter.convert_checkpoint(CONFIG, run_dir, prefix, "official")
  reader = tf.train.load_checkpoint(prefix)
  stored = reader.get_variable_to_shape_map()
  heads = {n: s for n, s in stored.items() if not n.startswith("bert/")}
  assert heads == OFFICIAL_HEADS[kind]
  assert "bert/pooler/dense/kernel" in stored
  ours = model_variables.canonical_arrays(model)
  table = (name_tables.official_table(CONFIG) +
           head_tables.head_table("official", kind))
  shapes = dict(name_tables.our_shapes(CONFIG))
  shapes.update(head_tables.head_shapes(kind, H, 3))
  back = mapping.map_to_ours({n: reader.get_tensor(n) for n in stored},
                             table, shapes, source_name=prefix,
                             layout="official")
  assert set(back) == set(ours)
  for name, array in ours.items():
    np.testing.assert_array_equal(back[name], array, err_msg=name)
  if kind in ("classifier", "span"):  # [out, in]: our kernel transposed
    weights = [n for n in heads if n.endswith("output_weights")][0]
    np.testing.assert_array_equal(reader.get_tensor(weights),
                                  ours[f"{kind}/dense/kernel"].T)
  labels_file = tmp_path / "official" / "labels.txt"
  if kind == "classifier":
    assert labels_file.read_text() == "".join(f"{n}\n" for n in labels)
  else:
    assert not labels_file.exists()


def test_inexpressible_heads_are_refused_before_writing(tmp_path):
  """The official v2 head has no Hugging Face class; a bare .safetensors
  file has no config for a task model; the official scripts have no token
  classifier: one line each, nothing written."""
  run_dir = save_run(build("squad_v2"), str(tmp_path / "v2"))
  out = tmp_path / "hf"
  with pytest.raises(UserInputError, match="huggingface layout cannot hold "
                     "the official SQuAD v2.0 head"):
    converter.convert_checkpoint(CONFIG, run_dir, str(out), "huggingface")
  assert not out.exists()
  with pytest.raises(UserInputError, match="a task model is a folder"):
    converter.convert_checkpoint(CONFIG, save_run(build("span"), str(
        tmp_path / "span")), str(out / "model.safetensors"), "huggingface")
  assert not out.exists()
  run_dir = save_run(build("token_classifier", 3), str(tmp_path / "ner"),
                     label_list_lib.LabelList("token_classification",
                                              ("O", "B-X", "I-X")))
  with pytest.raises(UserInputError, match="official layout cannot hold a "
                     "token classifier"):
    converter.convert_checkpoint(CONFIG, run_dir, str(out / "model.ckpt"),
                                 "official")
  assert not out.exists()


def test_regression_to_official_and_multi_label_refused(tmp_path):
  """A regression head is run_classifier's STS-B head (output_weights
  [1, H], no labels.txt); a multi-label head has no official form (its
  run_classifier scores a softmax): one line, nothing written."""
  run_dir = save_run(build("classifier", 1), str(tmp_path / "sts"),
                     label_list_lib.LabelList("regression"))
  prefix = tmp_path / "official" / "model.ckpt"
  converter.convert_checkpoint(CONFIG, run_dir, str(prefix), "official")
  stored = tf.train.load_checkpoint(str(prefix)).get_variable_to_shape_map()
  assert stored["output_weights"] == [1, H]
  assert not (tmp_path / "official" / "labels.txt").exists()
  run_dir = save_run(build("classifier", 2), str(tmp_path / "multi"),
                     label_list_lib.LabelList("multi_label", ("x", "y")))
  out = tmp_path / "multi_official"
  with pytest.raises(UserInputError, match="official layout cannot hold one"):
    converter.convert_checkpoint(CONFIG, run_dir, str(out / "model.ckpt"),
                                 "official")
  assert not out.exists()


@pytest.mark.parametrize("num_labels", [3, 1])
def test_a_run_without_label_names(tmp_path, num_labels):
  """A GLUE run records no labels.json (and did not export): Hugging Face's
  own LABEL_<i> names; one output is STS-B's regression head."""
  run_dir = save_run(build("classifier", num_labels), str(tmp_path / "run"))
  out = str(tmp_path / "hf")
  line = converter.convert_checkpoint(CONFIG, run_dir, out, "huggingface")
  hf = load_hf("AutoModelForSequenceClassification", out)
  if num_labels == 1:
    assert "regression" in line
    assert hf.config.problem_type == "regression"
  else:
    assert "3 unnamed labels" in line
    assert hf.config.problem_type == "single_label_classification"
  assert hf.config.id2label == {i: f"LABEL_{i}" for i in range(num_labels)}


def test_a_two_label_classifier_without_dropout_is_no_span_head(tmp_path):
  """[H, 2] and no dropout RNG (rate 0) as a span head has: the dropout
  layer still tells the classifier."""
  run_dir = save_run(build("classifier", 2, dropout_rate=0.0),
                     str(tmp_path / "run"))
  source = task_sources.read_task_source(task_sources.find_source(run_dir),
                                         CONFIG)
  assert (source.head, source.num_labels) == ("classifier", 2)


def test_labels_or_a_config_that_disagree_with_the_run_are_refused(
    tmp_path):
  run_dir = save_run(build("classifier", 3), str(tmp_path / "run"),
                     label_list_lib.LabelList("classification", ("a", "b")))
  with pytest.raises(UserInputError, match="head has 3 outputs but the "
                     "run's labels"):
    converter.convert_checkpoint(CONFIG, run_dir, str(tmp_path / "hf"),
                                 "huggingface")
  exact = dataclasses.replace(CONFIG, hidden_act="gelu_exact")
  with pytest.raises(UserInputError, match="hidden_act: run 'gelu', model "
                     "'gelu_exact'"):
    converter.convert_checkpoint(exact, run_dir, str(tmp_path / "hf"),
                                 "huggingface")
  assert not (tmp_path / "hf").exists()


def test_a_pretraining_run_converts_as_before(tmp_path):
  """A run dir without a task head (a pretraining run) is no task source:
  its encoder and pretraining heads convert as before."""
  from albert_tf.models.albert_pretrainer import AlbertPretrainer
  from albert_tf.networks.albert_encoder import AlbertEncoder
  run_dir = str(tmp_path / "pretrain")
  pretrainer = AlbertPretrainer(AlbertEncoder(CONFIG))
  tf.train.CheckpointManager(tf.train.Checkpoint(model=pretrainer), run_dir,
                             1).save(1)
  CONFIG.to_json_file(os.path.join(run_dir, "albert_config.json"))
  paths = task_sources.find_source(run_dir)
  assert task_sources.read_task_source(paths, CONFIG) is None
  out = str(tmp_path / "hf")
  line = converter.convert_checkpoint(CONFIG, run_dir, out, "huggingface")
  assert "heads: masked_lm, sentence_order" in line
  with open(os.path.join(out, "config.json")) as f:
    assert json.load(f)["architectures"] == ["AlbertForPreTraining"]


def test_an_early_exit_classifier_goes_out_at_full_depth(tmp_path):
  """run_classifier --early_exit's model: its `logits` (the last
  application's classifier) are the Hugging Face classifier's; the line
  says the exits are not kept."""
  from albert_tf.models.albert_early_exit_classifier import (
    AlbertEarlyExitClassifier,
  )
  from albert_tf.networks.albert_encoder import AlbertEncoder
  model = AlbertEarlyExitClassifier(AlbertEncoder(CONFIG, name="encoder"), 3)
  rng = np.random.default_rng(0)
  for v in model.weights:
    if v.dtype == tf.float32:
      v.assign(rng.normal(0, 0.2, v.shape).astype(np.float32))
  run_dir = save_run(model, str(tmp_path / "run"), label_list_lib.LabelList(
      "classification", ("c", "a", "b")))
  out = str(tmp_path / "hf")
  line = converter.convert_checkpoint(CONFIG, run_dir, out, "huggingface")
  assert "the last of its 2 exit classifiers" in line
  hf = load_hf("AutoModelForSequenceClassification", out)
  inputs = ids(3)
  np.testing.assert_allclose(torch_outputs(hf, inputs).logits.numpy(),
                             model(inputs, training=False)["logits"].numpy(),
                             atol=1e-5)
