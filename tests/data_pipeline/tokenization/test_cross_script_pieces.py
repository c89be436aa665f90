"""Vocabulary extension with split_by_unicode_script=False: new pieces may
join letters to punctuation (code's 'self.', 'np.'), and code then reads
in fewer pieces than with ALBERT's recipe (pieces split where the script
changes); a WordPiece vocabulary refuses the option in one line."""

import itertools

import pytest

from albert_common.errors import UserInputError
from albert_tf.training.pretraining import vocabulary_extension as tool
from data_pipeline.tokenization import sentencepiece_tokenizer as spt
from data_pipeline.tokenization import vocabulary_extension as vx

# Idioms that join letters and punctuation, recombined line by line.
IDIOMS = ["np.nan", "df.loc[", "os.path.join(", "self._cache[", "__init__()",
          "np.zeros((", "df.iloc[", "self._lock:", "dict.get(", "len(self)"]
NAMES = ["alpha", "beta", "gamma", "delta", "omega", "theta", "kappa",
         "sigma"]


def code_lines(count: int, offset: int = 0):
  """`count` lines of Python-like code, by construction: three idioms and
  a name each (every 3rd combination from `offset`)."""
  combos = list(itertools.product(range(len(IDIOMS)), repeat=3))
  lines = []
  for i, (a, b, c) in enumerate(combos[offset::3][:count]):
    name = NAMES[i % len(NAMES)]
    lines.append(f"{IDIOMS[a]}{name} = {IDIOMS[b]}{name}) or {IDIOMS[c]}")
  return lines


def _extended(spm_model, split):
  old = spt.SentencePieceTokenizer(spm_model)
  proto = vx.read_model_proto(open(spm_model, "rb").read(), spm_model)
  text = [old.preprocess(s) for s in code_lines(200)]
  chosen = vx.rank(vx.sentencepiece_candidates(proto, text, 300, 1, split),
                   "saving")[:60]
  data = vx.extend_sentencepiece(proto, chosen)
  return old, chosen, spt.SentencePieceTokenizer(
      spm_model, old.do_lower_case, fs=vx.BytesFile(data))


def _mixed(piece):
  body = piece.lstrip(spt.SPIECE_UNDERLINE)
  return (any(c.isalpha() for c in body) and
          any(not c.isalnum() for c in body))


def test_pieces_cross_from_letters_to_punctuation_only_when_asked(
    spm_model):
  old, recipe_chosen, recipe = _extended(spm_model, True)
  _, crossing_chosen, crossing = _extended(spm_model, False)
  assert not [c.piece for c in recipe_chosen if _mixed(c.piece)]
  mixed = [c.piece for c in crossing_chosen if _mixed(c.piece)]
  assert len(mixed) >= 3, [c.piece for c in crossing_chosen]
  # Held-out lines (other name pairs): fewer pieces than the recipe's
  # extension, which reads fewer than the old tokenizer.
  held_out = code_lines(20, offset=1)
  counts = [vx.count_pieces(t, held_out)["pieces"]
            for t in (old, recipe, crossing)]
  assert counts[0] > counts[1] > counts[2], counts
  assert counts[2] <= 0.95 * counts[1], counts
  # Old ids stay: every old piece's id is unchanged.
  ids = list(range(old.vocab_size))
  assert crossing.convert_ids_to_tokens(ids) == old.convert_ids_to_tokens(ids)


def test_wordpiece_refuses_the_option_in_one_line(tmp_path):
  params = tool.VocabularyExtensionParams(
      init_checkpoint="ckpt", albert_config_file="config.json",
      vocab_file="vocab.txt", input_file="domain.txt", new_pieces=10,
      output_dir=str(tmp_path / "out"), split_by_unicode_script=False)
  with pytest.raises(UserInputError,
                     match="--split_by_unicode_script=false applies to a "
                     "SentencePiece model"):
    params.check()
