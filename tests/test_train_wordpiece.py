"""tools.train_wordpiece: a vocab.txt learned from text, used by our
WordPiece tokenizer, on any filesystem."""

import os
import subprocess
import sys

import pytest

from data_pipeline import wordpiece_tokenization as wp
from data_pipeline import wordpiece_trainer
from data_pipeline.shared import UserInputError

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def corpora(tmp_path_factory, chinese_kit, english_corpus):
  folder = tmp_path_factory.mktemp("wp_train")
  chinese = chinese_kit.write_corpus(folder / "zh.txt", documents=40)
  bad = folder / "bad.txt"
  bad.write_bytes("第一行。\n".encode() + b"\xff\xfe bad line\n" +
                  "Café au lait.\n".encode())
  return dict(folder=folder, chinese=chinese, english=english_corpus,
              bad=str(bad))


def _unknown_rate(tokenizer, path):
  with open(path, encoding="utf-8") as f:
    ids = [i for line in f for i in tokenizer.encode(line)]
  return ids.count(tokenizer.unk_id) / len(ids), len(ids)


def test_learned_vocab_works_with_our_tokenizer(corpora):
  out = str(corpora["folder"] / "vocab" / "vocab.txt")
  stats = wordpiece_trainer.train_wordpiece(
      [corpora["chinese"], corpora["english"], corpora["bad"]], out,
      vocab_size=3000)
  assert stats["skipped_non_utf8"] == 1 and stats["lines"] > 3000
  tokenizer = wp.WordPieceTokenizer(out)
  assert tokenizer.tokens[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]",
                                  "[MASK]"]
  assert stats["vocab_size"] == tokenizer.vocab_size <= 3000
  assert tokenizer.vocab_size > 2500
  continuations = sum(t.startswith("##") for t in tokenizer.tokens)
  assert continuations > 500
  for corpus in ("chinese", "english"):
    rate, count = _unknown_rate(tokenizer, corpora[corpus])
    assert count > 5000 and rate < 0.01, (corpus, rate)
  # Chinese characters one a token; accents stripped as the tokenizer does.
  assert tokenizer.tokenize("我们去公园") == ["我", "们", "去", "公", "园"]
  assert tokenizer.tokenize("Café") == tokenizer.tokenize("cafe")
  assert "".join(tokenizer.tokenize("Café")).replace("##", "") == "cafe"


def test_any_filesystem_and_cased():
  import tensorflow as tf
  tf.io.gfile.makedirs("ram://train_wp")
  with tf.io.gfile.GFile("ram://train_wp/text.txt", "w") as f:
    f.write("Hello World hello world\nÉCOLE école\n" * 50)
  stats = wordpiece_trainer.train_wordpiece(
      "ram://train_wp/*.txt", "ram://train_wp/out/vocab.txt", vocab_size=60,
      do_lower_case=False)
  tokenizer = wp.WordPieceTokenizer("ram://train_wp/out/vocab.txt",
                                    do_lower_case=False)
  assert stats["vocab_size"] == tokenizer.vocab_size <= 60
  assert "É" in tokenizer.vocab and "H" in tokenizer.vocab
  assert tokenizer.unk_id not in tokenizer.encode("Hello école")


def test_bad_requests(tmp_path):
  with pytest.raises(UserInputError, match="input file not found"):
    wordpiece_trainer.train_wordpiece(str(tmp_path / "none*.txt"),
                                      str(tmp_path / "v.txt"))
  empty = tmp_path / "empty.txt"
  empty.write_text("\n\n")
  with pytest.raises(UserInputError, match="no text"):
    wordpiece_trainer.train_wordpiece(str(empty), str(tmp_path / "v.txt"))
  with pytest.raises(UserInputError, match="--vocab_size=5 must be more"):
    wordpiece_trainer.train_wordpiece(str(empty), str(tmp_path / "v.txt"),
                                      vocab_size=5)
  assert not (tmp_path / "v.txt").exists()


def test_cli(corpora, tmp_path):
  out = tmp_path / "vocab.txt"
  result = subprocess.run(
      [sys.executable, "-m", "tools.train_wordpiece",
       f"--input={corpora['chinese']}", f"--vocab_file={out}",
       "--vocab_size=500"], cwd=REPO, capture_output=True, text=True,
      timeout=120, env=dict(os.environ, PYTHONPATH=REPO))
  assert result.returncode == 0, result.stderr[-3000:]
  assert f"wrote {out}:" in result.stdout
  assert wp.WordPieceTokenizer(str(out)).vocab_size <= 500
  result = subprocess.run(
      [sys.executable, "-m", "tools.train_wordpiece",
       f"--input={tmp_path}/missing.txt", f"--vocab_file={out}"], cwd=REPO,
      capture_output=True, text=True, timeout=120,
      env=dict(os.environ, PYTHONPATH=REPO))
  assert result.returncode == 1
  assert result.stderr.strip().splitlines() == [
      f"error: input file not found: {tmp_path}/missing.txt"]
