"""WordPiece vocabulary learner (library and `tools.train_wordpiece`)."""

import os
import re
import subprocess
import sys
import uuid

import pytest
from tokenizers import models

from albert_common import file_io
from albert_common.errors import UserInputError
from data_pipeline.tokenization import wordpiece_trainer

_REPO = os.path.abspath(os.path.join(__file__, "../../../.."))

CHINESE = """今天天气很好，我们一起去公园散步。
机器学习是人工智能的一个重要分支。
北京是中国的首都，也是一座历史悠久的城市。
他每天早上六点起床，然后去跑步。
这本书讲述了一个普通人的奋斗故事。
我们的团队正在开发新的语言模型。
春天来了，花园里的花都开了。
学生们在图书馆里安静地学习。"""


def _tokenizer(vocab_file, do_lower_case=True):
  """Hugging Face's WordPiece over `vocab_file`: an independent tokenizer."""
  with open(vocab_file, encoding="utf-8") as f:
    vocab = {piece.rstrip("\n"): i for i, piece in enumerate(f)}
  tokenizer = wordpiece_trainer.bert_pre_tokenizer(do_lower_case)
  tokenizer.model = models.WordPiece(vocab, unk_token="[UNK]",
                                     max_input_chars_per_word=200)
  return tokenizer


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, english_corpus):
  """[about 100 KB of English docstrings, the Chinese lines]."""
  folder = tmp_path_factory.mktemp("wp_corpus")
  with open(english_corpus, encoding="utf-8") as f:
    (folder / "en.txt").write_text(f.read()[:100_000], encoding="utf-8")
  (folder / "zh.txt").write_text(CHINESE + "\n", encoding="utf-8")
  return [str(folder / "en.txt"), str(folder / "zh.txt")]


@pytest.fixture(scope="module")
def learned(corpus, tmp_path_factory):
  vocab_file = str(tmp_path_factory.mktemp("wp") / "sub" / "vocab.txt")
  stats = wordpiece_trainer.train_wordpiece(corpus, vocab_file,
                                            vocab_size=1000)
  with open(vocab_file, encoding="utf-8") as f:
    return vocab_file, stats, f.read().split("\n")[:-1]


def test_vocabulary_layout(learned):
  _, stats, pieces = learned
  assert stats["vocab_size"] == len(pieces)
  # The learner searches a count threshold for 95-100% of the size; on a
  # 100 KB corpus the nearest threshold gives a little less.
  assert 900 <= len(pieces) <= 1000
  assert stats["sampled"] == stats["lines"] > 1000
  assert pieces[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
  assert len(set(pieces)) == len(pieces)
  assert not any(any("A" <= c <= "Z" for c in p) for p in pieces[5:])
  # Every Chinese character is a piece (BERT splits CJK characters).
  chars = {c for c in CHINESE if "\u4e00" <= c <= "\u9fff"}
  assert chars <= set(pieces)
  assert not any(len(p) > 1 and "\u4e00" <= p[0] <= "\u9fff" for p in pieces)
  # Learned multi-character pieces, word starts and continuations.
  assert {"the", "return", "##s", "##ing"} <= set(pieces)


def test_the_corpus_tokenizes_with_few_unknowns(learned, corpus):
  vocab_file, _, _ = learned
  tokenizer = _tokenizer(vocab_file)
  tokens = unknown = 0
  for path in corpus:
    with open(path, encoding="utf-8") as f:
      for line in f:
        ids = tokenizer.encode(line, add_special_tokens=False).ids
        tokens += len(ids)
        unknown += ids.count(1)
  assert tokens > 15_000
  assert unknown / tokens < 0.002, (unknown, tokens)
  encoding = tokenizer.encode("北京是中国的首都", add_special_tokens=False)
  assert encoding.tokens == list("北京是中国的首都")


def test_same_corpus_same_bytes_on_any_filesystem(learned, corpus):
  vocab_file, _, _ = learned
  uid = uuid.uuid4().hex[:8]
  inputs = []
  for i, path in enumerate(corpus):
    with open(path, "rb") as f:
      inputs.append(f"ram://wp-{uid}/in/{i}.txt")
      file_io.write_atomic(inputs[-1], f.read())
  out = f"ram://wp-{uid}/out/vocab.txt"
  wordpiece_trainer.train_wordpiece(f"ram://wp-{uid}/in/*.txt", out,
                                    vocab_size=1000)
  with open(vocab_file, "rb") as f:
    assert file_io.read_bytes(out) == f.read()
  assert file_io.listdir(f"ram://wp-{uid}/out") == ["vocab.txt"]


def test_cased_vocabulary_keeps_capitals(corpus, tmp_path):
  vocab_file = str(tmp_path / "cased.txt")
  wordpiece_trainer.train_wordpiece(corpus, vocab_file, vocab_size=600,
                                    do_lower_case=False)
  with open(vocab_file, encoding="utf-8") as f:
    pieces = f.read().split()
  assert 570 <= len(pieces) <= 600  # The learner's 5% slack.
  assert any(any("A" <= c <= "Z" for c in p) for p in pieces)


def test_an_overshoot_drops_the_rarest_words_not_characters():
  vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b",
           "##a", "##b", "ab", "ba", "##ab"]
  assert wordpiece_trainer._fit(vocab, 10) == vocab[:10]
  assert wordpiece_trainer._fit(vocab, 9) == vocab[:9]
  assert wordpiece_trainer._fit(vocab, 8) == vocab[:9]  # No fewer.
  assert wordpiece_trainer._fit(vocab, 20) == vocab


@pytest.mark.parametrize("case", ["missing", "empty", "too_small"])
def test_bad_input_is_one_error_and_no_output(case, corpus, tmp_path):
  vocab_file = str(tmp_path / "vocab.txt")
  if case == "missing":
    inputs, size, message = [str(tmp_path / "nope.txt")], 100, "nope.txt"
  elif case == "empty":
    (tmp_path / "empty.txt").write_text("\n\n")
    inputs, size, message = [str(tmp_path / "empty.txt")], 100, "empty corpus"
  else:
    inputs, size, message = corpus, 50, "--vocab_size=50 is smaller"
  with pytest.raises(UserInputError, match=message):
    wordpiece_trainer.train_wordpiece(inputs, vocab_file, vocab_size=size)
  assert os.listdir(tmp_path) in ([], ["empty.txt"])


def test_cli(corpus, tmp_path):
  def cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "tools.train_wordpiece", *args], cwd=_REPO,
        capture_output=True, text=True, timeout=300)
  vocab_file = str(tmp_path / "vocab.txt")
  done = cli(f"--input={','.join(corpus)}", f"--vocab_file={vocab_file}",
             "--vocab_size=700")
  assert done.returncode == 0, done.stderr[-2000:]
  written = re.match(rf"wrote {re.escape(vocab_file)}: (\d+) pieces",
                     done.stdout)
  assert written and 665 <= int(written[1]) <= 700, done.stdout
  bad = cli(f"--input={tmp_path / 'nope.txt'}", f"--vocab_file={vocab_file}")
  assert bad.returncode == 1
  assert bad.stderr.strip().splitlines() == [
      f"error: input file not found: {tmp_path / 'nope.txt'}"]
