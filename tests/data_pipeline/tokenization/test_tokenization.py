"""ALBERT normalisation, SentencePiece tokenizer, Python / in-graph parity."""

import random
import shutil

import numpy as np
import pytest
import sentencepiece as spm

from albert_common.errors import UserInputError
from data_pipeline.tokenization import sentencepiece_tokenizer as tokenization
from data_pipeline.tokenization import sentencepiece_trainer
from data_pipeline.tokenization.sentencepiece_tokenizer import preprocess_text

# Text the parity tests run on: accents, digits with commas, CJK, emoji,
# mixed whitespace, `` '' quotes, a Thai mark that is Mn but not combining.
TRICKY_TEXTS = [
    "Café naïve résumé",
    "It cost 1,234,567 dollars, or 3,000.",
    "日本語のテキスト",
    "😀 ok",
    " \ta\u3000b\n\u00a0 c\u2003 ",
    "``Quoted'' and ''twice`` '''",
    "ΟΔΟΣ İstanbul Straße ﬁ ①²,",
    "ที่นี่ क्षि",
    "",
    "   ",
    "5, 10, 15, x1,y2,",
]


def _lines(path, n=None):
  with open(path, encoding="utf-8") as f:
    lines = [line.rstrip("\n") for line in f if line.strip()]
  return lines[:n] if n else lines


# --- normalisation --------------------------------------------------------


@pytest.mark.parametrize("text,kwargs,expected", [
    ("  Hello\t\n  World  ", {}, "Hello World"),
    ("a\u3000\u00a0b\u2003", {}, "a b"),
    (" a  b ", {"remove_space": False}, " a  b "),
    ("Café naïve résumé", {}, "Cafe naive resume"),
    ("Café naïve résumé", {"keep_accents": True}, "Café naïve résumé"),
    ("``Hi'' he said", {}, '"Hi" he said'),
    ("'''", {}, "\"'"),
    ("ÀB  Ç Straße", {"lower": True}, "ab c straße"),
    ("ΟΔΟΣ", {"lower": True}, "οδος"),  # Final sigma, as str.lower.
    ("ﬁ ① ²", {}, "fi 1 2"),  # NFKD compatibility forms.
    ("ﬁ", {"keep_accents": True}, "ﬁ"),  # No NFKD when keeping accents.
    # U+0E35 is Mn with combining class 0: kept; U+0E48 (class 107): removed.
    ("\u0e17\u0e35\u0e48", {}, "\u0e17\u0e35"),
    (b"caf\xc3\xa9 \xff", {}, "cafe"),  # Bytes: UTF-8, invalid bytes dropped.
])
def test_preprocess_text_golden(text, kwargs, expected):
  assert preprocess_text(text, **kwargs) == expected


@pytest.mark.parametrize("piece,expected", [
    ("▁the", True), ("▁", True), ("<pad>", True), ("<unk>", True),
    (",", True), ("-", True), ("[", True), ('"', True), ("~", True),
    ("ing", False), ("ING", False), ("[CLS]", False), (",,", False),
    ("s.", False), ("", False),
    # Any character outside English letters and the punctuation set:
    ("'", True), ("s'", True), ("1", True), ("a1", True), ("é", True),
    ("–", True), ("€", True), ("語", True),
])
def test_is_start_piece(piece, expected):
  assert tokenization.is_start_piece(piece) is expected


class _StubSp:
  """EncodeAsPieces from a fixed table; records what it was asked."""

  def __init__(self, table):
    self.table = table
    self.calls = []

  def EncodeAsPieces(self, text):
    self.calls.append(text)
    return list(self.table[text])


def test_encode_pieces_digit_comma_golden():
  sp = _StubSp({
      "1,000,000 dollars": ["▁1,", "000,", "000", "▁dollars"],
      "1": ["▁1"],
      "000": ["▁", "000"],
  })
  # "▁1," starts a word: re-encoded "1" keeps its "▁" -> "▁1", ",".
  # "000," does not: the bare "▁" of ["▁", "000"] is dropped -> "000", ",".
  assert tokenization.encode_pieces(sp, "1,000,000 dollars") == [
      "▁1", ",", "000", ",", "000", "▁dollars"]
  assert sp.calls == ["1,000,000 dollars", "1", "000"]


def test_encode_pieces_digit_comma_strips_and_leaves_others():
  sp = _StubSp({
      "x5, a, ², ,": ["▁x", "5,", "▁a,", "▁²,", "▁,", ","],
      "5": ["▁5"],
      "²": ["▁²"],
  })
  # "5," (not word-initial): "▁5" -> "5". "▁a," ends in a letter and "," is a
  # single character: both untouched. "²" is a digit to str.isdigit.
  assert tokenization.encode_pieces(sp, "x5, a, ², ,") == [
      "▁x", "5", ",", "▁a,", "▁²", ",", "▁,", ","]


# --- Python tokenizer on a real model ---------------------------------------


@pytest.fixture(scope="module")
def tokenizer(spm_model):
  return tokenization.SentencePieceTokenizer(spm_model, do_lower_case=True)


def test_special_ids_and_vocab(tokenizer):
  assert (tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id,
          tokenizer.sep_id, tokenizer.mask_id) == (0, 1, 2, 3, 4)
  assert tokenizer.vocab_size == 2000
  assert tokenizer.convert_ids_to_tokens([0, 1, 2, 3, 4]) == [
      "<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]


def test_tokenize_and_convert(tokenizer):
  pieces = tokenizer.tokenize("  The  RETURN value,\tof the Function. ")
  text = "".join(pieces).replace("▁", " ")
  assert text == " the return value, of the function."
  ids = tokenizer.encode("  The  RETURN value,\tof the Function. ")
  assert ids == tokenizer.convert_tokens_to_ids(pieces)
  assert tokenizer.convert_ids_to_tokens(ids) == pieces
  assert all(5 <= i < 2000 for i in ids)
  assert tokenizer.encode("") == []


def test_start_piece_table(tokenizer):
  table = tokenizer.start_piece_table()
  assert table.shape == (2000,) and table.dtype == np.bool_
  pieces = tokenizer.convert_ids_to_tokens(range(2000))
  assert table.tolist() == [tokenization.is_start_piece(p) for p in pieces]
  # <pad>, <unk> start words; [CLS] [SEP] [MASK] do not (official rule).
  assert table[:5].tolist() == [True, True, False, False, False]
  assert 200 < table.sum() < 1800


def test_encode_batch_equals_encode(tokenizer, english_corpus):
  texts = _lines(english_corpus) + TRICKY_TEXTS
  assert len(texts) > 3000
  assert tokenizer.encode_batch(texts) == [tokenizer.encode(t) for t in texts]


def test_missing_or_corrupt_model_file(tmp_path, spm_model):
  missing = str(tmp_path / "nope.model")
  with pytest.raises(UserInputError, match="nope.model"):
    tokenization.SentencePieceTokenizer(missing)
  corrupt = tmp_path / "corrupt.model"
  corrupt.write_bytes(b"not a model")
  with pytest.raises(UserInputError, match="corrupt.model"):
    tokenization.SentencePieceTokenizer(str(corrupt))


def test_missing_control_symbol_names_model(tmp_path, english_corpus):
  prefix = str(tmp_path / "no_mask")
  sentencepiece_trainer.train_sentencepiece(
      english_corpus, prefix, vocab_size=300, control_symbols=("[CLS]",),
      num_threads=2)
  tok = tokenization.SentencePieceTokenizer(prefix + ".model")
  assert tok.cls_id == 2
  with pytest.raises(UserInputError, match=r"no_mask\.model.*\[SEP\]"):
    _ = tok.sep_id


# --- digit-comma rule on a real model ---------------------------------------


@pytest.fixture(scope="module")
def numbers_model(tmp_path_factory):
  """A small model of number-heavy text: it has pieces such as "000,"."""
  rng = random.Random(0)
  path = tmp_path_factory.mktemp("numbers") / "numbers.txt"
  lines = []
  for _ in range(3000):
    n = f"{rng.randrange(1, 999)},{rng.randrange(1000):03d},000"
    lines.append(f"it cost {n} dollars, or {rng.randrange(1, 99)},000, "
                 f"said {rng.choice(['ann', 'bob', 'eve'])}.")
  path.write_text("\n".join(lines) + "\n", encoding="utf-8")
  prefix = str(path.parent / "numbers")
  sentencepiece_trainer.train_sentencepiece(str(path), prefix, vocab_size=300,
                                            num_threads=2)
  return prefix + ".model"


def test_digit_comma_rule_on_real_model(numbers_model):
  sp = spm.SentencePieceProcessor(model_file=numbers_model)
  text = "it cost 12,000, or 5,000, said bob."
  raw = sp.EncodeAsPieces(text)
  assert sum(tokenization.needs_comma_split(p) for p in raw) == 2, raw
  tok = tokenization.SentencePieceTokenizer(numbers_model)
  pieces = tok.tokenize(text)
  assert not any(tokenization.needs_comma_split(p) for p in pieces)
  assert pieces.count(",") >= 2
  assert "".join(pieces).replace("▁", " ") == " " + text


# --- in-graph tokenizer ------------------------------------------------------


@pytest.fixture(scope="module")
def tf_modules():
  # Imported here: the tests above run without paying for TensorFlow.
  import tensorflow as tf

  from data_pipeline.tokenization import tf_sentencepiece as tf_tokenization
  return tf, tf_tokenization


def _assert_parity(tf, tf_tok, py_tok, texts):
  got = tf_tok(tf.constant(texts, tf.string)).to_list()
  want = [py_tok.encode(t) for t in texts]
  diffs = [(t, g, w) for t, g, w in zip(texts, got, want) if g != w]
  assert not diffs, diffs[:3]


def test_tf_parity_tricky_and_corpus(tf_modules, tokenizer, spm_model,
                                     english_corpus):
  tf, tf_tokenization = tf_modules
  tf_tok = tf_tokenization.TFSentencePieceTokenizer.from_file(spm_model)
  assert tf_tok.vocab_size == 2000
  texts = TRICKY_TEXTS + _lines(english_corpus, 500)
  _assert_parity(tf, tf_tok, tokenizer, texts)
  ids = tf_tok(tf.constant(["Café naïve"]))
  assert ids.dtype == tf.int32 and ids.shape.rank == 2
  pieces = tf_tok.tokenize(tf.constant(["Café naïve"])).to_list()[0]
  assert [p.decode() for p in pieces] == tokenizer.tokenize("Café naïve")


def test_tf_parity_whole_corpus(tf_modules, tokenizer, spm_model,
                                english_corpus):
  """Exact Viterbi ties are broken as in the `sentencepiece` package."""
  tf, tf_tokenization = tf_modules
  tf_tok = tf_tokenization.TFSentencePieceTokenizer.from_file(spm_model)
  _assert_parity(tf, tf_tok, tokenizer, _lines(english_corpus))


def test_tf_parity_cased_with_accents(tf_modules, spm_model, english_corpus):
  tf, tf_tokenization = tf_modules
  py_tok = tokenization.SentencePieceTokenizer(
      spm_model, do_lower_case=False, keep_accents=True)
  tf_tok = tf_tokenization.TFSentencePieceTokenizer.from_file(
      spm_model, do_lower_case=False, keep_accents=True)
  _assert_parity(tf, tf_tok, py_tok, TRICKY_TEXTS + _lines(english_corpus, 300))


@pytest.mark.parametrize("rule", ["nmt_nfkc", "nfkc_cf"])
def test_tf_parity_with_sentencepiece_default_normalisation(
    tf_modules, tmp_path, english_corpus, rule):
  """A model trained with SentencePiece's own normalisation (nmt_nfkc is
  spm_train's default; nfkc_cf also folds case), not ours (identity): the
  in-graph tokenizer applies the model's rule as the Python path does."""
  tf, tf_tokenization = tf_modules
  prefix = str(tmp_path / rule)
  spm.SentencePieceTrainer.train(
      input=english_corpus, model_prefix=prefix, vocab_size=1000,
      normalization_rule_name=rule,
      user_defined_symbols=["[CLS]", "[SEP]", "[MASK]"], pad_id=0, unk_id=1,
      bos_id=-1, eos_id=-1, pad_piece="<pad>", unk_piece="<unk>",
      minloglevel=2)
  py_tok = tokenization.SentencePieceTokenizer(prefix + ".model")
  tf_tok = tf_tokenization.TFSentencePieceTokenizer.from_file(
      prefix + ".model")
  _assert_parity(tf, tf_tok, py_tok, TRICKY_TEXTS + _lines(english_corpus))


def test_tf_parity_digit_commas(tf_modules, numbers_model):
  tf, tf_tokenization = tf_modules
  py_tok = tokenization.SentencePieceTokenizer(numbers_model)
  tf_tok = tf_tokenization.TFSentencePieceTokenizer.from_file(numbers_model)
  rng = random.Random(1)
  texts = TRICKY_TEXTS + [
      f"It cost {rng.randrange(10**7):,} dollars, or {rng.randrange(99)},"
      f"{rng.choice(['000', '123'])}, Bob said." for _ in range(200)]
  resplit = [t for t in texts if any(
      tokenization.needs_comma_split(p)
      for p in py_tok.sp_model.EncodeAsPieces(py_tok.preprocess(t)))]
  assert len(resplit) > 50  # The rule is really exercised.
  _assert_parity(tf, tf_tok, py_tok, texts)


def test_tf_tokenizer_in_saved_model(tf_modules, tokenizer, spm_model,
                                     tmp_path):
  tf, tf_tokenization = tf_modules
  model_copy = str(tmp_path / "copy.model")
  shutil.copy(spm_model, model_copy)
  tf_tok = tf_tokenization.TFSentencePieceTokenizer.from_file(model_copy)

  class Preprocessor(tf.Module):

    def __init__(self):
      super().__init__()
      self.tokenizer = tf_tok

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def __call__(self, texts):
      ids = self.tokenizer(texts)
      return {"ids": ids.flat_values, "row_splits": ids.row_splits}

  export_dir = str(tmp_path / "saved")
  tf.saved_model.save(Preprocessor(), export_dir)
  (tmp_path / "copy.model").unlink()  # The SavedModel must not need it.
  reloaded = tf.saved_model.load(export_dir)
  out = reloaded(tf.constant(TRICKY_TEXTS))
  got = tf.RaggedTensor.from_row_splits(out["ids"], out["row_splits"])
  assert got.to_list() == [tokenizer.encode(t) for t in TRICKY_TEXTS]
  # Keras config round trip (model bytes travel as base64).
  clone = tf_tokenization.TFSentencePieceTokenizer.from_config(
      tf_tok.get_config())
  assert clone(tf.constant(TRICKY_TEXTS)).to_list() == got.to_list()


def test_tf_tokenizer_bad_model_file(tf_modules, tmp_path):
  _, tf_tokenization = tf_modules
  with pytest.raises(UserInputError, match="missing.model"):
    tf_tokenization.TFSentencePieceTokenizer.from_file(
        str(tmp_path / "missing.model"))
  bad = tmp_path / "bad.model"
  bad.write_bytes(b"garbage")
  with pytest.raises(UserInputError, match="bad.model"):
    tf_tokenization.TFSentencePieceTokenizer.from_file(str(bad))
