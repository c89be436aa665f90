"""corpus_pieces: any piece size partitions the documents the same way."""

import pytest

from albert_common.errors import UserInputError
from data_pipeline.corpora import corpus_pieces

_TEXT = (
    "\ufeffFirst doc, first line.\r\nFirst doc, second line.\r\n\r\n"
    "Second doc.\n   \n\n\u3000\nThird doc, a long line " + "x" * 300 + "\n"
    "Third doc, more.\nStill third.\n\n\n"
    "Fourth caf\xe9.\n")


def _documents(path, piece_bytes, skip=False):
  """Every document of `path`, reading its pieces one by one in order."""
  docs = []
  for spec in corpus_pieces.plan_pieces([path], piece_bytes):
    docs.extend(corpus_pieces.read_piece(spec, skip).documents)
  return docs


@pytest.mark.parametrize("piece_bytes", [1, 2, 3, 7, 16, 31, 64, 100, 4096])
def test_every_piece_size_gives_the_same_documents(tmp_path, piece_bytes):
  path = tmp_path / "c.txt"
  path.write_bytes(_TEXT.encode("utf-8"))
  whole = _documents(str(path), 1 << 20)
  assert [d for _, d in whole] == [
      ["First doc, first line.", "First doc, second line."],
      ["Second doc."],
      ["Third doc, a long line " + "x" * 300, "Third doc, more.",
       "Still third."],
      ["Fourth caf\xe9."]]
  assert _documents(str(path), piece_bytes) == whole


@pytest.mark.parametrize("piece_bytes", [1, 5, 13, 50, 4096])
def test_non_utf8_lines_end_documents_when_skipped(tmp_path, piece_bytes):
  path = tmp_path / "bad.txt"
  path.write_bytes(b"One a.\nOne b.\n\xff\xfe broken\nTwo a.\n\nThree.\n")
  docs = _documents(str(path), piece_bytes, skip=True)
  assert [d for _, d in docs] == [["One a.", "One b."], ["Two a."],
                                  ["Three."]]
  with pytest.raises(UserInputError, match=r"bad.txt:3: not UTF-8"):
    _documents(str(path), piece_bytes)


@pytest.mark.parametrize("piece_bytes", [10, 1000, 70_000])
def test_very_long_lines(tmp_path, piece_bytes):
  path = tmp_path / "long.txt"
  long_line = "word " * 40_000
  path.write_text(f"{long_line}\nshort.\n\n{long_line}\n\nlast.\n")
  docs = [d for _, d in _documents(str(path), piece_bytes)]
  assert docs == [[long_line.strip(), "short."], [long_line.strip()],
                  ["last."]]


def test_pieces_per_file_and_keys(tmp_path):
  a, b = tmp_path / "a.txt", tmp_path / "b.txt"
  a.write_text("x\n" * 50)
  b.write_text("")
  specs = list(corpus_pieces.plan_pieces([str(a), str(b)], 30))
  assert [s.index for s in specs] == [0, 1, 2, 3, 4]
  assert [s.key for s in specs] == [0, 30, 60, 90, 1 << 40]
