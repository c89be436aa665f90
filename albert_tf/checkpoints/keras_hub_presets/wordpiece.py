"""keras-hub presets of a WordPiece model (the released Chinese ALBERTs).

`AlbertBackbone` with keras-hub's own `BertTokenizer` over the vocab.txt,
so `AlbertTextClassifier.from_preset` loads and fine-tunes on raw strings
with keras-hub alone; the rest of the preset is written as for SentencePiece
models (`keras_hub_preset_writer.save_and_publish`).
"""

from typing import Dict, List

import numpy as np

from albert_tf.checkpoints.keras_hub_presets import preset as keras_hub_preset
from albert_tf.checkpoints.keras_hub_presets import (
  writer as keras_hub_preset_writer,
)
from albert_tf.config import AlbertConfig

# Measured on the WordPiece tests' multilingual text (tests/conftest.py,
# tests/albert_tf/checkpoints/test_keras_hub_wordpiece.py asserts it): lines
# whose ids from keras-hub's BertTokenizer differ from the official WordPiece
# tokenization.
WORDPIECE_DIFFERENCES = (
    "its ids differ from the official tokenization on 12 of 30 lines of our "
    "multilingual test text: it NFKC-folds full-width characters (Chinese "
    "\"，！：\" become \",!:\" or [UNK]), keeps Hangul syllables whole, "
    "cuts words at 100 characters (officially 200) and splits at control "
    "characters; fine-tune with care or tokenize with albert_tf")


def write_wordpiece_preset(arrays: Dict[str, np.ndarray],
                           config: AlbertConfig, output_dir: str,
                           tokens: List[str], do_lower_case: bool = True
                           ) -> str:
  """Writes a keras-hub preset of a WordPiece model: AlbertBackbone with
  keras-hub's BertTokenizer over `tokens` (the vocab.txt, id order), so it
  loads and fine-tunes on raw strings with keras-hub alone. Returns a
  one-line description.

  Raises:
    UserInputError: an inexpressible config or an existing output_dir.
  """
  keras_hub_preset_writer.check_output(config, output_dir, None, "wordpiece")
  extra = dict(
      format="albert_tf keras-hub preset", do_lower_case=bool(do_lower_case),
      keep_accents=not do_lower_case,
      hidden_dropout_prob=config.hidden_dropout_prob,
      attention_probs_dropout_prob=config.attention_probs_dropout_prob,
      initializer_range=config.initializer_range,
      tokenizer=keras_hub_preset.TOKENIZER_CLASSES["wordpiece"])
  keras_hub_preset_writer.save_and_publish(arrays, config, output_dir,
                                           tokens, "wordpiece", extra,
                                           do_lower_case)
  dropped, task = keras_hub_preset_writer.heads_note(arrays)
  return (f"keras-hub preset {output_dir}: AlbertBackbone{task}, "
          f"keras-hub's BertTokenizer (loads with keras-hub alone; "
          f"{WORDPIECE_DIFFERENCES}){dropped}")
