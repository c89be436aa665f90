"""The import paths users script against survive the regrouping by concern;
a module that moved fails with one line naming its new path."""

import importlib
import subprocess
import sys

import pytest

from albert_common import moved_modules


def test_public_names_import_from_their_documented_paths():
  import albert_tf
  from albert_tf import exports
  from albert_tf.networks.albert_encoder import AlbertEncoder
  assert albert_tf.AlbertEncoder is AlbertEncoder
  assert albert_tf.AlbertConfig.__name__ == "AlbertConfig"
  for name in ("load_saved_model", "hub_layer", "export_savedmodel",
               "export_classifier", "export_squad", "export_race",
               "export_ner", "load_ner", "export_tflite"):
    assert callable(getattr(exports, name)), name
  from data_pipeline import tokenization
  from data_pipeline.tokenization import sentencepiece_tokenizer
  for name in ("SentencePieceTokenizer", "preprocess_text", "encode_pieces",
               "SPIECE_UNDERLINE", "load_sentencepiece"):
    assert getattr(tokenization, name) is getattr(sentencepiece_tokenizer,
                                                  name)
  assert tokenization.preprocess_text("ＡＢ  “x”", lower=True) == (
      sentencepiece_tokenizer.preprocess_text("ＡＢ  “x”", lower=True))


def test_keras3_paths_in_a_keras3_process():
  """albert_tf.keras3 (its own process: Keras 3 beside tf_keras)."""
  code = ("import albert_tf.keras3 as k\n"
          "from albert_tf.keras3.saved_model_layers import encoder_layer, "
          "preprocessor_layer\n"
          "print(k.OfficialAlbertTokenizer.__name__, callable(encoder_layer),"
          " callable(preprocessor_layer))\n")
  result = subprocess.run([sys.executable, "-c", code], capture_output=True,
                          text=True, timeout=300)
  assert result.stdout.split() == ["OfficialAlbertTokenizer", "True", "True"
                                   ], result.stderr[-2000:]


@pytest.mark.parametrize("old", sorted(moved_modules.MOVED))
def test_a_moved_module_names_its_new_path(old):
  new = moved_modules.MOVED[old]
  importlib.import_module(new)  # the table points at real modules
  with pytest.raises(ImportError) as raised:
    importlib.import_module(old)
  assert str(raised.value) == (
      f"{old} moved to {new} (docs/design.md: the layout)")


def test_from_import_of_a_moved_module_names_its_new_path():
  with pytest.raises(ImportError, match="data_pipeline.glue_examples moved "
                     "to data_pipeline.tasks.glue.examples"):
    from data_pipeline import glue_examples  # noqa: F401
  with pytest.raises(ImportError, match="albert_tf.exports.tflite moved to "
                     "albert_tf.exports.litert.converter"):
    from albert_tf.exports import tflite  # noqa: F401
