"""benchmarks.investigations.before_after makes its report from per-process
numbers.

Fabricated numbers, no benchmark run and no timing asserted.
"""

from benchmarks.investigations import before_after


def _runs(ours, garden):
  return [dict(ours=o, garden=g, ratio=o / g, load=1.0)
          for o, g in zip(ours, garden)]


def test_medians_per_tree_and_after_over_before():
  rounds = {"before": _runs([2.0, 2.2, 9.0], [3.0, 3.3, 12.0]),
            "after": _runs([2.4, 2.1, 2.2], [3.0, 3.0, 3.3])}
  s = before_after.summarize(rounds)
  assert s["before"]["ours"] == 2.2 and s["after"]["ours"] == 2.2
  assert s["before"]["processes"] == 3
  assert abs(s["before"]["ratio"] - 2 / 3) < 1e-9
  assert abs(s["after"]["ratio"] - 0.7) < 1e-9  # 2.1 / 3.0
  assert abs(s["after/before"]["ratio"] - 0.7 / (2 / 3)) < 1e-9
  assert s["after"]["ratio_min"] == 2.2 / 3.3


def test_report_table_and_verdict():
  rounds = {"before": _runs([2.0, 2.0], [3.0, 3.0]),
            "after": _runs([2.4, 2.4], [3.0, 3.0])}
  labels = {"before": "aaaaaaa", "after": "bbbbbbb"}
  table, verdict, _ = before_after.report(rounds, labels)
  lines = table.splitlines()
  assert lines[2].startswith("| before (aaaaaaa) | 2 | 2000 | 3000 | 0.667 |")
  assert lines[4].startswith("| after / before |  | 1.200x | 1.000x | 1.200x")
  assert verdict.startswith("The step regressed: after is 20.0% slower")
  rounds["after"] = _runs([2.05, 2.05], [3.0, 3.0])
  _, verdict, _ = before_after.report(rounds, labels)
  assert verdict.startswith("No regression") and "+2.5%" in verdict


def test_child_runs_the_float32_step_without_memory_children():
  args = before_after.bench_args("base", 8, 128, 3)
  assert args == ["--sizes=base", "--modes=float32", "--no_memory",
                  "--batch_size=8", "--seq_length=128", "--repeats=3"]
