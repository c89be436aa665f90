"""Model Garden task checkpoints (BertClassifier, BertSpanLabeler over
networks.AlbertEncoder) load into our task models, heads included.

The checkpoints are saved as Model Garden's trainers save them,
`tf.train.Checkpoint(model=..., optimizer=..., global_step=...)`, and our
logits are compared with the Model Garden model's own on the same ids.
"""

import dataclasses
import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from albert_common.errors import UserInputError
from albert_tf.checkpoints import locate
from albert_tf.checkpoints import weight_loading
from albert_tf.checkpoints.reading.object_readers import build_garden_encoder
from albert_tf.checkpoints.task_models.task_heads import HeadRequest
from albert_tf.config import AlbertConfig
from albert_tf.models.albert_classifier import AlbertClassifier
from albert_tf.models.albert_span_labeler import AlbertSpanLabeler
from albert_tf.networks.albert_encoder import AlbertEncoder

models = pytest.importorskip("official.nlp.modeling.models")

SEQ = 32
CONFIG = AlbertConfig(vocab_size=99, embedding_size=16, hidden_size=32,
                      num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=SEQ,
                      hidden_dropout_prob=0.0,
                      attention_probs_dropout_prob=0.0)


def _inputs():
  rng = np.random.default_rng(3)
  word = rng.integers(5, CONFIG.vocab_size, size=(3, SEQ)).astype(np.int32)
  mask = np.ones_like(word)
  mask[1, SEQ // 2:] = 0
  types = np.zeros_like(word)
  types[:, SEQ // 3:] = 1
  return dict(input_word_ids=word * mask, input_mask=mask,
              input_type_ids=types * mask)


def _randomized(model, seed):
  rng = np.random.default_rng(seed)
  for v in model.weights:  # biases not 0, so that a lost one shows
    v.assign(v + rng.normal(0.0, 0.05, size=v.shape).astype(np.float32))
  return model


def _save(model, folder):
  """As Model Garden's trainers: model, optimizer, global step."""
  checkpoint = tf.train.Checkpoint(model=model,
                                   optimizer=tf_keras.optimizers.Adam(),
                                   global_step=tf.Variable(7, dtype=tf.int64))
  return checkpoint.write(os.path.join(str(folder), "ckpt-7"))


def _classifier(num_classes, pooler, config=CONFIG, seed=0):
  return _randomized(models.BertClassifier(
      build_garden_encoder(config), num_classes=num_classes,
      use_encoder_pooler=pooler), seed)


@pytest.mark.parametrize("pooler", [True, False])
def test_bert_classifier_logits_in_ours(tmp_path, pooler):
  garden = _classifier(3, pooler)
  inputs = _inputs()
  expected = garden(inputs, training=False).numpy()
  prefix = _save(garden, tmp_path)
  assert locate.detect_format(prefix) == "garden"
  model = AlbertClassifier(AlbertEncoder(CONFIG), 3)
  report = weight_loading.load_weights_into(model, prefix)
  assert report.head_from == ["sentence_prediction/logits/bias",
                              "sentence_prediction/logits/kernel"]
  logits = model(inputs, training=False)["logits"].numpy()
  assert np.max(np.abs(logits - expected)) < 1e-5


def test_labels_txt_beside_the_checkpoint_match_by_name(tmp_path):
  garden = _classifier(3, True, seed=1)
  inputs = _inputs()
  expected = garden(inputs, training=False).numpy()
  prefix = _save(garden, tmp_path)
  head_order = ["spam", "ham", "eggs"]
  (tmp_path / "labels.txt").write_text("\n".join(head_order) + "\n")
  wanted = ["eggs", "ham", "spam"]
  model = AlbertClassifier(AlbertEncoder(CONFIG), 3)
  weight_loading.load_weights_into(model, prefix,
                                   head=HeadRequest(labels=wanted))
  logits = model(inputs, training=False)["logits"].numpy()
  order = [head_order.index(name) for name in wanted]
  assert np.max(np.abs(logits - expected[:, order])) < 1e-5


def test_bert_span_labeler_logits_in_ours(tmp_path):
  garden = _randomized(models.BertSpanLabeler(build_garden_encoder(CONFIG)),
                       2)
  inputs = _inputs()
  start, end = (t.numpy() for t in garden(inputs, training=False))
  prefix = _save(garden, tmp_path)
  model = AlbertSpanLabeler(AlbertEncoder(CONFIG))
  report = weight_loading.load_weights_into(model, prefix)
  assert report.head_kind == "span" and len(report.head_from) == 2
  outputs = model(inputs, training=False)
  real = inputs["input_mask"] == 1  # padding is masked by ours, not theirs
  for ours, theirs in ((outputs["start_logits"], start),
                       (outputs["end_logits"], end)):
    assert np.max(np.abs(ours.numpy()[real] - theirs[real])) < 1e-5


def test_another_label_count_is_one_line(tmp_path):
  prefix = _save(_classifier(3, True), tmp_path)
  with pytest.raises(UserInputError, match="a head of 3 labels") as error:
    weight_loading.load_weights_into(
        AlbertClassifier(AlbertEncoder(CONFIG), 2), prefix)
  assert "\n" not in str(error.value)


def test_a_classifier_is_no_span_head(tmp_path):
  prefix = _save(_classifier(2, False), tmp_path)
  with pytest.raises(UserInputError, match="not a start/end span head"):
    weight_loading.load_weights_into(AlbertSpanLabeler(AlbertEncoder(CONFIG)),
                                     prefix)


def test_init_head_false_keeps_only_the_encoder(tmp_path):
  prefix = _save(_classifier(3, True), tmp_path)
  model = AlbertClassifier(AlbertEncoder(CONFIG), 5)
  report = weight_loading.load_weights_into(
      model, prefix, head=HeadRequest(init_head=False))
  assert report.fresh_head and not report.head_from


def test_a_config_that_disagrees_lists_the_misfits(tmp_path):
  other = dataclasses.replace(CONFIG, intermediate_size=48)
  prefix = _save(_classifier(2, True, config=other), tmp_path)
  with pytest.raises(UserInputError) as error:
    weight_loading.load_weights_into(
        AlbertClassifier(AlbertEncoder(CONFIG), 2), prefix)
  message = str(error.value)
  assert "Model Garden" in message and "shape mismatch" in message
  assert "[32, 48]" in message
