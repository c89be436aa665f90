"""keras-hub AlbertTextClassifier presets <-> our classifier, head included.

keras-hub's own presets are written by keras-hub itself
(`AlbertTextClassifier(...).save_to_preset`) and ours are loaded by its own
`AlbertTextClassifier.from_preset`, in one Keras 3 subprocess
(tests/scripts/keras_hub_tasks_script.py); this process reads and writes
presets with the library and compares logits on the same ids (1e-5).
"""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from albert_common.errors import UserInputError
from albert_tf.checkpoints import converter
from albert_tf.checkpoints import weight_loading
from albert_tf.checkpoints.reading import readers
from albert_tf.checkpoints.task_models.task_heads import HeadRequest
from albert_tf.config import AlbertConfig
from albert_tf.models.albert_classifier import AlbertClassifier
from albert_tf.models.albert_span_labeler import AlbertSpanLabeler
from albert_tf.networks.albert_encoder import AlbertEncoder
from data_pipeline.tasks import label_list
from tests.scripts import keras_hub_tasks_script

# A Keras 3 process (keras-hub models built, saved, loaded) and a preset
# written and read several times: about a minute on 2 cores.
pytestmark = pytest.mark.slow

SEQ, NUM_CLASSES = 32, 3
LABELS = ("negative", "neutral", "positive")
CONFIG = AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
                      num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=SEQ,
                      hidden_dropout_prob=0.0,
                      attention_probs_dropout_prob=0.0)
BACKBONE = dict(vocabulary_size=2000, num_layers=2, num_heads=2,
                embedding_dim=16, hidden_dim=32, intermediate_dim=64,
                max_sequence_length=SEQ, dropout=0.0)


def _ids():
  rng = np.random.default_rng(7)
  word = rng.integers(5, CONFIG.vocab_size, size=(4, SEQ)).astype(np.int32)
  mask = np.ones_like(word)
  mask[1, SEQ // 2:] = 0
  mask[3, 5:] = 0
  types = np.zeros_like(word)
  types[:, SEQ // 3:] = 1
  return dict(input_word_ids=word * mask, input_mask=mask,
              input_type_ids=types * mask)


def _our_classifier(num_classes=NUM_CLASSES, seed=0):
  model = AlbertClassifier(AlbertEncoder(CONFIG), num_classes)
  rng = np.random.default_rng(seed)
  for v in model.weights:  # nothing trivially 0 or 1
    v.assign(v + rng.normal(0.0, 0.05, size=v.shape).astype(np.float32))
  return model


def _run_dir(folder, model, labels):
  """What run_classifier --output_dir keeps: checkpoints of the model and
  optimizer, albert_config.json, labels.json."""
  checkpoint = tf.train.Checkpoint(
      model=model, optimizer=tf.keras.optimizers.Adam())
  tf.train.CheckpointManager(checkpoint, folder, max_to_keep=1).save(
      checkpoint_number=5)
  CONFIG.to_json_file(os.path.join(folder, "albert_config.json"))
  label_list.write(folder, label_list.LabelList("classification", labels))


@pytest.fixture(scope="module")
def results(tmp_path_factory, spm_model):
  root = tmp_path_factory.mktemp("keras_hub_tasks")
  inputs = _ids()
  ids_file = str(root / "ids.npz")
  np.savez(ids_file, **inputs)
  ours = _our_classifier()
  run_dir = str(root / "run")
  _run_dir(run_dir, ours, LABELS)
  ours_preset = str(root / "ours_preset")
  line = converter.convert_checkpoint(CONFIG, run_dir, ours_preset,
                                      "keras_hub", spm_model_file=spm_model)
  presets = {name: str(root / name) for name in
             ("classifier", "softmax", "sigmoid", "masked_lm")}
  settings = dict(spm_model=spm_model, ids=ids_file, seq=SEQ,
                  backbone=BACKBONE, num_classes=NUM_CLASSES,
                  presets=presets, ours_preset=ours_preset,
                  texts=["the value is true", "no, it is not"])
  out = keras_hub_tasks_script.run(settings, root)
  return dict(out=out, inputs=inputs, ours=ours, line=line, root=root,
              ours_preset=ours_preset, presets=presets,
              expected=ours(inputs, training=False)["logits"].numpy())


def _load(model, path, **request):
  return weight_loading.load_weights_into(model, path,
                                          head=HeadRequest(**request))


def _max_diff(a, b):
  return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


def test_keras_hub_classifier_logits_in_ours(results):
  model = AlbertClassifier(AlbertEncoder(CONFIG), NUM_CLASSES)
  report = _load(model, results["presets"]["classifier"])
  assert report.head_from == ["logits/bias", "logits/kernel"]
  assert report.format == "keras_hub" and not report.fresh_head
  logits = model(results["inputs"], training=False)["logits"]
  assert _max_diff(logits, results["out"]["classifier_logits"]) < 1e-5


def test_softmax_classifier_is_read_as_its_logits(results):
  model = AlbertClassifier(AlbertEncoder(CONFIG), NUM_CLASSES)
  _load(model, results["presets"]["softmax"])
  probabilities = tf.nn.softmax(
      model(results["inputs"], training=False)["logits"])
  assert _max_diff(probabilities, results["out"]["softmax_logits"]) < 1e-6


def test_labels_txt_in_a_keras_hub_preset_are_matched_by_name(
    results, tmp_path):
  preset = str(tmp_path / "named")
  shutil.copytree(results["presets"]["classifier"], preset)
  head_order = ["positive", "negative", "neutral"]  # not sorted
  with open(os.path.join(preset, "labels.txt"), "w") as f:
    f.write("\n".join(head_order) + "\n")
  model = AlbertClassifier(AlbertEncoder(CONFIG), NUM_CLASSES)
  _load(model, preset, labels=list(LABELS))
  logits = model(results["inputs"], training=False)["logits"].numpy()
  theirs = np.asarray(results["out"]["classifier_logits"])
  for i, name in enumerate(LABELS):
    assert _max_diff(logits[:, i], theirs[:, head_order.index(name)]) < 1e-5
  with pytest.raises(UserInputError, match="does not know the label"):
    _load(AlbertClassifier(AlbertEncoder(CONFIG), NUM_CLASSES), preset,
          labels=["negative", "neutral", "happy"])


def test_a_preset_without_label_names_needs_them(results):
  with pytest.raises(UserInputError, match="names none of its head's labels"):
    _load(AlbertClassifier(AlbertEncoder(CONFIG), NUM_CLASSES),
          results["presets"]["classifier"], labels=list(LABELS))


def test_ours_as_a_keras_hub_preset_gives_our_logits(results):
  out = results["out"]
  assert out["ours_preset_num_classes"] == NUM_CLASSES
  assert out["ours_preset_preprocessor"] == "AlbertTextClassifierPreprocessor"
  assert _max_diff(out["ours_preset_logits"], results["expected"]) < 1e-5
  assert np.asarray(out["ours_preset_predict"]).shape == (2, NUM_CLASSES)
  with open(os.path.join(results["ours_preset"], "labels.txt")) as f:
    assert f.read().splitlines() == list(LABELS)
  assert "AlbertTextClassifier task (3 outputs; labels.txt: negative, " \
      "neutral, positive)" in results["line"]
  with open(os.path.join(results["ours_preset"], "task.json")) as f:
    assert json.load(f)["class_name"] == "AlbertTextClassifier"


def test_ours_to_preset_to_ours_is_exact(results):
  weights = readers.read_weights(results["ours_preset"], CONFIG)
  assert weights.head.labels == list(LABELS)
  model = AlbertClassifier(AlbertEncoder(CONFIG), NUM_CLASSES)
  _load(model, results["ours_preset"], labels=list(LABELS))
  for mine, theirs in zip(model.weights, results["ours"].weights):
    np.testing.assert_array_equal(mine.numpy(), theirs.numpy())


def test_a_classifier_preset_to_our_task_layout_is_exact(results,
                                                         tmp_path):
  """--output_format=ours: the preset's head, labels (labels.json), config
  and tokenizer beside our task checkpoint; read back, every weight of
  the classifier the preset came from."""
  prefix = str(tmp_path / "ours" / "ckpt")
  converter.convert_checkpoint(CONFIG, results["ours_preset"], prefix,
                               "ours")
  assert {"albert_config.json", "labels.json", "spiece.model"} <= set(
      os.listdir(tmp_path / "ours"))
  weights = readers.read_weights(str(tmp_path / "ours"), CONFIG)
  assert weights.format == "ours" and weights.head.labels == list(LABELS)
  model = AlbertClassifier(AlbertEncoder(CONFIG), NUM_CLASSES)
  _load(model, str(tmp_path / "ours"), labels=list(LABELS))
  for mine, theirs in zip(model.weights, results["ours"].weights):
    np.testing.assert_array_equal(mine.numpy(), theirs.numpy())


def test_a_classifier_preset_is_no_span_head(results):
  with pytest.raises(UserInputError) as error:
    _load(AlbertSpanLabeler(AlbertEncoder(CONFIG)),
          results["presets"]["classifier"])
  message = str(error.value)
  assert "\n" not in message
  assert "AlbertTextClassifier head" in message and "span" in message


def test_a_masked_lm_preset_is_an_encoder_with_a_fresh_head(results):
  model = AlbertClassifier(AlbertEncoder(CONFIG), NUM_CLASSES)
  report = _load(model, results["presets"]["masked_lm"])
  assert report.head_kind == "classifier" and not report.head_from
  assert report.fresh_head == ["classifier/dense/kernel",
                               "classifier/dense/bias"]
  assert "a fresh classifier head" in report.summary()


def test_a_sigmoid_classifier_is_refused_in_one_line(results):
  with pytest.raises(UserInputError, match="activation='sigmoid'") as error:
    readers.read_weights(results["presets"]["sigmoid"], CONFIG)
  assert "\n" not in str(error.value)


def _edited(results, tmp_path, file_name, edit):
  preset = str(tmp_path / "edited")
  shutil.copytree(results["presets"]["classifier"], preset)
  path = os.path.join(preset, file_name)
  with open(path) as f:
    values = json.load(f)
  edit(values)
  with open(path, "w") as f:
    json.dump(values, f)
  return preset


@pytest.mark.parametrize("file_name,key,value", [
    ("task.json", "num_classes", 4),
    ("config.json", "intermediate_dim", 128)])
def test_config_disagreeing_with_weights_is_one_line(results, tmp_path,
                                                     file_name, key, value):
  preset = _edited(results, tmp_path, file_name,
                   lambda v: v["config"].update({key: value}))
  with pytest.raises(UserInputError) as error:
    readers.read_weights(preset, CONFIG)
  message = str(error.value)
  assert "\n" not in message and preset in message


def test_another_task_class_is_named(results, tmp_path):
  preset = _edited(results, tmp_path, "task.json",
                   lambda v: v.update(class_name="AlbertTokenTagger"))
  with pytest.raises(UserInputError,
                     match="a keras-hub AlbertTokenTagger preset"):
    readers.read_weights(preset, CONFIG)


def test_a_head_keras_hub_cannot_hold_is_refused_before_writing(
    results, tmp_path, spm_model):
  weights = readers.read_weights(results["ours_preset"], CONFIG)
  arrays = dict(weights.arrays)
  arrays["span/dense/kernel"] = np.zeros((32, 2), np.float32)
  arrays["span/dense/bias"] = np.zeros((2,), np.float32)
  from albert_tf.checkpoints.keras_hub_presets import writer
  output = str(tmp_path / "span_preset")
  with pytest.raises(UserInputError, match="keras-hub has no ALBERT task"):
    writer.write_preset(arrays, CONFIG, output, spm_model)
  assert not os.path.exists(output)


def test_cli_writes_a_preset_from_an_export_alone(results, tmp_path,
                                                  spm_model):
  """run_classifier's --export_dir -> convert_checkpoint with no config or
  tokenizer flag (both from the export's assets) -> the same weights and
  labels in the preset."""
  import subprocess
  import sys

  from albert_tf.checkpoints import model_variables
  from albert_tf.exports.serving.classifier import export_classifier
  config_file = str(tmp_path / "albert_config.json")
  CONFIG.to_json_file(config_file)
  export = export_classifier(results["ours"], str(tmp_path / "export"),
                             spm_model, list(LABELS), num_segments=1,
                             seq_length=SEQ, albert_config_file=config_file)
  preset = str(tmp_path / "preset")
  repo = os.path.abspath(os.path.join(__file__, "../../../.."))
  process = subprocess.run(
      [sys.executable, "-m", "tools.convert_checkpoint",
       f"--input_checkpoint={export}", f"--output_checkpoint={preset}",
       "--output_format=keras_hub"], cwd=repo, capture_output=True,
      text=True, timeout=600, check=False)
  assert process.returncode == 0, process.stderr[-2000:]
  assert "AlbertTextClassifier task (3 outputs" in process.stdout
  weights = readers.read_weights(preset, CONFIG)
  assert weights.head.labels == list(LABELS)
  expected = model_variables.canonical_arrays(results["ours"])
  model = AlbertClassifier(AlbertEncoder(CONFIG), NUM_CLASSES)
  _load(model, preset, labels=list(LABELS))
  for name, array in model_variables.canonical_arrays(model).items():
    np.testing.assert_array_equal(array, expected[name], err_msg=name)


def test_a_model_garden_classifier_becomes_a_preset(tmp_path, spm_model):
  """Model Garden BertClassifier (labels.txt beside it) -> keras-hub preset
  -> ours: Model Garden's logits, labels carried by name."""
  models = pytest.importorskip("official.nlp.modeling.models")
  from albert_tf.checkpoints.reading.object_readers import build_garden_encoder
  garden = models.BertClassifier(build_garden_encoder(CONFIG),
                                 num_classes=NUM_CLASSES,
                                 use_encoder_pooler=False)
  rng = np.random.default_rng(5)
  for v in garden.weights:
    v.assign(v + rng.normal(0.0, 0.05, size=v.shape).astype(np.float32))
  inputs = _ids()
  expected = garden(inputs, training=False).numpy()
  prefix = tf.train.Checkpoint(model=garden).write(
      str(tmp_path / "garden" / "ckpt-1"))
  head_order = ["positive", "negative", "neutral"]
  (tmp_path / "garden" / "labels.txt").write_text("\n".join(head_order))
  preset = str(tmp_path / "preset")
  line = converter.convert_checkpoint(CONFIG, prefix, preset, "keras_hub",
                                      spm_model_file=spm_model)
  assert "AlbertTextClassifier task (3 outputs; labels.txt: positive" in line
  model = AlbertClassifier(AlbertEncoder(CONFIG), NUM_CLASSES)
  _load(model, preset, labels=head_order)
  assert _max_diff(model(inputs, training=False)["logits"], expected) < 1e-5


def test_a_hugging_face_classifier_becomes_a_preset(tmp_path, spm_model):
  """transformers' AlbertForSequenceClassification (unsorted id2label) ->
  keras-hub preset -> ours: PyTorch's logits, its label names in
  labels.txt."""
  torch = pytest.importorskip("torch")
  from tests.albert_tf.checkpoints.test_task_models_in import save_hf
  head_order = ["positive", "negative", "neutral"]
  folder = tmp_path / "hf"
  torch_model = save_hf("AlbertForSequenceClassification", folder, seed=4,
                        vocab_size=CONFIG.vocab_size,
                        max_position_embeddings=SEQ, num_labels=NUM_CLASSES,
                        id2label=dict(enumerate(head_order)))
  inputs = _ids()
  with torch.no_grad():
    expected = torch_model(**{k: torch.tensor(inputs[n], dtype=torch.long)
                              for k, n in (("input_ids", "input_word_ids"),
                                           ("attention_mask", "input_mask"),
                                           ("token_type_ids",
                                            "input_type_ids"))}).logits
  preset = str(tmp_path / "preset")
  converter.convert_checkpoint(CONFIG, str(folder), preset, "keras_hub",
                               spm_model_file=spm_model)
  with open(os.path.join(preset, "labels.txt")) as f:
    assert f.read().splitlines() == head_order
  model = AlbertClassifier(AlbertEncoder(CONFIG), NUM_CLASSES)
  _load(model, preset, labels=head_order)
  assert _max_diff(model(inputs, training=False)["logits"],
                   expected.numpy()) < 1e-5
