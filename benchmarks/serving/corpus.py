"""Predicting over a corpus: tools.predict against Beam's stock handler and
Hugging Face's pipeline, rows/s and peak memory (#58).

  python -m benchmarks.serving.corpus --size=base --rows=100000 --write

The workload (benchmarks.serving.corpus_setup): the standard library's
docstring paragraphs, one row a line, repeated to --rows (real lengths:
about 27 tokens on average, a long tail cut at --seq_length); a
SentencePiece model trained on them; an ALBERT classifier export of
`--size` (random weights; length buckets --buckets), and transformers'
AlbertForSequenceClassification of the same sizes and SentencePiece.
Each contender runs over the same input file in a fresh process of its
own (benchmarks.serving.corpus_worker), one after another, with
--threads intra-op threads, and is timed over its whole run
(model loading, reading, predicting, writing its outputs):

  ours, in-process          tools.predict's library (runner.predict_files)
  ours, Beam N workers      the same on Beam's DirectRunner (RunInference,
                            --beam_workers: 1 and 2, multi_threading)
  Beam stock handler        Beam's TFModelHandlerTensor, no length buckets:
                            a tokenizing step pads every row to
                            --seq_length, fixed batches in input order
                            (--stock_workers; see corpus_worker.py for how
                            it loads the export); and with its
                            batch_bucket_boundaries at the export's
                            buckets, rows padded to their bucket (Beam's
                            stateful batching: the DirectRunner runs it on
                            one thread)
  Hugging Face pipeline     pipeline("text-classification",
                            batch_size=--batch_size), PyTorch
  the direct ceiling        the export called directly: the rows packed
                            once by its own preprocessor (untimed),
                            sorted by length over the whole input, cut
                            every --batch_size rows, each batch at its
                            longest row, its `token_ids` signature timed
                            over its calls only, after one untimed call
                            (no I/O, no framework)

Ours in-process runs with tools.predict's default --rows_per_shard
(10,000), as a user's run would: a timed run of fewer rows is one shard,
sorted by length over the whole input. On Beam a shard is the unit its
workers share, so ours on Beam gets --beam_shards (10: what the issue's
100,000 rows make at the default) shards of the timed rows.
Ours (in-process and on Beam) also times the seconds before its first
batch and those loading the export (corpus_setup.timed_load).

Peak RSS: each contender's process (VmHWM); ours in-process also over
--rss_rows and 4x as many rows in shards of --rss_rows_per_shard (both
stream through several shards: memory flat in the input's size).

Two ceilings. The direct ceiling (the issue's: the export called
directly in length-sorted batches) is measured as a contender; the goal
"in-process >= 90% of the ceiling" is judged against it, and it is the
first table's ceiling. The FLOPs ceiling bounds every contender, the
direct one included: the rows/s at which the input's real tokens'
forward FLOPs (benchmarks.ceilings.encoder_flops at each row's real
length) would run at the float32 matmul peak at the export's bucket
shapes ([batch x bucket, H] x [H, I]), the fastest of TensorFlow's and
PyTorch's, measured in this process before the contenders. Padding: the
real tokens' share of the positions computed, under tools.predict's rule
(corpus_setup.computed_positions) and in the direct ceiling's batches.
Load: the CPU other processes used over the run (common.CpuWindow).

With --write: its BENCHMARKS.md section and the first table's row (ours
in-process against the faster peer, with the direct ceiling), unless the
run was loaded or a ceiling was passed: then the section says so.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional

from benchmarks import common
from benchmarks.serving import corpus_setup

ORDER = 42  # serving's rows are 40-49
SECTION = "Predicting over a corpus"
OURS = "ours, in-process"
DIRECT = "the export called directly (the direct ceiling)"
# `python -m benchmarks.summary --run`'s short mode: 1,000 rows timed in
# one shard (the tool's default --rows_per_shard), RSS at 250 and 1,000
# rows in shards of 100, 9 fresh processes; about 10 minutes on 2 cores at
# ALBERT-base: an estimate: the tiny run's fixed costs (setup 80-120 s,
# about 25 s a process at load average 7; the base export adds about a
# minute) plus each contender's 1,000 rows at rates derived from the
# serving section's batch-32 time (about 20 s in-process, 60 s padded to
# 128; the direct ceiling's calls fewer) and the RSS runs' 1,250 rows.
SHORT_ARGS = ["--size=base", "--rows=1000", "--rss_rows=250",
              "--rss_rows_per_shard=100", "--write"]


def contenders(args) -> List[Dict]:
  """[{name, contender, workers, peer, buckets}] in run order."""
  runs = [dict(name=OURS, contender="ours", workers=1, peer=False)]
  runs += [dict(name=f"ours, Beam DirectRunner, {w} worker" +
                ("s" if w > 1 else ""), contender="ours_beam", workers=w,
                peer=False) for w in _ints(args.beam_workers)]
  runs += [dict(name="Beam TFModelHandlerTensor without buckets (stock, "
                f"{w} worker" + ("s)" if w > 1 else ")"),
                contender="stock_beam", workers=w, peer=True)
           for w in _ints(args.stock_workers)]
  runs.append(dict(name="Beam TFModelHandlerTensor with "
                   "batch_bucket_boundaries (stock, one thread)",
                   contender="stock_beam", workers=1, peer=True,
                   buckets=True))
  runs.append(dict(name="Hugging Face pipeline (PyTorch)", contender="hf",
                   workers=1, peer=True))
  runs.append(dict(name=DIRECT, contender="direct", workers=1, peer=False))
  return runs


def _ints(text: str) -> List[int]:
  return [int(x) for x in text.split(",") if x]


def run_worker(spec: Dict) -> Dict:
  """A contender in a fresh process (corpus_worker): {rows, seconds,
  rss_mb}."""
  result = subprocess.run(
      [sys.executable, "-m", "benchmarks.serving.corpus_worker",
       json.dumps(spec)], cwd=common.REPO_ROOT, capture_output=True,
      text=True, env=dict(os.environ, PYTHONPATH=common.REPO_ROOT))
  if result.returncode:
    raise RuntimeError(f"{spec['contender']} failed:\n{result.stderr[-3000:]}")
  return json.loads(result.stdout.strip().splitlines()[-1])


def measure(args, work: str) -> Dict:
  """Builds the workload, measures the FLOPs ceiling, runs every
  contender (the direct ceiling last): {results: {name: {rows, seconds,
  rss_mb, rows_per_s}}, peers, rss, ceiling (the FLOPs ceiling), peaks,
  padding ({ours, direct}: {tokens, positions}), tokens (each row's
  real tokens), buckets, batch_size, rows_per_shard (the timed runs',
  the tool's default), rss_rows_per_shard, rows, others}."""
  window = common.CpuWindow(children=True)
  window.start()
  texts = corpus_setup.paragraphs()
  corpus = os.path.join(work, "corpus.txt")
  lines = corpus_setup.write_corpus(corpus, texts, args.rows)
  spm = corpus_setup.train_spm(texts, work)
  config = corpus_setup.model_config(args.size, args.seq_length)
  buckets = _ints(args.buckets)
  export = corpus_setup.build_export(config, spm, os.path.join(
      work, "export"), args.seq_length, buckets)
  hf_model = corpus_setup.build_hf(config, spm, os.path.join(work, "hf"),
                                   args.seq_length)
  tokens = corpus_setup.real_tokens(lines, spm, args.seq_length)
  peaks = corpus_setup.bucket_peaks(config, args.batch_size, buckets,
                                    args.threads)
  roof = corpus_setup.ceiling(config, tokens, peaks)
  print(f"[{window_seconds(window)}] ceiling {roof['rows_per_s']:,.1f} "
        f"rows/s ({roof['mean_tokens']:.1f} real tokens a row, peak "
        f"{roof['peak'] / 1e9:.1f} GFLOP/s)", flush=True)
  base = dict(export=export, spm_model=spm, hf_model=hf_model,
              seq_length=args.seq_length, batch_size=args.batch_size,
              threads=args.threads)
  results, peers = {}, []
  for i, run in enumerate(contenders(args)):
    spec = dict(base, input=corpus, output=os.path.join(work, f"out{i}"),
                contender=run["contender"], workers=run["workers"],
                buckets=buckets if run.get("buckets") else [],
                rows_per_shard=(-(-args.rows // args.beam_shards)
                                if run["contender"] == "ours_beam" else 0))
    result = run_worker(spec)
    result.update(rows_per_s=result["rows"] / result["seconds"],
                  contender=run["contender"], workers=run["workers"],
                  buckets=bool(run.get("buckets")))
    results[run["name"]] = result
    if run["peer"]:
      peers.append(run["name"])
    print(f"[{window_seconds(window)}] {run['name']}: "
          f"{result['rows_per_s']:,.1f} rows/s, "
          f"{result['rss_mb']:,.0f} MB", flush=True)
  rss = {}
  for rows in (args.rss_rows, 4 * args.rss_rows):
    path = os.path.join(work, f"corpus_{rows}.txt")
    corpus_setup.write_corpus(path, texts, rows)
    rss[rows] = run_worker(dict(
        base, input=path, contender="ours", workers=1,
        rows_per_shard=args.rss_rows_per_shard,
        output=os.path.join(work, f"rss{rows}")))["rss_mb"]
  direct = results[DIRECT]
  shard = corpus_setup.tool_rows_per_shard()
  padding = dict(
      ours=corpus_setup.computed_positions(tokens, args.batch_size, buckets,
                                           shard),
      direct=dict(tokens=direct["tokens"], positions=direct["positions"]))
  return dict(results=results, peers=peers, rss=rss, ceiling=roof,
              peaks=peaks, padding=padding, tokens=tokens, buckets=buckets,
              batch_size=args.batch_size, rows_per_shard=shard,
              rss_rows_per_shard=args.rss_rows_per_shard, rows=args.rows,
              beam_shards=args.beam_shards, others=window.others())


def window_seconds(window: common.CpuWindow) -> str:
  """Seconds since the window started, for the progress lines."""
  return f"{time.perf_counter() - window.begin[2]:.0f} s"


def passed_ceiling(measured: Dict) -> List[str]:
  """The contenders faster than the FLOPs ceiling (none, or it is no
  limit), the direct ceiling included."""
  limit = measured["ceiling"]["rows_per_s"]
  return [name for name, r in measured["results"].items()
          if r["rows_per_s"] > limit]


def passed_direct(measured: Dict) -> List[str]:
  """The contenders faster than the direct ceiling."""
  limit = measured["results"][DIRECT]["rows_per_s"]
  return [name for name, r in measured["results"].items()
          if name != DIRECT and r["rows_per_s"] > limit]


def _share(rate: float, ceiling: float) -> str:
  return f"{rate / ceiling:.0%}"


def report(measured: Dict) -> str:
  """The contenders' table, the memory line, the two ceilings, the
  padding and the goals."""
  results, roof = measured["results"], measured["ceiling"]
  ours = results[OURS]["rows_per_s"]
  direct = results[DIRECT]
  rows = [[name, f"{r['rows_per_s']:,.1f}", f"{r['seconds']:,.1f}",
           f"{r['rss_mb']:,.0f}", f"{r['rows_per_s'] / ours:.2f}",
           _share(r["rows_per_s"], direct["rows_per_s"]),
           _share(r["rows_per_s"], roof["rows_per_s"])]
          for name, r in results.items()]
  (small, a), (large, b) = sorted(measured["rss"].items())
  peaks = "; ".join(
      f"bucket {bucket}: " + ", ".join(f"{f} {p / 1e9:.1f}"
                                       for f, p in by.items())
      for bucket, by in measured["peaks"].items())
  fixed = corpus_setup.fixed_costs_line(results)
  return "\n\n".join([
      common.markdown_table(["contender", "rows/s", "seconds",
                             "peak RSS MB", "/ in-process",
                             "% of direct ceiling",
                             "% of FLOPs ceiling"], rows),
      f"Peak RSS of ours in-process: {a:,.0f} MB at {small:,} rows, "
      f"{b:,.0f} MB at {large:,} rows ({b / a - 1:+.1%}), two runs of "
      "their own in shards of "
      f"{measured['rss_rows_per_shard']:,} rows (the timed runs: "
      "tools.predict's default shards of "
      f"{measured['rows_per_shard']:,}; ours on Beam: "
      f"{measured.get('beam_shards', 1)} shards, the bundles its workers "
      "share).",
      "Direct ceiling (\"% of direct ceiling\", the issue's ceiling): "
      f"{direct['rows_per_s']:,.1f} rows/s, the export called directly: "
      "the rows packed once by its own preprocessor (not timed), sorted "
      "by length over the whole input, batches of "
      f"{measured['batch_size']} each cut to its longest row, its "
      "`token_ids` signature timed over its calls only, after one "
      "untimed call "
      f"({direct['seconds']:,.1f} s; its peak RSS includes the packed "
      "rows).",
      "FLOPs ceiling (\"% of FLOPs ceiling\", which every contender, the "
      f"direct one included, stays under): {roof['rows_per_s']:,.1f} "
      "rows/s: the input's real tokens "
      f"({roof['mean_tokens']:.1f} a row, [CLS] and [SEP] included; "
      f"{roof['flops_per_row'] / 1e9:.3g} GFLOP a row forward) at "
      f"{roof['peak'] / 1e9:.1f} GFLOP/s, the best float32 matmul peak at "
      f"the export's bucket shapes ([batch x bucket, H] x [H, I], GFLOP/s: "
      f"{peaks}).",
      corpus_setup.padding_line(measured),
      *([fixed] if fixed else []),
      "Goals (#58): " + goals(measured)])


def goals(measured: Dict) -> str:
  """Each of the issue's goals, met or not, from this run's figures."""
  results = measured["results"]
  ours = results[OURS]["rows_per_s"]
  beam = {r["workers"]: r["rows_per_s"] for r in results.values()
          if r["contender"] == "ours_beam"}
  stock = max((r["rows_per_s"] for r in results.values()
               if r["contender"] == "stock_beam" and not r.get("buckets")),
              default=None)
  hf = max((r["rows_per_s"] for r in results.values()
            if r["contender"] == "hf"), default=None)
  (_, a), (_, b) = sorted(measured["rss"].items())
  checks = [("in-process >= 90% of the direct ceiling",
             ours >= 0.9 * results[DIRECT]["rows_per_s"])]
  loaded = _after_load(results[OURS])
  if 1 in beam:
    checks.append(("Beam 1 worker >= 80% of in-process",
                   beam[1] >= 0.8 * ours))
    if 2 in beam:
      checks.append(("Beam 2 workers >= 1.6x 1 worker",
                     beam[2] >= 1.6 * beam[1]))
  if stock:
    checks.append(("in-process >= 2x the stock handler (no buckets)",
                   ours >= 2 * stock))
  if hf:
    checks.append(("in-process ahead of Hugging Face", ours > hf))
  checks.append(("peak RSS at 4x the rows within 10%", b <= 1.1 * a))
  text = "; ".join(f"{what}: {'met' if ok else 'NOT met'}"
                   for what, ok in checks) + "."
  if loaded:
    share = _share(loaded, results[DIRECT]["rows_per_s"])
    text += (f" In-process after its model loaded: {loaded:,.1f} rows/s, "
             f"{share} of the direct ceiling (loading took "
             f"{results[OURS]['load_seconds']:.1f} s of its "
             f"{results[OURS]['seconds']:.1f}: a fixed cost the issue's "
             "100,000 rows would amortize, and one the direct ceiling does "
             "not time).")
  return text


def _after_load(result: Dict) -> Optional[float]:
  """rows/s after the run loaded its model (None: loading not timed)."""
  load = result.get("load_seconds")
  return result["rows"] / (result["seconds"] - load) if load else None


def figures(measured: Dict, size: str, machine: str, command: str
            ) -> List[Dict]:
  """The first table's row: ours in-process against the faster peer
  (Beam's stock handler, Hugging Face), rows/s, the direct ceiling of
  this run (with the FLOPs ceiling in its label); none when the run was
  loaded, no peer ran, a contender passed the FLOPs ceiling or ours the
  direct one."""
  others = measured["others"]
  if (others >= common.QUIET_CORES or not measured["peers"] or
      passed_ceiling(measured) or OURS in passed_direct(measured)):
    return []
  results, roof = measured["results"], measured["ceiling"]
  peer = max(measured["peers"], key=lambda n: results[n]["rows_per_s"])
  ours = results[OURS]["rows_per_s"]
  (small, a), (large, b) = sorted(measured["rss"].items())
  direct = results[DIRECT]["rows_per_s"]
  return [dict(
      job=f"Predicting over a corpus (ALBERT-{common.size_label(size)} "
      f"classifier, {measured['rows']:,} stdlib paragraphs, rows/s)",
      order=ORDER,
      ours=dict(label=f"tools.predict in-process, peak RSS {a:,.0f} MB at "
                f"{small:,} rows, {b:,.0f} MB at {large:,}",
                value=round(ours, 1), unit="rows/s"),
      peer=dict(label=peer + ", same run",
                value=round(results[peer]["rows_per_s"], 1), unit="rows/s"),
      contender="peer", higher_is_better=True,
      ceiling=dict(label="the export called directly in length-sorted "
                   f"batches of {measured['batch_size']}, each at its "
                   "longest row (pre-tokenized, no I/O, timed over its "
                   "predict calls), same run; under the FLOPs ceiling "
                   f"{roof['rows_per_s']:,.1f} rows/s (the real tokens at "
                   f"{roof['peak'] / 1e9:.0f} GFLOP/s)",
                   value=round(direct, 1), unit="rows/s"),
      reached=round(ours, 1), machine=machine, date=common.today(),
      command=command, conditions=common.load_conditions(others))]


def write(args, measured: Dict, text: str, command: str) -> None:
  """The section and (a quiet run) the first table's row."""
  rows = figures(measured, args.size, common.machine_label(), command)
  conditions = common.load_conditions(measured["others"])
  passed = passed_ceiling(measured)
  if passed:
    conditions += (f"; {', '.join(passed)} passed the FLOPs ceiling, which "
                   "is then no limit")
  passed = passed_direct(measured)
  if passed:
    conditions += f"; {', '.join(passed)} passed the direct ceiling"
  if not rows:
    conditions += " (no first-table row from this run)"
  common.update_benchmarks_md(
      SECTION, f"`{command}`; {common.machine_line()}; {conditions}. " +
      _NOTE + "\n\n" + text, figures=rows, stage="Serving")


_NOTE = (
    "Each contender runs over the same input file in a fresh process, one "
    "after another, timed over its whole run (loading, reading, "
    "predicting, writing); ALBERT classifier exports with random weights. "
    "Ours on Beam: RunInference with our handler, a shard's rows sorted "
    "by tokens, Beam's batches of 32 model calls' rows sorted again and "
    "cut every --batch_size rows, one model per process. "
    "Beam's stock TFModelHandlerTensor cannot load the raw-text export "
    "(tf.keras.models.load_model reads no SavedModel under Keras 3, and "
    "with TF_USE_LEGACY_KERAS=1 none without Keras metadata), so it runs "
    "through a minimal subclass whose load_model is tf.saved_model.load "
    "of the same export and an inference_fn that stacks the batch as "
    "Beam's default does and calls its `token_ids` signature; a "
    "tokenizing step pads every row to the export's sequence length; "
    "batches of a fixed size in input order; its batch_bucket_boundaries "
    "variant pads each row to its bucket and lets Beam's length-aware "
    "batching group rows of one bucket (on the DirectRunner's one-thread "
    "runner: the FnApiRunner lacks the timer of Beam's stateful "
    "batching). Hugging Face: transformers' "
    "AlbertForSequenceClassification of the same sizes, random weights, "
    "the same SentencePiece model, dynamic padding per batch "
    "(benchmarks/serving/corpus.py).")


def main(argv: Optional[List[str]] = None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--size", default="base",
                      help="base, large, ... (configs/), a config .json, "
                      "or tiny (H=32, 2 layers: a quick check)")
  parser.add_argument("--rows", type=int, default=100_000)
  parser.add_argument("--rss_rows", type=int, default=5000,
                      help="peak RSS of ours in-process at this many rows "
                      "and 4x as many")
  parser.add_argument("--beam_shards", type=int, default=10,
                      help="shards of the timed rows ours on Beam gets")
  parser.add_argument("--rss_rows_per_shard", type=int, default=1000,
                      help="the RSS runs' --rows_per_shard (the timed runs "
                      "use tools.predict's default)")
  parser.add_argument("--batch_size", type=int, default=32)
  parser.add_argument("--seq_length", type=int, default=128)
  parser.add_argument("--buckets", default="32,64,128",
                      help="the export's length buckets (ending with "
                      "--seq_length)")
  parser.add_argument("--threads", type=int, default=2)
  parser.add_argument("--beam_workers", default="1,2")
  parser.add_argument("--stock_workers", default="2")
  parser.add_argument("--work_dir", default=None,
                      help="where the files go (default: a temporary "
                      "folder, removed)")
  parser.add_argument("--write", action="store_true",
                      help="update BENCHMARKS.md")
  args = parser.parse_args(argv)
  if args.size != "tiny" and argv is None:
    args = common.parse_args(parser)
  if _ints(args.buckets)[-1:] != [args.seq_length]:
    parser.exit(1, f"error: --buckets={args.buckets} must end with "
                f"--seq_length={args.seq_length}\n")
  start = time.perf_counter()
  with tempfile.TemporaryDirectory() as temporary:
    work = args.work_dir or temporary
    os.makedirs(work, exist_ok=True)
    import tensorflow as tf
    # The ceiling's matmuls at the contenders' threads (each contender
    # sets its own in its process); a process where TensorFlow already
    # runs (a test's) keeps its own.
    try:
      tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    except RuntimeError:
      pass
    measured = measure(args, work)
  text = report(measured)
  print(text)
  print(f"{common.load_conditions(measured['others'])}; "
        f"{time.perf_counter() - start:.0f} s in all")
  if args.write:
    write(args, measured, text, common.command_line(
        "benchmarks.serving.corpus", sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
  main()
