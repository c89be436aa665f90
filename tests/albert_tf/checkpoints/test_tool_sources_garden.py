"""Model Garden task checkpoints through the tools: a BertClassifier into
run_classifier, a BertSpanLabeler into run_squad.

Each is saved as Model Garden's trainers save it (model, optimizer, global
step) and given as --init_checkpoint with the config and tokenizer flags
(Model Garden keeps neither beside its checkpoints; the classifier's label
names are in a labels.txt beside it). --do_eval alone scores what the
Model Garden model computes on the same rows; --export_dir's token_ids
signature gives its logits (1e-5); --do_train runs an update from it.
"""

import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from tests.albert_tf.checkpoints import tool_sources_kit as kit

models = pytest.importorskip("official.nlp.modeling.models")

# Two tools each evaluate, export and train: ~1 minute on 2 cores.
pytestmark = pytest.mark.slow


def _save(model, folder):
  """As Model Garden's trainers: model, optimizer, global step."""
  checkpoint = tf.train.Checkpoint(model=model,
                                   optimizer=tf_keras.optimizers.Adam(),
                                   global_step=tf.Variable(7, dtype=tf.int64))
  return checkpoint.write(os.path.join(str(folder), "ckpt-7"))


@pytest.fixture(scope="module")
def setup(tmp_path_factory, english_corpus, spm_model):
  from albert_tf.checkpoints.reading.object_readers import build_garden_encoder
  root = tmp_path_factory.mktemp("garden_tools")
  config_file = str(root / "albert_config.json")
  kit.CONFIG.to_json_file(config_file)
  classifier = kit.randomized(models.BertClassifier(
      build_garden_encoder(kit.CONFIG), num_classes=3,
      use_encoder_pooler=False), 1)
  span = kit.randomized(models.BertSpanLabeler(
      build_garden_encoder(kit.CONFIG)), 2)
  prefixes = {"classifier": _save(classifier, root / "classifier"),
              "span": _save(span, root / "span")}
  head_order = ["music", "volcano", "fruit"]  # not sorted
  (root / "classifier" / "labels.txt").write_text("\n".join(head_order))
  rows, dev = kit.classifier_dev(root, english_corpus)
  return dict(root=root, config_file=config_file, classifier=classifier,
              span=span, prefixes=prefixes, head_order=head_order, rows=rows,
              dev=dev, squad=kit.squad_files(root, english_corpus, False))


def _flags(setup, spm_model):
  return [f"--albert_config_file={setup['config_file']}",
          f"--spm_model_file={spm_model}"]


def test_bert_classifier_through_run_classifier(setup, spm_model, tmp_path):
  inputs = kit.text_ids([r["text"] for r in setup["rows"]], spm_model)
  garden = setup["classifier"](inputs, training=False).numpy()  # head order
  out, export_dir = tmp_path / "eval", tmp_path / "export"
  assert kit.run_tool("run_classifier", *kit.classifier_args(
      setup["prefixes"]["classifier"], setup["dev"], out),
      *_flags(setup, spm_model), "--do_eval",
      f"--export_dir={export_dir}") == 0
  np.testing.assert_allclose(
      kit.probabilities(out, setup["head_order"]),
      tf.nn.softmax(garden).numpy(), atol=1e-5)
  served = kit.serving_token_ids(export_dir, inputs)["logits"]
  order = [setup["head_order"].index(n) for n in _run_labels(out)]
  np.testing.assert_allclose(served, garden[:, order], atol=1e-5)
  train_out = tmp_path / "train"
  assert kit.run_tool("run_classifier", *kit.classifier_args(
      setup["prefixes"]["classifier"], setup["dev"], train_out),
      *_flags(setup, spm_model), *kit.train_args(setup["dev"]),
      "--do_eval") == 0
  np.testing.assert_allclose(
      kit.probabilities(train_out, setup["head_order"]),
      tf.nn.softmax(garden).numpy(), atol=1e-5)


def test_bert_classifier_on_the_encoders_pooler(setup, spm_model, tmp_path):
  """use_encoder_pooler=True: the encoder's pooler feeds the head."""
  from albert_tf.checkpoints.reading.object_readers import build_garden_encoder
  garden = kit.randomized(models.BertClassifier(
      build_garden_encoder(kit.CONFIG), num_classes=3,
      use_encoder_pooler=True), 3)
  prefix = _save(garden, tmp_path / "pooler")
  (tmp_path / "pooler" / "labels.txt").write_text(
      "\n".join(setup["head_order"]))
  inputs = kit.text_ids([r["text"] for r in setup["rows"]], spm_model)
  out = tmp_path / "eval"
  assert kit.run_tool("run_classifier", *kit.classifier_args(
      prefix, setup["dev"], out), *_flags(setup, spm_model),
      "--do_eval") == 0
  np.testing.assert_allclose(
      kit.probabilities(out, setup["head_order"]),
      tf.nn.softmax(garden(inputs, training=False)).numpy(), atol=1e-5)


def _run_labels(out):
  import json
  return json.loads((out / "labels.json").read_text())["labels"]


def test_bert_span_labeler_through_run_squad(setup, spm_model, tmp_path):
  examples, features, arrays = kit.squad_features(setup["squad"], spm_model)
  inputs = {k: arrays[k] for k in ("input_word_ids", "input_mask",
                                   "input_type_ids")}
  start, end = (t.numpy() for t in setup["span"](inputs, training=False))
  want = kit.squad_predictions(examples, features, arrays, start, end)
  out, export_dir = tmp_path / "eval", tmp_path / "export"
  common = [f"--init_checkpoint={setup['prefixes']['span']}",
            f"--predict_file={setup['squad']}", *kit.SQUAD_FLAGS,
            *_flags(setup, spm_model)]
  assert kit.run_tool("run_squad", *common, f"--output_dir={out}",
                      "--do_eval", f"--export_dir={export_dir}") == 0
  import json
  assert json.loads((out / "predictions.json").read_text()) == want
  served = kit.serving_token_ids(export_dir, inputs)
  np.testing.assert_allclose(served["start_logits"], start, atol=1e-5)
  np.testing.assert_allclose(served["end_logits"], end, atol=1e-5)
  assert kit.run_tool("run_squad", *common, f"--output_dir={tmp_path / 't'}",
                      f"--train_file={setup['squad']}", "--do_train",
                      "--train_step=1", "--warmup_step=0",
                      "--train_batch_size=4",
                      "--save_checkpoints_steps=1") == 0
  assert tf.train.latest_checkpoint(str(tmp_path / "t")).endswith("ckpt-1")
