"""A keras-hub AlbertTextClassifier preset through run_classifier.

keras-hub writes the preset itself (`save_to_preset`, in a Keras 3
subprocess: tests/scripts/keras_hub_tasks_script.py; Keras 3 stays out of
this tf_keras process) and gives its logits on the ids run_classifier
feeds for the dev texts. The preset folder, with a labels.txt naming its
head's outputs (keras-hub keeps no label names), is all the tool is given:
--do_eval scores keras-hub's probabilities, --export_dir's token_ids
signature gives its logits (1e-5), --do_train runs an update from it.
"""

import json

import numpy as np
import pytest
import tensorflow as tf

from tests.albert_tf.checkpoints import tool_sources_kit as kit
from tests.scripts import keras_hub_tasks_script

pytest.importorskip("keras_hub")

# A Keras 3 process, then run_classifier evaluating, exporting, training.
pytestmark = pytest.mark.slow

BACKBONE = dict(vocabulary_size=2000, num_layers=2, num_heads=2,
                embedding_dim=16, hidden_dim=32, intermediate_dim=64,
                max_sequence_length=64, dropout=0.0)
HEAD_ORDER = ["music", "volcano", "fruit"]  # not sorted


def test_keras_hub_classifier_through_run_classifier(tmp_path, spm_model,
                                                     english_corpus):
  rows, dev = kit.classifier_dev(tmp_path, english_corpus)
  inputs = kit.text_ids([r["text"] for r in rows], spm_model)
  ids_file = str(tmp_path / "ids.npz")
  np.savez(ids_file, **inputs)
  presets = {name: str(tmp_path / name) for name in
             ("classifier", "softmax", "sigmoid", "masked_lm")}
  out = keras_hub_tasks_script.run(
      dict(spm_model=spm_model, ids=ids_file, seq=kit.SEQ, backbone=BACKBONE,
           num_classes=len(HEAD_ORDER), presets=presets), tmp_path)
  theirs = np.asarray(out["classifier_logits"])  # [n, 3], head order
  preset = tmp_path / "classifier"
  (preset / "labels.txt").write_text("\n".join(HEAD_ORDER) + "\n")
  run, export_dir = tmp_path / "eval", tmp_path / "export"
  assert kit.run_tool("run_classifier", *kit.classifier_args(
      preset, dev, run), "--do_eval", f"--export_dir={export_dir}") == 0
  np.testing.assert_allclose(kit.probabilities(run, HEAD_ORDER),
                             tf.nn.softmax(theirs).numpy(), atol=1e-5)
  labels = json.loads((run / "labels.json").read_text())["labels"]
  served = kit.serving_token_ids(export_dir, inputs)["logits"]
  np.testing.assert_allclose(
      served, theirs[:, [HEAD_ORDER.index(n) for n in labels]], atol=1e-5)
  train = tmp_path / "train"
  assert kit.run_tool("run_classifier", *kit.classifier_args(
      preset, dev, train), *kit.train_args(dev), "--do_eval") == 0
  np.testing.assert_allclose(kit.probabilities(train, HEAD_ORDER),
                             tf.nn.softmax(theirs).numpy(), atol=1e-5)
