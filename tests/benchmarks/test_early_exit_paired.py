"""benchmarks.finetuning.early_exit_paired's statistics and section on
crafted figures (the runs themselves are the harness's)."""

import math

import pytest

from benchmarks.finetuning import early_exit_paired as paired


def test_paired_statistics_on_crafted_differences():
  old = [0.50, 0.40, 0.45, 0.60]
  new = [0.52, 0.39, 0.48, 0.61]  # differences +2, -1, +3, +1 points
  stats = paired.paired_stats(new, old)
  differences = [0.02, -0.01, 0.03, 0.01]
  assert stats["differences"] == pytest.approx(differences)
  assert stats["mean"] == pytest.approx(0.0125)
  sd = math.sqrt(sum((d - 0.0125) ** 2 for d in differences) / 3)
  assert stats["sd"] == pytest.approx(sd)
  assert stats["t"] == pytest.approx(0.0125 / (sd / 2))
  assert stats["signs"] == "+-++"
  one = paired.paired_stats([0.5], [0.4])
  assert one["sd"] == 0.0 and math.isnan(one["t"])


def _scores(full, p1):
  row = dict(full=full, p1=p1, p2=p1, p3=p1)
  return dict(test=row, dev=row)


def test_the_table_gives_each_measure_per_seed_and_paired():
  result = {"exit": {1: dict(old=_scores(0.50, 0.40), new=_scores(0.47,
                                                                  0.41)),
                     2: dict(old=_scores(0.44, 0.40), new=_scores(0.42,
                                                                  0.38))},
            "plain": {}}
  text = paired.table(result, "test")
  lines = text.splitlines()
  full = next(line for line in lines if "full depth" in line)
  # Differences -3 and -2 points: mean -2.50, sd 0.71, t -5.00, 0 +, 2 -.
  cells = [c.strip() for c in full.strip("|").split("|")]
  assert cells[1:10] == ["2", "0.4700", "0.4450", "-2.50", "0.71", "-5.00",
                         "0", "2", "no"]
  assert cells[10] == "-3.0 -2.0"
  p1 = next(line for line in lines if "patience 1" in line)
  assert "+1.0 -2.0" in p1 and "| yes |" in p1
  assert not any("plain" in line for line in lines)


def test_runs_at_chance_are_named():
  labels = [0] * 50 + [1] * 30 + [2] * 20  # majority rate 0.5, 100 rows
  learned = dict(test=dict(full=0.80), labels=dict(test=labels))
  chance = dict(test=dict(full=0.55), labels=dict(test=labels))
  lines = paired.at_chance({"exit": {1: dict(old=learned, new=chance)},
                            "plain": {2: dict(old=learned, new=learned)}})
  assert len(lines) == 1 and lines[0].startswith("exit seed 1 new: test "
                                                 "accuracy 0.5500")


def test_the_verdict_reads_the_difference_against_its_noise():
  def result(pairs):
    return {"exit": {i: dict(old=_scores(o, o), new=_scores(n, n))
                     for i, (o, n) in enumerate(pairs)}, "plain": {}}
  # -2, +1, -1, +2 points: mean 0.
  assert paired.verdict(result([(0.5, 0.48), (0.5, 0.51), (0.5, 0.49),
                                (0.5, 0.52)])).endswith("within noise.")
  # -3, -2, -3, -2: mean -2.5, far beyond 2 sd / sqrt(n).
  assert "NOT within noise" in paired.verdict(result(
      [(0.5, 0.47), (0.5, 0.48), (0.5, 0.47), (0.5, 0.48)]))
  # Small mean but every seed lower: lopsided.
  assert "NOT within noise" in paired.verdict(result(
      [(0.5, 0.49), (0.5, 0.40), (0.5, 0.49), (0.5, 0.499)]))


def test_write_replaces_its_own_section(tmp_path, monkeypatch):
  page = tmp_path / "early-exit.md"
  page.write_text("# Early exit\n\ntext\n\n## Exports\n\nmore\n")
  monkeypatch.setattr(paired, "DOCS_PAGE", str(page))
  revision = dict(key="0" * 16, head="5f0f06f" + "0" * 33, dirty=False)
  out = dict(trees=dict(old=dict(revision=revision),
                        new=dict(revision=dict(revision, head="1" * 40))),
             settings=dict(steps=200, batch=32, lr=2e-3, per_topic=400),
             others=1.5, seconds=600)
  args = type("Args", (), dict(pretrain_steps=300, seq_length=64))
  paired.write_section(args, out, "TABLE 1")
  paired.write_section(args, out, "TABLE 2")
  text = page.read_text()
  assert text.count(paired.SECTION) == 1 and "TABLE 1" not in text
  assert text.startswith("# Early exit\n\ntext\n\n## Exports\n\nmore\n")
  assert "TABLE 2" in text and "loaded: other processes 1.50 cores" in text
  # A section before another heading keeps what follows it.
  page.write_text(f"# E\n\n{paired.SECTION}\n\nold\n\n## Exports\n\nmore\n")
  paired.write_section(args, out, "TABLE 3")
  text = page.read_text()
  assert "old" not in text.split("## Exports")[0]
  assert text.endswith("TABLE 3\n\n## Exports\n\nmore\n")
