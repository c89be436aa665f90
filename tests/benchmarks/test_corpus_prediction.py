"""benchmarks.serving.corpus: its first-table row from given figures (no
timing): the fields, ours against the faster peer, the direct ceiling
(the export called directly) as the row's, the FLOPs ceiling every
contender stays under; a loaded run, one whose FLOPs ceiling a contender
passed, or one where ours passed the direct ceiling, writes no row; the
FLOPs ceiling at the export's bucket shapes, the faster framework's; the
positions computed under tools.predict's rule (the timed runs at its
default shards, batches across buckets) and the direct ceiling's;
the corpus's paragraphs; and (slow) the tiny run."""

import argparse
import datetime
import os
import shutil

import numpy as np
import pytest

from benchmarks import common

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
COMMAND = "python -m benchmarks.serving.corpus --size=base --write"


@pytest.fixture
def md(tmp_path, monkeypatch):
  """A copy of the repository's BENCHMARKS.md that --write writes into."""
  path = str(tmp_path / "BENCHMARKS.md")
  shutil.copy(os.path.join(ROOT, "BENCHMARKS.md"), path)
  monkeypatch.setattr(common, "BENCHMARKS_MD", path)
  return path


def _rows(path, order):
  """The figures blocks of `order`, each checked as benchmarks.summary
  checks it."""
  from benchmarks import figures
  from benchmarks import run_all
  found = [(section, row) for _, section, row in figures.read(
      open(path, encoding="utf-8").read()) if row.get("order") == order]
  for section, row in found:
    figures.check(row, section, run_all.HARNESSES)
  return [row for _, row in found]


def _measured(others=0.0, hf=12.0, ceiling=80.0, direct=75.0):
  """A run's figures: ours 50 rows/s, Beam 40 and 70, the stock handler
  10 (30 with its buckets), Hugging Face `hf`, the direct ceiling
  `direct`, the FLOPs ceiling `ceiling`."""
  from benchmarks.serving import corpus

  def result(rate, contender, workers=1, rss=900.0):
    return dict(rows=1000, seconds=1000 / rate, rss_mb=rss,
                rows_per_s=rate, contender=contender, workers=workers)
  stock = "Beam TFModelHandlerTensor without buckets (stock, 2 workers)"
  bucketed = ("Beam TFModelHandlerTensor with batch_bucket_boundaries "
              "(stock, one thread)")
  hf_name = "Hugging Face pipeline (PyTorch)"
  return dict(
      results={corpus.OURS: result(50.0, "ours"),
               "ours, Beam DirectRunner, 1 worker": result(40.0, "ours_beam"),
               "ours, Beam DirectRunner, 2 workers": result(70.0, "ours_beam",
                                                            2),
               stock: result(10.0, "stock_beam", 2),
               bucketed: dict(result(30.0, "stock_beam"), buckets=True),
               hf_name: result(hf, "hf", rss=500.0),
               corpus.DIRECT: dict(result(direct, "direct"), tokens=27500,
                                   positions=28000)},
      peers=[stock, bucketed, hf_name], rss={500: 880.0, 2000: 890.0},
      ceiling=dict(peak=400e9, flops_per_row=400e9 / ceiling,
                   rows_per_s=ceiling, mean_tokens=27.5),
      peaks={32: {"TensorFlow": 300e9, "PyTorch": 350e9},
             128: {"TensorFlow": 400e9, "PyTorch": 380e9}},
      padding=dict(ours=dict(tokens=27500, positions=33000),
                   direct=dict(tokens=27500, positions=28000)),
      buckets=[32, 64, 128], batch_size=32, rows_per_shard=10000,
      rss_rows_per_shard=100, rows=1000, beam_shards=10, others=others)


def _write(measured):
  from benchmarks.serving import corpus
  args = argparse.Namespace(size="base")
  corpus.write(args, measured, corpus.report(measured), COMMAND)


def test_the_row_is_ours_against_the_faster_peer_under_its_ceiling(md):
  from benchmarks import summary
  from benchmarks.serving import corpus
  _write(_measured())
  [row] = _rows(md, corpus.ORDER)
  assert row["machine"] == common.machine_label()
  assert row["date"] == datetime.date.today().isoformat()
  assert row["command"] == COMMAND
  assert row["contender"] == "peer" and row["higher_is_better"] is True
  assert (row["ours"]["value"], row["reached"]) == (50.0, 50.0)
  # The fastest peer: the stock handler with its buckets at 30 rows/s (not
  # Hugging Face's 12, not the stock handler's 10 without buckets).
  assert row["peer"]["value"] == 30.0
  assert summary.short(row["peer"]["label"]) == (
      "Beam TFModelHandlerTensor with batch_bucket_boundaries (stock, one "
      "thread)")
  assert summary.short(row["ours"]["label"]) == "tools.predict in-process"
  # The row's ceiling: the direct one (75), the FLOPs one in its label.
  assert row["ceiling"]["value"] == 75.0
  assert row["ceiling"]["unit"] == row["ours"]["unit"] == "rows/s"
  assert row["ceiling"]["label"].startswith(
      "the export called directly in length-sorted batches of 32")
  assert "FLOPs ceiling 80.0 rows/s" in row["ceiling"]["label"]
  assert "400 GFLOP/s" in row["ceiling"]["label"]
  assert "880 MB at 500 rows, 890 MB at 2,000" in row["ours"]["label"]
  assert row["conditions"] == "quiet: other processes 0.00 cores over the run"
  assert "1,000 stdlib paragraphs" in row["job"]
  assert summary.share(row) == pytest.approx(50 / 75)
  assert summary.ratio(row) == pytest.approx(50 / 30)
  text = open(md, encoding="utf-8").read()
  section = text[text.index(f"### {corpus.SECTION}"):]
  # Shares of the direct ceiling (75) and of the FLOPs ceiling (80).
  assert ("| contender | rows/s | seconds | peak RSS MB | / in-process | "
          "% of direct ceiling | % of FLOPs ceiling |") in section
  assert "| ours, in-process | 50.0 | 20.0 | 900 | 1.00 | 67% | 62% |" in (
      section)
  assert f"| {corpus.DIRECT} | 75.0 | 13.3 | 900 | 1.50 | 100% | 94% |" in (
      section)
  assert "Beam 2 workers >= 1.6x 1 worker: met" in section
  # The goal is against the stock handler without buckets (10 rows/s).
  assert "in-process >= 2x the stock handler (no buckets): met" in section
  assert "in-process >= 90% of the direct ceiling: NOT met" in section
  assert "peak RSS at 4x the rows within 10%: met" in section
  assert "after its model loaded" not in section  # loading not timed
  # With 5 of ours' 20 s loading the model: 1000 / 15 = 66.7 rows/s after.
  measured = _measured()
  measured["results"][corpus.OURS]["load_seconds"] = 5.0
  assert ("In-process after its model loaded: 66.7 rows/s, 89% of the "
          "direct ceiling (loading took 5.0 s of its 20.0") in corpus.goals(
              measured)
  assert "Fixed costs" not in section  # the first batch not timed


def test_the_fixed_costs_of_ours_in_process_and_on_beam():
  """Seconds before the first batch and loading the export, and the
  rows/s after loading, for ours in-process and on Beam (not for the
  others, which time neither)."""
  from benchmarks.serving import corpus
  from benchmarks.serving import corpus_setup
  measured = _measured()
  results = measured["results"]
  results[corpus.OURS].update(load_seconds=5.0, first_batch_seconds=6.5)
  # Beam 1 worker: 1000 rows in 25 s, 4 of them loading: 47.6 rows/s.
  results["ours, Beam DirectRunner, 1 worker"].update(
      load_seconds=4.0, first_batch_seconds=9.3)
  line = corpus_setup.fixed_costs_line(results)
  assert line.startswith("Fixed costs")
  assert ("ours, in-process: 6.5 s before its first batch of its 20.0 "
          "(loading the export 5.0), 66.7 rows/s after its model loaded; "
          "ours, Beam DirectRunner, 1 worker: 9.3 s before its first batch "
          "of its 25.0 (loading the export 4.0), 47.6 rows/s after its "
          "model loaded.") in line
  assert "2 workers" not in line and "stock" not in line
  assert line in corpus.report(measured)
  assert corpus_setup.fixed_costs_line(_measured()["results"]) == ""


def test_a_loaded_run_or_a_passed_ceiling_writes_no_row(md):
  """Other processes at 0.5 cores: the section says so, no row (and the
  row a quiet run wrote in it goes); a peer above the ceiling: no row."""
  from benchmarks.serving import corpus
  _write(_measured())
  assert len(_rows(md, corpus.ORDER)) == 1
  _write(_measured(others=0.5))
  assert _rows(md, corpus.ORDER) == []
  text = open(md, encoding="utf-8").read()
  assert ("loaded: other processes 0.50 cores over the run (no first-table "
          "row from this run)") in text
  _write(_measured(hf=90.0))
  assert _rows(md, corpus.ORDER) == []
  assert ("Hugging Face pipeline (PyTorch) passed the FLOPs ceiling, which "
          "is then no limit") in open(md, encoding="utf-8").read()
  # The direct ceiling above the FLOPs one: refused as any contender.
  _write(_measured(direct=85.0))
  assert _rows(md, corpus.ORDER) == []
  # Ours (50) past the direct ceiling (45): said, and no row.
  _write(_measured(direct=45.0))
  assert _rows(md, corpus.ORDER) == []
  text = open(md, encoding="utf-8").read()
  assert ("ours, in-process, ours, Beam DirectRunner, 2 workers passed the "
          "direct ceiling") in text
  assert "in-process >= 90% of the direct ceiling: met" in text
  # A peer past the direct ceiling (not ours): said, the row written.
  _write(_measured(hf=78.0))
  assert len(_rows(md, corpus.ORDER)) == 1
  assert ("Hugging Face pipeline (PyTorch) passed the direct ceiling"
          ) in open(md, encoding="utf-8").read()


def test_the_ceiling_is_the_fastest_peak_at_the_bucket_shapes(monkeypatch):
  """Peaks measured at [batch x bucket, H] for each bucket in TensorFlow
  and PyTorch; the ceiling: the real tokens' FLOPs at the largest."""
  from benchmarks import ceilings
  from benchmarks import roofline
  from benchmarks.serving import corpus_setup
  config = corpus_setup.model_config("tiny", 128)
  seen = []
  monkeypatch.setattr(roofline, "step_peak", lambda h, i, rows, *a: (
      seen.append(("TensorFlow", h, i, rows)), 1e9 * rows)[1])
  monkeypatch.setattr(roofline, "torch_step_peak", lambda h, i, rows, *a: (
      seen.append(("PyTorch", h, i, rows)), 2e9 * rows if rows < 2048 else
      0.5e9 * rows)[1])
  peaks = corpus_setup.bucket_peaks(config, 32, [32, 64, 128], 2)
  assert sorted(r for _, _, _, r in seen) == [1024, 1024, 2048, 2048, 4096,
                                              4096]
  assert {(h, i) for _, h, i, _ in seen} == {(32, 64)}
  assert peaks[32] == {"TensorFlow": 1024e9, "PyTorch": 2048e9}
  tokens = np.array([10, 10, 30, 128])
  roof = corpus_setup.ceiling(config, tokens, peaks)
  assert roof["peak"] == 4096e9  # TensorFlow at bucket 128
  flops = (2 * ceilings.encoder_flops(config, 10) +
           ceilings.encoder_flops(config, 30) +
           ceilings.encoder_flops(config, 128))
  assert roof["rows_per_s"] == pytest.approx(4096e9 * 4 / flops)
  assert roof["mean_tokens"] == 44.5


def test_positions_under_the_tools_rule_and_the_direct_ceilings():
  """computed_positions: rows sorted within each shard, cut every
  batch_size rows across buckets, each batch at its longest row (ours, a
  classifier export); sorted over the whole input (the direct ceiling's,
  ours in one shard); and the report's padding and RSS lines."""
  from benchmarks.serving import corpus
  from benchmarks.serving import corpus_setup
  tokens = np.array([10, 40, 12, 33, 70, 5])
  # Shards [10, 40, 12] and [33, 70, 5], batches of 2: [10, 12] at 12,
  # [40]; [5, 33] at 33 (across buckets 32 and 64), [70].
  assert corpus_setup.computed_positions(tokens, 2, (32, 64, 128), 3) == (
      dict(tokens=170, positions=2 * 12 + 40 + 2 * 33 + 70))
  # One shard: [5, 10] at 10, [12, 33] at 33, [40, 70] at 70: no partial
  # batch at a bucket, the direct ceiling's batches.
  one = dict(tokens=170, positions=2 * 10 + 2 * 33 + 2 * 70)
  assert corpus_setup.computed_positions(tokens, 2, (32, 64, 128)) == one
  assert corpus_setup.computed_positions(tokens, 2) == one
  # The timed runs' shards: the tool's own default.
  assert corpus_setup.tool_rows_per_shard() == 10000
  text = " ".join(corpus.report(_measured()).split())
  assert ("Padding (real tokens over the positions computed): ours "
          "in-process 83.3% (33.0 positions a row for 27.5 real tokens: "
          "rows sorted by length over the whole input (one shard: "
          "tools.predict's default --rows_per_shard, 10,000 rows), cut "
          "every 32 rows, across the export's buckets (32, 64, 128), each "
          "batch at its longest row, as tools.predict runs a classifier "
          "export); the direct ceiling 98.2% (28.0 positions a row: sorted "
          "over the whole input, no buckets).") in text
  assert ("Peak RSS of ours in-process: 880 MB at 500 rows, 890 MB at 2,000 "
          "rows (+1.1%), two runs of their own in shards of 100 rows (the "
          "timed runs: tools.predict's default shards of 10,000; ours on "
          "Beam: 10 shards, the bundles its workers share).") in text
  sharded = " ".join(corpus_setup.padding_line(
      dict(_measured(), rows=25000)).split())
  assert ("rows sorted by length over each shard of 10,000 rows "
          "(tools.predict's default --rows_per_shard), cut every 32 rows"
          ) in sharded
  assert "Direct ceiling (\"% of direct ceiling\", the issue's ceiling): " \
      "75.0 rows/s" in text
  assert "FLOPs ceiling (\"% of FLOPs ceiling\", which every contender, " \
      "the direct one included, stays under): 80.0 rows/s" in text


def test_paragraphs_rows_and_real_tokens(tmp_path, spm_model):
  """A docstring's prose paragraphs are rows (code and short ones
  dropped), repeated in order to the rows asked for; real tokens are
  [CLS] + pieces + [SEP], cut at the sequence length."""
  from benchmarks.serving import corpus_setup
  from data_pipeline.tokenization.sentencepiece_tokenizer import (
    SentencePieceTokenizer,
  )
  (tmp_path / "lib").mkdir()
  (tmp_path / "lib" / "m.py").write_text(
      '"""First paragraph of the module. It has two sentences.\n\n'
      '>>> code_line()\n\nToo short.\n\nSecond paragraph,\nover two '
      'lines here."""\n')
  texts = corpus_setup.paragraphs(str(tmp_path / "lib"))
  assert texts == ["First paragraph of the module. It has two sentences.",
                   "Second paragraph, over two lines here."]
  lines = corpus_setup.write_corpus(str(tmp_path / "c.txt"), texts, 5)
  assert lines == [texts[0], texts[1], texts[0], texts[1], texts[0]]
  assert open(tmp_path / "c.txt").read().splitlines() == lines
  tokenizer = SentencePieceTokenizer(spm_model, do_lower_case=True)
  tokens = corpus_setup.real_tokens(lines, spm_model, 128)
  assert list(tokens) == [len(tokenizer.encode(t)) + 2 for t in lines]
  assert list(corpus_setup.real_tokens(lines, spm_model, 8)) == [8] * 5


def test_registered_with_a_short_mode_that_writes():
  from benchmarks import run_all
  from benchmarks.serving import corpus
  assert "benchmarks.serving.corpus" in run_all.HARNESSES
  assert run_all.short_args("benchmarks.serving.corpus") == corpus.SHORT_ARGS
  assert "--write" in corpus.SHORT_ARGS and "--size=base" in corpus.SHORT_ARGS


@pytest.mark.slow
def test_the_tiny_run(tmp_path):
  """Every contender predicts every row of the same file; the FLOPs
  ceiling (this run's) bounds each; the direct ceiling runs the same rows
  (their real tokens) in the batches computed_positions says; the row
  when quiet, none when loaded."""
  from benchmarks.serving import corpus
  from benchmarks.serving import corpus_setup
  # RSS at 30 rows and 4x (120, as the timed run, in a run of its own),
  # in shards of 10; the timed runs at the tool's default shards.
  args = argparse.Namespace(
      size="tiny", rows=120, rss_rows=30, rss_rows_per_shard=10,
      batch_size=32, beam_shards=4,
      seq_length=128, buckets="32,64,128", threads=2, beam_workers="1,2",
      stock_workers="2")
  measured = corpus.measure(args, str(tmp_path))
  results = measured["results"]
  assert [r["contender"] for r in results.values()] == [
      "ours", "ours_beam", "ours_beam", "stock_beam", "stock_beam", "hf",
      "direct"]
  assert all(r["rows"] == 120 and r["rows_per_s"] > 0 and r["rss_mb"] > 100
             for r in results.values()), results
  assert corpus.passed_ceiling(measured) == []
  assert sorted(measured["rss"]) == [30, 120]
  assert measured["rows_per_shard"] == 10000
  assert measured["rss_rows_per_shard"] == 10
  # The RSS runs streamed through 3 and 12 shards, the timed one in one,
  # ours on Beam (out1, out2) in --beam_shards.
  for name, shards in (("rss30", 3), ("rss120", 12), ("out0", 1),
                       ("out1", 4), ("out2", 4)):
    assert len(list((tmp_path / name).glob("part-*.jsonl"))) == shards
  assert 0 < measured["ceiling"]["mean_tokens"] <= 128
  # Ours, in-process and on Beam (its worker threads in this process),
  # says how long it took to load the export and to reach its first
  # batch, within its run.
  for r in results.values():
    if r["contender"] in ("ours", "ours_beam"):
      assert 0 < r["load_seconds"] < r["first_batch_seconds"] < r[
          "seconds"], r
  # The direct ceiling: the export's own preprocessor packed the same rows
  # (their real tokens, counted apart by corpus_setup.real_tokens), in
  # batches sorted over the whole input; ours under the tool's rule.
  tokens = measured["tokens"]
  assert len(tokens) == 120
  assert measured["padding"]["direct"] == corpus_setup.computed_positions(
      tokens, 32)
  assert measured["padding"]["ours"] == corpus_setup.computed_positions(
      tokens, 32, [32, 64, 128], 10000)
  # One shard of 120 rows, batches across buckets: the direct ceiling's.
  assert measured["padding"]["ours"] == measured["padding"]["direct"]
  assert measured["padding"]["direct"]["tokens"] == int(tokens.sum())
  assert all(int(tokens.sum()) <= p["positions"] < 128 * 120
             for p in measured["padding"].values())
  rows = corpus.figures(dict(measured, others=0.0), "tiny", "2-core CPU",
                        "python -m benchmarks.serving.corpus --size=tiny")
  assert rows[0]["ours"]["value"] == round(
      results[corpus.OURS]["rows_per_s"], 1)
  assert rows[0]["peer"]["value"] < rows[0]["ceiling"]["value"]
  loaded = corpus.figures(dict(measured, others=1.0), "tiny", "2-core CPU",
                          "python -m benchmarks.serving.corpus --size=tiny")
  assert loaded == []
  text = corpus.report(measured)
  assert "| ours, in-process |" in text and "% of direct ceiling" in text
  # The stock handler (padded to 128) computes what ours (cut to buckets)
  # does, row for row (its outputs come unordered: compared sorted).
  ours = sorted(_probabilities(tmp_path / "out0"))
  assert ours[-1] - ours[0] > 0.05  # rows differ
  # out3, out4: without and with its buckets; out6: the direct ceiling.
  for other in ("out3", "out4", "out6"):
    assert sorted(_probabilities(tmp_path / other)) == pytest.approx(
        ours, abs=1e-5)


def _probabilities(folder):
  """The first label's probability of every row a contender wrote."""
  import json
  values = []
  for path in sorted(folder.glob("*.jsonl")):
    for line in path.read_text().splitlines():
      p = json.loads(line)["probabilities"]
      values.append(p[0] if isinstance(p, list) else p["negative"])
  return values


def test_the_command_line_writes_its_row_with_its_command(md, monkeypatch,
                                                          capsys):
  """main(): the figures of `measure`, the row's command as run; buckets
  that do not end with the sequence length are refused in one line."""
  from benchmarks.serving import corpus
  seen = []
  monkeypatch.setattr(corpus, "measure", lambda args, work: (
      seen.append((args.rows, args.buckets)), _measured())[1])
  corpus.main(["--size=tiny", "--rows=1000", "--write"])
  assert seen == [(1000, "32,64,128")]
  [row] = _rows(md, corpus.ORDER)
  assert row["command"] == ("python -m benchmarks.serving.corpus --size=tiny "
                            "--rows=1000 --write")
  assert "ALBERT-tiny classifier" in row["job"]
  with pytest.raises(SystemExit) as exit_:
    corpus.main(["--size=tiny", "--buckets=32,64"])
  assert exit_.value.code == 1
  assert capsys.readouterr().err == ("error: --buckets=32,64 must end with "
                                     "--seq_length=128\n")
  assert len(seen) == 1
