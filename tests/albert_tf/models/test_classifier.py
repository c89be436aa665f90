"""AlbertClassifier: shapes, config round trip, structure, raw-text export."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from albert_tf import exports
from albert_tf.config import AlbertConfig
from albert_tf.exports.serving.classifier import export_classifier
from albert_tf.layers.classification_head import ClassificationHead
from albert_tf.models.albert_classifier import AlbertClassifier
from albert_tf.networks.albert_encoder import AlbertEncoder
from data_pipeline.tasks.glue import examples as glue_examples
from data_pipeline.tasks.glue import features as glue_features
from data_pipeline.tokenization import sentencepiece_tokenizer as tokenization


def test_shapes_and_dropout(tiny_config, encoder_inputs):
  model = AlbertClassifier(AlbertEncoder(tiny_config), num_classes=3)
  logits = model(encoder_inputs)["logits"]
  assert logits.shape == (3, 3) and logits.dtype == tf.float32
  np.testing.assert_allclose(model(encoder_inputs)["logits"], logits)
  head = model.classifier
  pooled = tf.ones([4, tiny_config.hidden_size])
  assert not np.allclose(head(pooled, training=True), head(pooled))
  regressor = AlbertClassifier(AlbertEncoder(tiny_config), num_classes=1)
  assert regressor(encoder_inputs)["logits"].shape == (3, 1)


def test_config_round_trip(tiny_config, encoder_inputs):
  model = AlbertClassifier(AlbertEncoder(tiny_config), num_classes=2,
                           dropout_rate=0.2)
  clone = AlbertClassifier.from_config(model.get_config())
  assert clone.num_classes == 2 and clone.dropout_rate == 0.2
  assert clone.initializer_range == tiny_config.initializer_range
  clone.set_weights(model.get_weights())
  np.testing.assert_allclose(clone(encoder_inputs)["logits"],
                             model(encoder_inputs)["logits"], atol=1e-6)
  head = ClassificationHead(5, 0.3, 0.05)
  assert ClassificationHead.from_config(head.get_config()).get_config() == \
      head.get_config()


def test_only_the_head_is_added(tiny_config):
  encoder = AlbertEncoder(tiny_config)
  model = AlbertClassifier(encoder, num_classes=4)
  extra = {v.name for v in model.trainable_variables} - {
      v.name for v in encoder.trainable_variables}
  assert len(model.trainable_variables) == \
      len(encoder.trainable_variables) + 2
  assert all("classifier" in name for name in extra)
  assert model.classifier.dense.kernel.shape == (tiny_config.hidden_size, 4)


@pytest.mark.slow
def test_raw_text_export_matches_python_path(tmp_path, spm_model):
  """Two-segment serving signature == Python featurisation + model, also
  when the pair is truncated and with accents / extra spaces."""
  config = AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=64)
  model = AlbertClassifier(AlbertEncoder(config), num_classes=3)
  task = glue_examples.get_task("MNLI")
  seq_length = 24
  path = export_classifier(model, str(tmp_path / "mnli"), spm_model,
                           task.labels, 2, seq_length)
  texts_a = ["Return the  Café’s first release.",
             "A very long premise " + "with many words " * 10,
             "short"]
  texts_b = ["This is a 5-tuple, of the same form.", "tiny",
             "a hypothesis " * 20]
  tokenizer = tokenization.SentencePieceTokenizer(spm_model)
  features = glue_features.featurize(
      task, [glue_examples.Example(str(i), a, b) for i, (a, b)
             in enumerate(zip(texts_a, texts_b))],
      tokenizer, seq_length)
  expected = model(features.padded(seq_length, tokenizer.pad_id))["logits"]
  expected_probs = tf.nn.softmax(expected).numpy()

  serving = exports.load_saved_model(path).signatures["serving_default"]
  got = serving(text_a=tf.constant(texts_a), text_b=tf.constant(texts_b))
  np.testing.assert_allclose(got["probabilities"], expected_probs, atol=1e-5)
  np.testing.assert_array_equal(got["label_ids"],
                                np.argmax(expected_probs, -1))
  assert [s.decode() for s in got["labels"].numpy()] == [
      task.labels[i] for i in np.argmax(expected_probs, -1)]
  assert tf_keras.backend.floatx() == "float32"
