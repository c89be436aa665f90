"""WordPiece tokenizer: official FullTokenizer behaviour, checked against
Hugging Face's Rust BERT WordPiece (`tokenizers`), which nobody here wrote."""

import logging

import numpy as np
import pytest

from albert_common.errors import UserInputError
from data_pipeline.tokenization import factory as tokenizer_factory
from data_pipeline.tokenization import sentencepiece_tokenizer as tokenization
from data_pipeline.tokenization import wordpiece_tokenizer as wp

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _write(path, text):
  with open(path, "w", encoding="utf-8") as f:
    f.write(text)
  return str(path)


@pytest.mark.parametrize("do_lower_case", [True, False])
@pytest.mark.parametrize("layout", ["learned", "bert"])
def test_ids_equal_huggingface_on_every_line(tmp_path, multilingual_lines,
                                             wordpiece_kit,
                                             do_lower_case, layout):
  tokens = wordpiece_kit.learn(do_lower_case)
  if layout == "bert":
    tokens = wordpiece_kit.bert_layout(tokens)
  vocab_file = _write(tmp_path / "vocab.txt", "\n".join(tokens) + "\n")
  ours = wp.WordPieceTokenizer(vocab_file, do_lower_case=do_lower_case)
  assert ours.unk_id == (100 if layout == "bert" else 1)
  assert ours.cls_id == (101 if layout == "bert" else 2)
  assert ours.vocab_size == len(tokens)
  reference = wordpiece_kit.reference({t: i for i, t in enumerate(tokens)},
                         do_lower_case)
  unknown = 0
  for line in multilingual_lines:
    expected = reference.encode(line, add_special_tokens=False).ids
    assert ours.encode(line) == expected, repr(line)
    unknown += expected.count(ours.unk_id)
  # Unknown words occur, but most of the text is known.
  total = sum(len(ours.encode(line)) for line in multilingual_lines)
  assert 5 <= unknown < total // 4
  assert ours.encode_batch(multilingual_lines) == [
      ours.encode(line) for line in multilingual_lines]


def _golden_tokenizer(tmp_path, do_lower_case=True):
  tokens = (["[PAD]"] + [f"[unused{i}]" for i in range(99)] +
            ["[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able",
             "run", "##ning", "##n", "中", "国", "，", ",", "hello", "!",
             "cafe", "café", "y", "##y", "a", "##a", "##b", "b", "world"])
  return wp.WordPieceTokenizer(
      _write(tmp_path / "vocab.txt", "\n".join(tokens) + "\n"),
      do_lower_case=do_lower_case)


@pytest.mark.parametrize("text,expected", [
    ("unaffable", ["un", "##aff", "##able"]),
    ("Running", ["run", "##ning"]),  # Longest match first: not "##n".
    ("中国，中", ["中", "国", "，", "中"]),
    ("HELLO,world!", ["hello", ",", "world", "!"]),
    ("Café", ["cafe"]),  # Accent stripped.
    ("hello\x00world", ["[UNK]"]),  # NUL dropped: one word, unknown.
    ("hello\u3000world", ["hello", "world"]),
    ("unaffablex", ["[UNK]"]),  # No piece for "x": the whole word.
    ("y" * 200, ["y"] + ["##y"] * 199),
    ("y" * 201, ["[UNK]"]),  # Over 200 characters.
    ("a中b", ["a", "中", "b"]),
    ("", []),
])
def test_golden_pieces(tmp_path, text, expected):
  tokenizer = _golden_tokenizer(tmp_path)
  assert tokenizer.tokenize(text) == expected
  assert tokenizer.encode(text) == tokenizer.convert_tokens_to_ids(expected)


def test_golden_ids_cased(tmp_path):
  tokenizer = _golden_tokenizer(tmp_path, do_lower_case=False)
  assert tokenizer.encode("Café café 中") == [100, 117, 110]
  assert tokenizer.encode("hello, world") == [114, 113, 124]


def test_control_ids_and_start_piece_table(tmp_path):
  tokenizer = _golden_tokenizer(tmp_path)
  assert (tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id,
          tokenizer.sep_id, tokenizer.mask_id) == (0, 100, 101, 102, 103)
  table = tokenizer.start_piece_table()
  assert table.dtype == bool and table.shape == (tokenizer.vocab_size,)
  starts = {t for t, s in zip(tokenizer.tokens, table) if not s}
  assert starts == {"##aff", "##able", "##ning", "##n", "##y", "##a", "##b"}
  assert tokenizer.convert_ids_to_tokens([104, 105]) == ["un", "##aff"]


def test_vocab_file_read_as_official_load_vocab(tmp_path):
  # First field of a line; blank line -> " "; a repeat keeps its first id.
  text = "[PAD]\n[UNK] 7\n[CLS]\n\n[SEP]\n[CLS]\n[MASK]\t9\r\nab"
  assert wp.parse_vocab(text) == ["[PAD]", "[UNK]", "[CLS]", " ", "[SEP]",
                                  "[MASK]", "ab"]
  tokenizer = wp.WordPieceTokenizer(_write(tmp_path / "v.txt", text))
  assert tokenizer.vocab_size == 7
  assert tokenizer.mask_id == 5
  assert tokenizer.encode("AB") == [6]


def test_vocab_file_on_any_filesystem():
  import tensorflow as tf
  path = "ram://wordpiece/vocab.txt"
  tf.io.gfile.makedirs("ram://wordpiece")
  with tf.io.gfile.GFile(path, "w") as f:
    f.write("\n".join(SPECIALS + ["中", "国"]) + "\n")
  tokenizer = wp.WordPieceTokenizer(path)
  assert tokenizer.encode("中国") == [5, 6]


@pytest.mark.parametrize("tokens,missing", [
    (["[PAD]", "[UNK]", "[SEP]", "[MASK]"], "[CLS]"),
    (["[PAD]", "[UNK]", "[CLS]", "[SEP]"], "[MASK]"),
])
def test_vocab_without_control_token_names_file(tmp_path, tokens, missing):
  path = _write(tmp_path / "bad_vocab.txt", "\n".join(tokens + ["a"]))
  with pytest.raises(UserInputError, match=f"bad_vocab.txt has no "
                     f"{missing.replace('[', '.').replace(']', '.')}"):
    wp.WordPieceTokenizer(path)


def test_bad_vocab_files(tmp_path):
  with pytest.raises(UserInputError, match="vocab file not found: .*nope"):
    wp.WordPieceTokenizer(str(tmp_path / "nope.txt"))
  path = str(tmp_path / "latin1.txt")
  with open(path, "wb") as f:
    f.write(b"[PAD]\ncaf\xe9\n")
  with pytest.raises(UserInputError, match="latin1.txt is not UTF-8"):
    wp.WordPieceTokenizer(path)


def test_make_tokenizer_precedence(tmp_path, spm_model, caplog):
  vocab_file = _write(tmp_path / "vocab.txt", "\n".join(SPECIALS) + "\n")
  assert isinstance(tokenizer_factory.make_tokenizer(vocab_file=vocab_file),
                    wp.WordPieceTokenizer)
  with caplog.at_level(logging.INFO, logger="absl"):
    both = tokenizer_factory.make_tokenizer(spm_model_file=spm_model,
                                            vocab_file=vocab_file)
  assert isinstance(both, tokenization.SentencePieceTokenizer)
  ignored = [r for r in caplog.records if "is ignored" in r.getMessage()]
  assert len(ignored) == 1 and vocab_file in ignored[0].getMessage()
  with pytest.raises(UserInputError, match="--spm_model_file.*--vocab_file"):
    tokenizer_factory.make_tokenizer(None, None)
  # A bad vocab file is ignored when SentencePiece is used, as officially.
  assert isinstance(
      tokenizer_factory.make_tokenizer(spm_model, str(tmp_path / "nope")),
      tokenization.SentencePieceTokenizer)


def test_start_piece_table_of_learned_vocab(wordpiece_kit):
  tokenizer = wp.WordPieceTokenizer(None, tokens=wordpiece_kit.learn(True))
  table = tokenizer.start_piece_table()
  continuation = np.array([t.startswith("##") for t in tokenizer.tokens])
  assert continuation.sum() > 50
  np.testing.assert_array_equal(table, ~continuation)


def test_official_rules_where_huggingface_differs():
  # The reference above differs from the official code on three points, so
  # the multilingual text avoids them; here they are, as officially: a
  # private-use character is kept (not a control, Cc/Cf), U+2B820 is a CJK
  # ideograph (Hugging Face's table starts at U+2B920), and str.lower's
  # final sigma.
  assert wp.basic_tokenize("ΟΔΟΣ a\ue000b c\U0002B820d", True) == [
      "οδος", "a\ue000b", "c", "\U0002B820", "d"]
  assert wp.basic_tokenize("Ça\u0301 ÉCOLE", False) == ["Ça\u0301", "ÉCOLE"]


# --- in-graph twin ----------------------------------------------------------


def test_is_cjk_at_the_edges_of_every_range():
  for lo, hi in wp.CJK_RANGES:
    assert wp.is_cjk(chr(lo)) and wp.is_cjk(chr(hi))
    assert wp.is_cjk(chr(lo - 1)) == any(a <= lo - 1 <= b
                                         for a, b in wp.CJK_RANGES)
    assert wp.is_cjk(chr(hi + 1)) == any(a <= hi + 1 <= b
                                         for a, b in wp.CJK_RANGES)
  assert not wp.is_cjk("\0") and not wp.is_cjk("\U0010FFFF")


def test_character_classes_exported_patterns():
  from data_pipeline.tokenization.tf_sentencepiece import char_class
  from data_pipeline.tokenization.tf_wordpiece import character_classes
  # Runs merge, surrogates are skipped (U+D7FF and U+E000 stay apart), the
  # last code point is reached.
  assert char_class(lambda c: c in "abcx\U0010FFFF" or
                    0xD7FF <= ord(c) <= 0xE000) == (
      "[\\x{61}-\\x{63}\\x{78}\\x{d7ff}\\x{e000}\\x{10ffff}]")
  dropped, space, cjk, mn, punctuation = character_classes()
  assert cjk == ("[\\x{3400}-\\x{4dbf}\\x{4e00}-\\x{9fff}\\x{f900}-\\x{faff}"
                 "\\x{20000}-\\x{2a6df}\\x{2a700}-\\x{2ceaf}"
                 "\\x{2f800}-\\x{2fa1f}]")
  assert space.startswith("[\\x{9}-\\x{a}\\x{d}\\x{20}\\x{a0}")
  assert dropped.startswith("[\\x{0}-\\x{8}\\x{b}-\\x{c}\\x{e}-\\x{1f}")
  assert punctuation.startswith("[\\x{21}-\\x{2f}\\x{3a}-\\x{40}")
  assert mn.startswith("[\\x{300}-\\x{36f}")


@pytest.mark.parametrize("do_lower_case", [True, False])
@pytest.mark.parametrize("layout", ["learned", "bert"])
def test_in_graph_ids_equal_python_on_every_line(tmp_path, multilingual_lines,
                                                 wordpiece_kit,
                                                 do_lower_case, layout):
  import tensorflow as tf

  from data_pipeline.tokenization import tf_wordpiece as tf_wp
  tokens = wordpiece_kit.learn(do_lower_case)
  if layout == "bert":
    tokens = wordpiece_kit.bert_layout(tokens)
  vocab_file = _write(tmp_path / "vocab.txt", "\n".join(tokens) + "\n")
  python = wp.WordPieceTokenizer(vocab_file, do_lower_case=do_lower_case)
  graph = tf_wp.TFWordPieceTokenizer.from_file(vocab_file,
                                               do_lower_case=do_lower_case)
  assert graph.vocab_size == python.vocab_size
  ids = graph(tf.constant(multilingual_lines))
  assert ids.dtype == tf.int32
  expected = [python.encode(line) for line in multilingual_lines]
  assert ids.to_list() == expected
  # In tf.function too (as in the exported preprocessor), and the pieces.
  traced = tf.function(graph.tokenize)(tf.constant(multilingual_lines))
  assert [[p.decode() for p in row] for row in traced.to_list()] == [
      python.tokenize(line) for line in multilingual_lines]


def test_in_graph_tokenizer_survives_savedmodel(tmp_path, multilingual_lines,
                                                wordpiece_kit):
  import tensorflow as tf

  from data_pipeline.tokenization import tf_wordpiece as tf_wp
  tokens = wordpiece_kit.bert_layout(wordpiece_kit.learn(True))
  python = wp.WordPieceTokenizer(None, tokens=tokens)
  module = tf.Module()
  module.tokenizer = tf_wp.TFWordPieceTokenizer(tokens)
  module.encode = tf.function(
      lambda texts: module.tokenizer(texts).to_tensor(-1),
      input_signature=[tf.TensorSpec([None], tf.string)])
  tf.saved_model.save(module, str(tmp_path / "sm"))
  loaded = tf.saved_model.load(str(tmp_path / "sm"))
  ids = loaded.encode(tf.constant(multilingual_lines)).numpy()
  for row, line in zip(ids, multilingual_lines):
    assert [i for i in row if i >= 0] == python.encode(line)
  assert tf_wp.TFWordPieceTokenizer.from_config(
      module.tokenizer.get_config()).vocab_size == len(tokens)
