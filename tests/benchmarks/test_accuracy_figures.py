"""benchmarks.accuracy on crafted figures: selection on dev reports test,
paired seeds, the chance refusal; and the four-way topic split."""

import pytest

from benchmarks import accuracy
from benchmarks.finetuning import topic_splits


def test_select_reports_test_at_devs_choice_and_the_last_look():
  looks = [dict(at=100, dev=0.60, test=dict(accuracy=0.90)),
           dict(at=200, dev=0.70, test=dict(accuracy=0.50)),
           dict(at=300, dev=0.70, test=dict(accuracy=0.55))]
  chosen = accuracy.select(looks)
  # Dev's best (the earlier of a tie), not test's best (0.90).
  assert chosen["at"] == 200 and chosen["test"]["accuracy"] == 0.50
  assert chosen["last"]["accuracy"] == 0.55 and chosen["looks"] == 3
  with pytest.raises(ValueError):
    accuracy.select([])


def test_unequal_looks_are_refused():
  accuracy.check_equal_looks({"a": 3, "b": 3})
  with pytest.raises(accuracy.LooksError, match="a 3, b 1"):
    accuracy.check_equal_looks({"a": 3, "b": 1})


def test_paired_differences_mean_spread_and_signs():
  pair = accuracy.paired([0.80, 0.90, 0.70], [0.75, 0.80, 0.72])
  assert pair["differences"] == pytest.approx([0.05, 0.10, -0.02])
  assert pair["mean"] == pytest.approx(0.13 / 3)
  assert pair["spread"] == pytest.approx(0.12)
  assert pair["signs"] == "++-"
  with pytest.raises(ValueError):
    accuracy.paired([0.1], [0.1, 0.2])


def test_beats_needs_the_paired_mean_above_its_spread():
  # Each arm's seed spread is 0.20, but the pairs agree: +0.03 every seed.
  a, b = [0.63, 0.83, 0.73], [0.60, 0.80, 0.70]
  check = accuracy.beats(a, b)
  assert check["met"] and check["signs"] == "+++"
  assert "paired mean +0.0300" in check["figures"]
  # The same means, pairs that disagree: +0.10, -0.04, +0.03.
  assert not accuracy.beats([0.70, 0.76, 0.73], [0.60, 0.80, 0.70])["met"]
  # Fewer than 3 seeds: never met. Two equal differences have spread 0,
  # which any positive mean would exceed.
  for a_few, b_few in (([0.9], [0.1]), ([0.63, 0.83], [0.60, 0.80])):
    few = accuracy.beats(a_few, b_few)
    assert not few["met"] and "fewer than 3 seeds" in few["figures"]
  # A margin is subtracted first.
  assert not accuracy.beats(a, b, margin=0.031)["met"]


def test_chance_is_two_binomial_sds_above_the_majority_rate():
  labels = [0] * 50 + [1] * 30 + [2] * 20  # majority 0.5, n 100, sd 0.05
  assert accuracy.majority_rate(labels) == 0.5
  assert accuracy.binomial_sd(0.5, 100) == pytest.approx(0.05)
  accuracy.check_above_chance("m", 0.61, labels)
  with pytest.raises(accuracy.ChanceError, match=r"m: test accuracy 0.5900 "
                     r"is within 2 binomial standard deviations \(0.1000\) "
                     r"of the majority-class rate 0.5000 on 100 rows"):
    accuracy.check_above_chance("m", 0.59, labels)
  # ln 3's model: 0.318 on a balanced 3-class set of 192 rows.
  with pytest.raises(accuracy.ChanceError):
    accuracy.check_above_chance("early exit", 0.318, [0, 1, 2] * 64)


def _by_file():
  """Two topics; each file's texts named after it."""
  return {
      topic: [(bytes([i]), [f"{topic}{i}-{j}" for j in range(10)])
              for i in range(files)]
      for topic, files in (("a", 20), ("b", 10))}


def test_topic_split_is_by_file_and_unlabeled_is_on_task():
  splits = topic_splits.split(_by_file(), max_per_topic=40)
  file_of = {}
  for name, rows in splits.items():
    for row in rows:
      text = row if name == "unlabeled" else row[0]
      file_of.setdefault(text.split("-")[0], set()).add(name)
  # A file's texts are in one split (train's overflow goes unlabeled).
  assert all(len(names) == 1 or names == {"train", "unlabeled"}
             for names in file_of.values())
  # Test first: the files up to 15% of a topic's rows (a0-a2 of a's 200
  # rows, b0-b1 of b's 100), of which 0.25 x 40 = 10 rows a topic are kept.
  assert {t for t, _ in splits["test"]} == {f"{topic}0-{j}" for topic in "ab"
                                            for j in range(10)}
  assert "a2" not in file_of and file_of["a3"] == {"dev"}
  # Train caps a at 40 rows; unlabeled holds at least as many rows.
  assert sum(1 for _, topic in splits["train"] if topic == "a") == 40
  assert len(splits["unlabeled"]) >= len(splits["train"])
  assert not {t for t, _ in splits["train"]} & set(splits["unlabeled"])
  with pytest.raises(topic_splits.SplitError, match="lower --max_per_topic"):
    topic_splits.split({"a": [(b"x", ["t1"]), (b"y", ["t2"]),
                              (b"z", ["t3", "t4"]), (b"w", ["t5"])]}, 10)
