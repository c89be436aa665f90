"""benchmarks.finetuning.distillation's pure parts: the FLOPs formula
against a hand count, the patience nearest a depth, the goal checks on
crafted figures, the first table's row, and its short mode's arguments."""

import pytest

from benchmarks.finetuning import distillation_report as report
from benchmarks.finetuning import distillation_runs as runs


def test_flops_formula_equals_a_hand_count():
  # S=2, E=3, H=4, L=2, I=5, C=2, by hand:
  #   embedding projection 2*S*E*H = 48
  #   per position and application: Q,K,V,O 4 * (2*H*H) = 128; scores and
  #   weighted values 2*2*S*H = 32; FFN 2*(2*H*I) = 80 -> 240
  #   the first application at both positions: 480; the last at [CLS]
  #   only: its keys and values at both positions 2 * (2*2*H*H) = 128,
  #   the rest (240 - 64) at one: 176 -> 304
  #   pooler 2*H*H = 32, classifier 2*H*C = 16
  config = dict(embedding_size=3, hidden_size=4, num_hidden_layers=2,
                intermediate_size=5)
  assert runs.flops_per_example(config, 2, 2) == 48 + 480 + 304 + 32 + 16
  # One application fewer removes exactly one full application's 480.
  assert runs.flops_per_example(dict(config, num_hidden_layers=1), 2,
                                2) == 48 + 304 + 32 + 16


def test_the_benchmarks_students_flops_ratios():
  """With the one definition (benchmarks.ceilings: the last application at
  [CLS] only), fewer applications cut more than in proportion: the last
  one is nearly free, so k = L/4 = 2 is one full application and one at
  [CLS] against seven and one. The fixed costs (embedding projection,
  pooler, head) are not cut. The goal check computes the ratio, never
  assumes it."""
  from benchmarks.finetuning.distillation import MODEL
  from benchmarks.finetuning.distillation import NARROW
  full = runs.flops_per_example(MODEL, 64, 8)

  def ratio(**fields):
    return full / runs.flops_per_example(dict(MODEL, **fields), 64, 8)
  assert 2.2 < ratio(num_hidden_layers=4) < 2.3
  assert 5.9 < ratio(num_hidden_layers=2) < 6.0
  assert 8.4 < full / runs.flops_per_example(NARROW, 64, 8) < 8.5
  assert NARROW["vocab_size"] == MODEL["vocab_size"]
  assert NARROW["num_attention_heads"] == MODEL["num_attention_heads"]


def test_patience_nearest_a_depth():
  table = [dict(patience=0, mean_exit_layer=8.0),
           dict(patience=1, mean_exit_layer=2.5),
           dict(patience=2, mean_exit_layer=3.7),
           dict(patience=3, mean_exit_layer=4.2),
           dict(patience=4, mean_exit_layer=5.0)]
  assert report.patience_for_depth(table, 4) == 3  # 0.2 away, not 0.3
  assert report.patience_for_depth(table, 3.95) == 2  # a tie: the smaller
  assert report.patience_for_depth(table, 9) == 4  # never patience 0
  with pytest.raises(ValueError):
    report.patience_for_depth(table[:1], 4)


def _crafted(distilled=(0.90, 0.91, 0.92), small=(0.88, 0.89, 0.90)):
  contenders = {
      "teacher": dict(accuracy=[0.92, 0.93, 0.91]),
      "distilled": dict(accuracy=list(distilled)),
      "alone": dict(accuracy=[0.80, 0.82, 0.81]),
      "cut": dict(accuracy=[0.70, 0.60, 0.65]),
      "small": dict(accuracy=list(small)),
      "alone small": dict(accuracy=[0.75, 0.76, 0.74]),
      "cut small": dict(accuracy=[0.30, 0.31, 0.32])}
  flops = {"teacher": 800, "distilled": 400, "small": 200,
           "alone": 400, "cut": 400, "alone small": 200, "cut small": 200}
  return contenders, flops


def _checks(contenders, flops, teacher_ms=10.0, small_ms=1.0):
  checks = report.goals(contenders, "teacher", "distilled", ["small"],
                        {"distilled": ["alone", "cut"],
                         "small": ["alone small", "cut small"]},
                        flops, dict(teacher_savedmodel_ms=teacher_ms,
                                    litert_ms={"small": small_ms}))
  return [c["met"] for c in checks], checks


def test_goals_met_on_crafted_figures():
  met, checks = _checks(*_crafted())
  assert met == [True] * 7, checks
  assert "98.9%" in checks[0]["figures"]  # 0.91 / 0.92
  assert "4.00x fewer FLOPs" in checks[1]["figures"]
  assert "10.0x" in checks[-1]["figures"]


def test_each_goal_fails_on_its_own_crafted_figures():
  contenders, flops = _crafted(distilled=(0.89, 0.90, 0.91))  # 97.8%
  assert _checks(contenders, flops)[0][0] is False
  contenders, flops = _crafted(small=(0.86, 0.87, 0.85))  # 94.6%
  assert _checks(contenders, flops)[0][1] is False
  contenders, flops = _crafted()
  flops["small"] = 201  # 3.98x fewer FLOPs: not 4x
  assert _checks(contenders, flops)[0][1] is False
  # Beating "alone" by 0.10 on the mean, per seed +0.05, +0.15, +0.10:
  # the paired mean does not exceed its spread (0.10).
  contenders, flops = _crafted(distilled=(0.85, 0.97, 0.91))
  met, checks = _checks(contenders, flops)
  assert met[2] is False and met[3] is True
  assert "signs +++" in checks[2]["figures"]
  met, _ = _checks(*_crafted(), teacher_ms=7.9, small_ms=1.0)
  assert met[-1] is False


def test_beats_is_a_paired_test():
  """Arms whose seed spreads overlap but whose pairs agree beat; a larger
  mean gain whose pairs disagree does not (the old rule said the reverse
  of both)."""
  contenders, flops = _crafted()
  contenders["alone"] = dict(accuracy=[0.80, 0.88, 0.84])  # spread 0.08
  contenders["distilled"] = dict(accuracy=[0.83, 0.91, 0.87])  # +0.03 each
  met, checks = _checks(contenders, flops)
  assert met[2] is True, checks[2]
  assert "paired mean +0.0300 against spread 0.0000" in checks[2]["figures"]
  contenders["distilled"] = dict(accuracy=[0.99, 0.86, 0.90])  # +.19 -.02 +.06
  met, checks = _checks(contenders, flops)
  assert met[2] is False and "signs +-+" in checks[2]["figures"]
  # One seed: no spread, never met.
  one = {k: dict(accuracy=v["accuracy"][:1]) for k, v in _crafted()[0].items()}
  assert _checks(one, flops)[0][2] is False


def test_contenders_at_chance_write_no_row():
  from benchmarks import accuracy
  labels = [0, 1, 2, 3] * 50  # majority 0.25, 2 sd = 0.061
  contenders = {"good": dict(accuracy=[0.60, 0.62]),
                "chance": dict(accuracy=[0.30, 0.29])}
  refused = report.at_chance(contenders, labels)
  assert list(refused) == ["chance"]
  assert "within 2 binomial standard deviations" in refused["chance"]
  table = report.contenders_table(
      {k: dict(v, macro_f1=v["accuracy"], depth=[1]) for k, v in
       contenders.items()}, {"good": 1e6, "chance": 1e6}, {},
      skip=tuple(refused))
  assert "| good |" in table and "chance" not in table
  with pytest.raises(accuracy.ChanceError):
    accuracy.check_above_chance("chance", 0.295, labels)


def test_figures_row_is_in_the_first_tables_form():
  from benchmarks import figures
  from benchmarks import run_all
  contenders, flops = _crafted()
  timings = {"teacher": dict(savedmodel_ms=10.0),
             "distilled": dict(savedmodel_ms=6.0)}
  row = report.figures_row(
      contenders, timings, "teacher", "distilled", flops,
      "2-core Intel Xeon", "python -m benchmarks.finetuning.distillation "
      "--write", "quiet", "tiny", peak=1e5)
  row["digest"] = figures.digest(row)
  figures.check(row, "Distillation", run_all.HARNESSES)
  assert row["ours"]["value"] == 6.0 and row["peer"]["value"] == 10.0
  # The student's FLOPs at the peak: 1000 ms x FLOPs / (FLOP/s).
  assert row["ceiling"]["value"] == round(1000 * flops["distilled"] / 1e5,
                                          3)


def test_short_args_parse():
  from benchmarks.finetuning import distillation
  args = distillation.build_parser().parse_args(distillation.SHORT_ARGS)
  assert args.write and args.seeds == 1
  assert args.intermediate_losses == "hidden_projection"


def test_write_puts_the_row_the_section_and_the_docs_figures(tmp_path,
                                                            monkeypatch):
  """--write on crafted figures: BENCHMARKS.md's section with its row (in
  the first table's form), the chart, and the docs page's figures between
  its markers (its text kept)."""
  import argparse
  import shutil

  from benchmarks import charts
  from benchmarks import common
  from benchmarks import figures
  from benchmarks import run_all
  from benchmarks.finetuning import distillation
  md = tmp_path / "BENCHMARKS.md"
  md.write_text("# Benchmarks\n\n## Fine-tuning\n\n## History\n")
  page = tmp_path / "page.md"
  shutil.copy(distillation.DOCS_PAGE, page)
  monkeypatch.setattr(common, "BENCHMARKS_MD", str(md))
  monkeypatch.setattr(charts, "CHARTS_DIR", str(tmp_path))
  monkeypatch.setattr(distillation, "DOCS_PAGE", str(page))
  contenders, flops = _crafted()
  timings = {"teacher": dict(savedmodel_ms=10.0),
             "distilled": dict(savedmodel_ms=6.0)}
  result = dict(contenders=contenders, timings=timings, flops=flops,
                layers=8, names=dict(teacher="teacher",
                                     distilled="distilled"), peak=1e5)
  args = argparse.Namespace(seq_length=64, seeds=3, runs_from="")
  distillation.write_outputs(args, result, "TABLE 0.9100", "quiet")
  (_, section, row), = figures.read(md.read_text())
  figures.check(row, section, run_all.HARNESSES)
  assert section == "Distillation" and row["ours"]["value"] == 6.0
  assert (tmp_path / "distillation.png").exists()
  text = page.read_text()
  assert "TABLE 0.9100" in text and "Not measured yet" not in text
  assert text.startswith("# Distillation: the benchmark")
  assert text.rstrip().endswith(distillation.DOCS_END)


def _run_folder(tmp_path, early_exit=False):
  """A run folder as run_classifier leaves it (albert_config.json,
  labels.json, ckpt-1..3), checkpoint k answering class k - 1 from every
  head; and dev / test CSVs whose label shares are known."""
  import numpy as np
  import tensorflow as tf

  from albert_tf.config import AlbertConfig
  from albert_tf.models import AlbertEarlyExitClassifier
  from albert_tf.models.albert_classifier import AlbertClassifier
  from albert_tf.networks.albert_encoder import AlbertEncoder
  from data_pipeline.tasks import label_list
  config = AlbertConfig(vocab_size=2000, embedding_size=16, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=32)
  run = tmp_path / ("pabee" if early_exit else "run")
  run.mkdir()
  config.to_json_file(str(run / "albert_config.json"))
  label_list.write(str(run), label_list.LabelList(
      "classification", ("gui", "email", "files")))
  if early_exit:
    model = AlbertEarlyExitClassifier(AlbertEncoder(config), 3,
                                      dropout_rate=0.0)
  else:
    model = AlbertClassifier(AlbertEncoder(config, name="encoder"), 3)
  model({k: tf.zeros([1, 32], tf.int32) for k in (
      "input_word_ids", "input_mask", "input_type_ids")})
  checkpoint = tf.train.Checkpoint(model=model)
  for step in (1, 2, 3):
    bias = np.full(3, -50.0, np.float32)
    bias[step - 1] = 50.0
    if early_exit:
      model.head_bias.assign(np.tile(bias, (2, 1)))
    else:
      model.classifier.dense.bias.assign(bias)
    # As the runner's manager names them: ckpt-1, ckpt-2, ckpt-3.
    assert checkpoint.save(str(run / "ckpt")).endswith(f"ckpt-{step}")
  # dev: gui 1, email 3, files 2 rows; test: gui 2, email 1, files 3.
  texts = {"gui": "Draw the widget.", "email": "Close the mailbox.",
           "files": "Remove the file."}
  for name, counts in (("dev", (1, 3, 2)), ("test", (2, 1, 3))):
    rows = [f"{texts[label]},{label}" for label, n in
            zip(("gui", "email", "files"), counts) for _ in range(n)]
    (tmp_path / f"{name}.csv").write_text("text,label\n" + "\n".join(rows)
                                          + "\n")
  return str(run)


def test_every_checkpoint_is_one_look_on_dev_and_test(tmp_path, spm_model):
  """Checkpoint k answers class k - 1: dev and test accuracies are the
  label shares; dev chooses checkpoint 2 (3 of 6), whose test figure
  (1 of 6) is reported, not test's best (checkpoint 3, 3 of 6)."""
  from benchmarks import accuracy
  from benchmarks.finetuning import distillation_eval as evaluate
  run = _run_folder(tmp_path)
  splits = {name: evaluate.split_inputs(run, str(tmp_path / f"{name}.csv"),
                                        spm_model, 32)
            for name in ("dev", "test")}
  looks = evaluate.classifier_looks(run, splits)
  assert [look["at"] for look in looks] == [1, 2, 3]
  assert [look["dev"] for look in looks] == pytest.approx([1 / 6, 3 / 6,
                                                           2 / 6])
  assert [look["test"]["accuracy"] for look in looks] == pytest.approx(
      [2 / 6, 1 / 6, 3 / 6])
  chosen = accuracy.select(looks)
  assert chosen["at"] == 2 and chosen["test"]["accuracy"] == pytest.approx(
      1 / 6) and chosen["last"]["accuracy"] == pytest.approx(3 / 6)
  # The static cut of one application: the same head, the same answers.
  cut = evaluate.classifier_looks(run, splits, depth=1)
  assert [look["dev"] for look in cut] == [look["dev"] for look in looks]
  with pytest.raises(accuracy.LooksError, match="3 checkpoints kept, not 4"):
    evaluate.classifier_looks(run, splits, looks=4)


def test_an_early_exit_run_gives_cut_and_exit_looks(tmp_path, spm_model):
  from benchmarks.finetuning import distillation_eval as evaluate
  run = _run_folder(tmp_path, early_exit=True)
  splits = {name: evaluate.split_inputs(run, str(tmp_path / f"{name}.csv"),
                                        spm_model, 32)
            for name in ("dev", "test")}
  cuts, exits = evaluate.pabee_looks(run, splits, 1)
  assert [look["dev"] for look in cuts] == pytest.approx([1 / 6, 3 / 6,
                                                          2 / 6])
  # Every head agrees: patience 1 exits after application 2 everywhere.
  assert all(look["test"]["patience"] == 1 and look["test"]["depth"] == 2.0
             for look in exits)
  assert [look["test"]["accuracy"] for look in exits] == pytest.approx(
      [2 / 6, 1 / 6, 3 / 6])


def test_soft_target_confidence_on_crafted_logits():
  """Accuracy and mean top probability of softmax(logits / T), by hand."""
  import numpy as np
  logits = np.array([[4.0, 0.0, 0.0],    # right, T=2: e^2 / (e^2 + 2)
                     [0.0, 2.0, 0.0],    # wrong (label 0): e / (e + 2)
                     [1.0, 1.0, 1.0]])   # a tie: argmax 0, right; 1/3
  labels = np.array([0, 0, 0])
  got = report.soft_target_confidence(logits, labels, 2.0)
  e = np.e
  want_top = (e ** 2 / (e ** 2 + 2) + e / (e + 2) + 1 / 3) / 3
  assert got["accuracy"] == pytest.approx(2 / 3)
  assert got["mean_top_probability"] == pytest.approx(want_top, rel=1e-12)
  assert got["temperature"] == 2.0 and got["records"] == 3
  # A higher temperature flattens: the top probability falls, accuracy stays.
  hotter = report.soft_target_confidence(logits, labels, 8.0)
  assert hotter["accuracy"] == got["accuracy"]
  assert hotter["mean_top_probability"] < got["mean_top_probability"]
  # Very confident logits: near one-hot even at T=2.
  sure = report.soft_target_confidence(np.array([[40.0, 0.0]]), [0], 2.0)
  assert sure["mean_top_probability"] > 1 - 1e-8


def test_the_section_reports_the_teachers_confidence():
  from benchmarks.finetuning import distillation
  per_seed = [dict(accuracy=0.99, mean_top_probability=0.97,
                   temperature=2.0, records=3200),
              dict(accuracy=0.97, mean_top_probability=0.95,
                   temperature=2.0, records=3200)]
  line = report.confidence_line(per_seed)
  assert "3200 training records" in line and "T=2" in line
  assert "accuracy 0.9800" in line and "mean top probability 0.9600" in line
  assert "seed 1: accuracy 0.9700, mean top probability 0.9500" in line
  contenders, flops = _crafted()
  for figures in contenders.values():
    figures.update(macro_f1=figures["accuracy"], depth=[1, 1, 1])
  result = dict(contenders=contenders, flops=flops, timings={},
                checks=[], tried={"none": 0.9}, loss="none",
                layers=8, patience=2, confidence=per_seed)
  assert line in distillation._report(None, result)


def test_runs_from_reads_a_commits_runs_and_trains_none(tmp_path,
                                                        monkeypatch):
  """--runs_from: a run that commit's code made is read; a missing run or
  source model is one line (nothing is trained), and a run of other code
  is still refused."""
  from benchmarks import revision
  from benchmarks.finetuning import distillation_runs as runs
  made = dict(key="0123456789abcdef", head="c" * 40, dirty=False)
  monkeypatch.setattr(revision, "code_revision_at", lambda commit: made)
  monkeypatch.setattr(runs, "_REVISION", [])
  runs.read_runs_of("c0ffee")
  done = tmp_path / "done"
  done.mkdir()
  (done / "eval_results.json").write_text('{"eval_accuracy": 0.5}')
  revision.stamp(str(done), made)
  assert runs.run_tool("tools.run_classifier", [], str(done),
                       "done") == {"eval_accuracy": 0.5}
  with pytest.raises(revision.StaleRunError, match="trains none"):
    runs.run_tool("tools.run_classifier", [], str(tmp_path / "missing"),
                  "missing")
  assert not (tmp_path / "missing.log").exists()
  other = tmp_path / "other"
  other.mkdir()
  (other / "eval_results.json").write_text("{}")
  revision.stamp(str(other), dict(made, key="f" * 16))
  with pytest.raises(revision.StaleRunError, match="delete the folder"):
    runs.run_tool("tools.run_classifier", [], str(other), "other")
  with pytest.raises(revision.StaleRunError, match="no source model"):
    runs.source_model(dict(vocab_size=100), 10, 16, cache=str(tmp_path))
