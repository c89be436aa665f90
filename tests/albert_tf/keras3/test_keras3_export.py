"""Keras 3 loads our export: keras.layers.TFSMLayer forward, dropout only in
training, and fine-tuning with a Keras 3 optimizer (albert_tf.keras3).

The Keras 3 half runs in a subprocess (tests/scripts/keras3_script.py), so this
process only ever imports tf_keras.
"""

import os

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import exports
from albert_tf.config import AlbertConfig
from albert_tf.networks.albert_encoder import AlbertEncoder
from tests.scripts.keras3_script import run_keras3

# Minutes of multi-process or whole-pipeline runs: `make test-all` only.
pytestmark = pytest.mark.slow

SEQ = 16
SENTENCES = ["The quick brown fox jumps.", "Ünïcode, and  spaces: 1,000!"]


@pytest.fixture(scope="module")
def keras3_results(tmp_path_factory, spm_model):
  config = AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=32,
                        hidden_dropout_prob=0.1,
                        attention_probs_dropout_prob=0.1,
                        initializer_range=0.1)
  encoder = AlbertEncoder(config)
  rng = np.random.default_rng(0)
  for v in encoder.weights:  # nothing trivially 0 or 1 (layer norms too)
    v.assign(v + rng.normal(0.0, 0.05, size=v.shape).astype(np.float32))
  root = tmp_path_factory.mktemp("keras3_export")
  checkpoint = str(root / "ckpt" / "ckpt")
  tf.train.Checkpoint(encoder=encoder).write(checkpoint)
  export_dir = str(root / "exported")
  exports.export_savedmodel(config, checkpoint, spm_model, export_dir,
                            seq_length=SEQ)

  ids = rng.integers(5, config.vocab_size, size=(3, SEQ)).astype(np.int32)
  mask = np.ones((3, SEQ), np.int32)
  mask[1, SEQ // 2:] = 0
  types = np.zeros((3, SEQ), np.int32)
  types[:, SEQ // 3:] = 1
  inputs = dict(input_word_ids=ids * mask, input_mask=mask,
                input_type_ids=types * mask)
  outputs = encoder(inputs, training=False)
  preprocessor = exports.load_saved_model(
      os.path.join(export_dir, "preprocessor"))
  expected = str(root / "expected.npz")
  np.savez(expected, **inputs,
           sequence_output=outputs["sequence_output"].numpy(),
           pooled_output=outputs["pooled_output"].numpy(),
           sentence_ids=preprocessor(tf.constant(SENTENCES))[
               "input_word_ids"].numpy())
  texts = ([f"a good film {w}" for w in ("truly", "indeed", "so", "yes")] +
           [f"a bad film {w}" for w in ("truly", "indeed", "so", "yes")]) * 2
  labels = ([1] * 4 + [0] * 4) * 2
  settings = dict(export_dir=export_dir, expected=expected,
                  sentences=SENTENCES, texts=texts, labels=labels,
                  learning_rate=3e-3, epochs=10)
  return dict(result=run_keras3("tfsm_export", settings, root),
              config=config, encoder=encoder)


def test_functional_model_on_tfsmlayer_equals_export(keras3_results):
  result = keras3_results["result"]
  assert result["functional_sequence_diff"] < 1e-5, result
  assert result["functional_pooled_diff"] < 1e-5, result
  assert result["serving_default_pooled_diff"] < 1e-5, result
  assert result["encoder_outputs_len"] == 2
  assert result["preprocessor_ids_equal"]
  assert result["pair_type_ids_max"] == 1


def test_dropout_acts_in_training_only(keras3_results):
  result = keras3_results["result"]
  assert result["inference_repeat_diff"] == 0.0
  assert result["inference_vs_expected_diff"] < 1e-5
  assert result["training_vs_inference_diff"] > 1e-3
  assert result["training_repeat_diff"] > 1e-3


def test_finetuning_with_adam_changes_encoder_and_loss_falls(keras3_results):
  result = keras3_results["result"]
  encoder = keras3_results["encoder"]
  assert result["num_trainable"] == len(encoder.trainable_variables)
  assert result["encoder_weight_change"] > 1e-4, result
  losses = result["losses"]
  assert losses[-1] < 0.8 * losses[0], losses


def test_plain_tfsmlayer_with_adam_hits_the_documented_keras_bug(
    keras3_results):
  """docs/export-and-keras.md names this Keras bug; if Keras fixes it,
  update that page."""
  error = keras3_results["result"]["plain_tfsm_adam_error"]
  assert error is not None and "not a valid scope name" in error, error
