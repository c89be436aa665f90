"""benchmarks.finetuning.peers on the tiny config: one round, its table. The
Hugging Face half runs only where PyTorch and transformers are installed
(the `bench` extra); without them the ours-only table is produced."""

import pytest

from benchmarks.finetuning import peers

pytestmark = pytest.mark.slow


def _rows(table):
  lines = [line for line in table.splitlines() if line.startswith("|")]
  return [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]


def test_tiny_run_produces_its_table(capsys):
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
