"""SentencePiece trainer (library and `python -m tools.train_sentencepiece`)."""

import os
import subprocess
import sys

import pytest
import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2

from albert_common.errors import UserInputError
from data_pipeline.tokenization import sentencepiece_trainer

_REPO = os.path.abspath(os.path.join(__file__, "../../../.."))


def _proto(model_file):
  proto = sentencepiece_model_pb2.ModelProto()
  with open(model_file, "rb") as f:
    proto.ParseFromString(f.read())
  return proto


def test_spm_model_has_albert_layout(spm_model):
  sp = spm.SentencePieceProcessor(model_file=spm_model)
  assert sp.GetPieceSize() == 2000
  assert [sp.IdToPiece(i) for i in range(13)] == [
      "<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]",
      "(", ")", '"', "-", ".", "–", "£", "€"]
  assert (sp.pad_id(), sp.unk_id(), sp.bos_id(), sp.eos_id()) == (0, 1, -1, -1)
  assert all(sp.IsControl(i) for i in (2, 3, 4))
  proto = _proto(spm_model)
  assert proto.normalizer_spec.name == "identity"
  assert proto.trainer_spec.model_type == proto.trainer_spec.UNIGRAM
  assert proto.trainer_spec.character_coverage == pytest.approx(0.99995)
  # Lowercased: no piece holds an ASCII capital.
  assert not any(any("A" <= c <= "Z" for c in p.piece)
                 for p in proto.pieces[5:])
  assert os.path.isfile(spm_model[:-len(".model")] + ".vocab")


def test_cased_training_and_vocab_size(tmp_path, english_corpus):
  prefix = str(tmp_path / "sub" / "cased")  # The directory is created.
  stats = sentencepiece_trainer.train_sentencepiece(
      english_corpus, prefix, vocab_size=500, do_lower_case=False,
      num_threads=2)
  sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
  assert sp.GetPieceSize() == 500 and stats["vocab_size"] == 500
  assert stats["sampled"] == stats["lines"] > 3000
  assert any(any("A" <= c <= "Z" for c in sp.IdToPiece(i))
             for i in range(500))
  assert sorted(os.listdir(tmp_path / "sub")) == ["cased.model", "cased.vocab"]


def test_reservoir_sampling_is_bounded_and_deterministic(tmp_path):
  files = []
  for k in range(2):
    path = tmp_path / f"part{k}.txt"
    path.write_text("".join(f"line {k} {i}\n\n" for i in range(500)))
    files.append(str(path))
  def sample(size, seed):
    stats = {"lines": 0, "skipped_non_utf8": 0}
    return sentencepiece_trainer.sample_lines(files, size, seed, stats), stats
  lines, stats = sample(100, 7)
  assert len(lines) == 100 and stats["lines"] == 1000  # Blank lines skipped.
  assert lines == sample(100, 7)[0]
  assert lines != sample(100, 8)[0]
  assert len(set(lines)) == 100
  # Both files are sampled, about evenly (expected 50 each).
  assert 30 < sum(line.startswith("line 0") for line in lines) < 70
  assert len(sample(0, 7)[0]) == 1000


def test_inputs_globs_and_comma_lists(tmp_path):
  for name in ("a.txt", "b.txt", "c.md"):
    (tmp_path / name).write_text("x\n")
  pattern = str(tmp_path / "*.txt")
  assert sentencepiece_trainer.resolve_inputs(
      f"{pattern},{tmp_path / 'c.md'}") == [
          str(tmp_path / "a.txt"), str(tmp_path / "b.txt"),
          str(tmp_path / "c.md")]
  with pytest.raises(UserInputError, match=r"input file not found: .*zz\.txt"):
    sentencepiece_trainer.resolve_inputs([pattern, str(tmp_path / "zz.txt")])


def test_non_utf8_lines_are_skipped_and_counted(tmp_path, english_corpus):
  corpus = tmp_path / "mixed.txt"
  with open(english_corpus, "rb") as f:
    data = f.read()
  corpus.write_bytes(b"caf\xe9 latin-1 line\n" + data + b"\xff\xfe\n")
  stats = sentencepiece_trainer.train_sentencepiece(
      str(corpus), str(tmp_path / "m"), vocab_size=300, num_threads=2)
  assert stats["skipped_non_utf8"] == 2


def test_bad_inputs_raise_user_errors(tmp_path, english_corpus):
  empty = tmp_path / "empty.txt"
  empty.write_text("\n  \n\n")
  with pytest.raises(UserInputError, match=r"empty corpus.*empty\.txt"):
    sentencepiece_trainer.train_sentencepiece(str(empty), str(tmp_path / "m"))
  with pytest.raises(UserInputError,
                     match=r"--vocab_size=100000 is too large.*at most \d+"):
    sentencepiece_trainer.train_sentencepiece(
        english_corpus, str(tmp_path / "m"), vocab_size=100000, num_threads=2)
  assert sorted(os.listdir(tmp_path)) == ["empty.txt"]  # Nothing left behind.


def _run_tool(*args):
  return subprocess.run(
      [sys.executable, "-m", "tools.train_sentencepiece", *args], cwd=_REPO,
      capture_output=True, text=True, timeout=120, check=False)


def test_cli_success(tmp_path, english_corpus):
  prefix = str(tmp_path / "cli")
  result = _run_tool(f"--input={english_corpus}", f"--model_prefix={prefix}",
                     "--vocab_size=400", "--num_threads=2")
  assert result.returncode == 0, result.stderr
  assert f"wrote {prefix}.model" in result.stdout
  assert spm.SentencePieceProcessor(
      model_file=prefix + ".model").GetPieceSize() == 400


@pytest.mark.parametrize("case", ["missing", "empty"])
def test_cli_user_errors(tmp_path, case):
  path = tmp_path / f"{case}.txt"
  if case == "empty":
    path.write_text("\n\n")
  prefix = str(tmp_path / "out")
  result = _run_tool(f"--input={path}", f"--model_prefix={prefix}")
  assert result.returncode == 1
  error_lines = [line for line in result.stderr.splitlines()
                 if line.startswith("error")]
  assert len(error_lines) == 1 and str(path) in error_lines[0], result.stderr
  assert "Traceback" not in result.stderr
  assert not any(name.startswith("out") for name in os.listdir(tmp_path))
