"""benchmarks.finetuning.peers on the tiny config: one round, its table. The
Hugging Face half runs only where PyTorch and transformers are installed
(the `bench` extra); without them the ours-only table is produced."""

import pytest

from benchmarks.finetuning import peers

pytestmark = pytest.mark.slow


def _rows(table):
  lines = [line for line in table.splitlines() if line.startswith("|")]
  return [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]


def test_tiny_run_produces_its_table(capsys, tmp_path):
  """Ours and, with PyTorch, Hugging Face's dynamic padding; without it
  (the CI venv) the ours-only table, and a note."""
  with_torch = peers.torch_available()
  results = peers.main([
      "--size=tiny", "--seq_length=32", "--steps=2", "--rounds=1",
      "--tasks=sst2", "--contenders=auto,pack,hf_dynamic"])
  rounds = results["sst2"]
  expected = {"auto", "pack"} | ({"hf_dynamic"} if with_torch else set())
  assert len(rounds) == 1 and set(rounds[0]) == expected
  for name, result in rounds[0].items():
    assert result["seconds"] > 0 and result["examples"] > 0, name
    assert result["other_cores"] >= 0
  # auto: buckets fitted to the lengths (multiples of 8, then 32), each
  # traced once; pack: fewer padded positions than auto.
  auto, pack = rounds[0]["auto"], rounds[0]["pack"]
  assert auto["buckets"][-1] == 32 and auto["traces"] == len(auto["buckets"])
  assert (pack["padded_tokens"] / pack["examples"] <
          auto["padded_tokens"] / auto["examples"])
  output = capsys.readouterr().out
  rows = _rows(output)
  assert [r[0] for r in rows] == ["ours", "ours"] + (
      ["Hugging Face"] if with_torch else [])
  assert rows[0][1].startswith("`auto` (") and "--pack_examples" in rows[1][1]
  if with_torch:
    assert rows[2][1] == "dynamic" and rows[2][6] == "1.00x"
  else:
    assert "the Hugging Face rows are left out" in output
  # % of the matmul peak measured in the same run, for every row.
  assert all(r[-1].endswith("%") for r in rows)
  _, args = peers.parse(["--size=tiny", "--seq_length=32", "--tasks=sst2"])
  roof = peers.ceiling(args)
  assert roof["tokens_per_s"] == pytest.approx(roof["peak"] /
                                               roof["ours_flops"])
  # Hugging Face runs every block on every position; ours not the last.
  assert roof["theirs_flops"] > roof["ours_flops"]
  contenders = sorted(expected)
  stats = peers.task_stats(results, contenders, args)
  png = peers.chart(stats, roof, str(tmp_path / "peers.png"))
  assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
  rows = peers.figures(stats, roof, args, "test machine", "python -m x")
  if with_torch:
    (row,) = rows
    best = max(stats["sst2"]["rates"][c][1] for c in ("auto", "pack"))
    assert row["ours"]["value"] == pytest.approx(best, abs=0.06)
    assert row["conditions"].split(":")[0] in ("quiet", "loaded")
  else:
    assert rows == []  # no peer measured: no row for the first table
