r"""Throughput and memory of create_pretraining_data: local path and Beam.

Builds the stdlib-docstring English corpus
(`data_pipeline.corpora.stdlib_corpus`), optionally repeated to make it larger,
trains a small SentencePiece model unless one is given, and runs data creation
once per worker count, each in a fresh process so peak RSS is per run; then the
same job on Apache Beam's DirectRunner (multi_processing, --beam_workers
processes), whose output is checked to be the local path's bytes. Prints a
table.

  python -m benchmarks.data.creation --workers=1,2 --beam_workers=2 \
    --max_seq_length=128 --dupe_factor=5

"s/GB" and "CPU-h/GB" are wall seconds and CPU hours (all processes) per GB
of input text: what a run costs per GB on machines like this one.

"inst/s" is instances over wall time, start-up (worker processes, model
loading) included; "inst/CPU-s" divides by the CPU time of all processes, so
it shows per-process throughput even when other load on the machine keeps
the workers from scaling in wall time.

The peer: the official google-research/albert script
(benchmarks.data.official_creation), run on the same corpus, SentencePiece
model and settings (--official_dir, default $ALBERT_OFFICIAL_DIR, which
the row's command then names). A --write that would write the first
table's row without it is refused in one line that says how to get it.

The first table's row (with --write; local runs of 1 and N > 1 workers,
no Beam, corpus x4 or more): ours with N workers (the feature the
official script lacks) against the official script (one process, it has
no workers), instances/s; the ceiling N processes x our one process's
rate, reached: ours (the same N-worker figure); the machine's load: the
CPU other processes used over the run (common.CpuWindow), all measured in
this run.
"""

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from typing import Dict, List, Optional

from absl import app
from absl import flags

from benchmarks.data import official_creation

FLAGS = flags.FLAGS


def define_flags():
  """The command's flags, defined when it runs (not on import: a test
  that imports this module must not define flags other tools share)."""
  flags.DEFINE_string("workers", "1,2", "Comma-separated worker counts.")
  flags.DEFINE_string("beam_workers", "2",
                      "Comma-separated DirectRunner worker counts (empty: no "
                      "Beam rows).")
  flags.DEFINE_integer("max_seq_length", 128, "Maximum sequence length.")
  flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked positions.")
  flags.DEFINE_integer("dupe_factor", 5, "Dupe factor.")
  flags.DEFINE_integer("corpus_copies", 1,
                       "Repeat the stdlib corpus this many times.")
  flags.DEFINE_string("spm_model_file", None,
                      "SentencePiece model; default: train a 5000-piece one.")
  flags.DEFINE_string("work_dir", None, "Where to write (default: a temp dir).")
  flags.DEFINE_string(
      "official_dir", None,
      "A checkout of google-research/albert: its create_pretraining_data.py "
      "runs on the same corpus and settings, the row's peer (default: "
      f"${official_creation.OFFICIAL_DIR_ENV}).")
  flags.DEFINE_bool("write", False, "Update BENCHMARKS.md with the table.")


# The first table's row: local runs of 1 and N > 1 workers on a corpus of
# at least this many copies (smaller ones are mostly start-up).
MIN_COPIES = 4
# `python -m benchmarks.summary --run`'s short mode: about 3 minutes on 2
# cores with the official script (2 of them its run), 1 without (3 min 22 s
# measured with it at load average 7 on a 2-core AMD EPYC).
SHORT_ARGS = ["--corpus_copies=4", "--workers=1,2", "--beam_workers=",
              "--max_seq_length=128", "--dupe_factor=5", "--write"]


_CHILD = r"""
import json, resource, sys, time
from data_pipeline.pretraining import instance_options
from data_pipeline.pretraining import writer as pretraining_writer
def main():
  corpus, model, out, workers, seq, pred, dupe, runner = sys.argv[1:9]
  options = instance_options.InstanceOptions(
      max_seq_length=int(seq), max_predictions_per_seq=int(pred))
  start = time.perf_counter()
  if runner == "local":
    stats = pretraining_writer.create_pretraining_data(
        corpus, out, model, options, dupe_factor=int(dupe),
        num_workers=int(workers), show_progress=False)
  else:
    from data_pipeline.pretraining.beam import pipeline as beam_pipeline
    stats = beam_pipeline.create_pretraining_data_beam(
        corpus, out, model, options, dupe_factor=int(dupe), runner=runner,
        pipeline_args=[f"--direct_num_workers={workers}",
                       "--direct_running_mode=multi_processing"])
  seconds = time.perf_counter() - start
  me = resource.getrusage(resource.RUSAGE_SELF)
  kids = resource.getrusage(resource.RUSAGE_CHILDREN)
  print(json.dumps({
      "cpu_seconds": me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime,
      "seconds": seconds, "instances": stats["instances"],
      "tokens": stats["tokens"],
      "main_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
      "worker_rss_mb":
          resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
if __name__ == "__main__":
  main()
"""


def _prepare(work_dir):
  from data_pipeline.corpora import stdlib_corpus
  from data_pipeline.tokenization import sentencepiece_trainer
  one = os.path.join(work_dir, "stdlib_docs.txt")
  info = stdlib_corpus.write_stdlib_corpus(one)
  corpus = one
  if FLAGS.corpus_copies > 1:
    corpus = os.path.join(work_dir, f"stdlib_docs_x{FLAGS.corpus_copies}.txt")
    with open(one, "rb") as f:
      data = f.read()
    with open(corpus, "wb") as f:
      for _ in range(FLAGS.corpus_copies):
        f.write(data)
  model = FLAGS.spm_model_file
  if not model:
    prefix = os.path.join(work_dir, "spm5k")
    sentencepiece_trainer.train_sentencepiece(one, prefix, vocab_size=5000,
                                              do_lower_case=True)
    model = prefix + ".model"
  return corpus, model, info


def _digest(path):
  """sha256 of a run's output file."""
  digest = hashlib.sha256()
  with open(path, "rb") as f:
    for block in iter(lambda: f.read(1 << 20), b""):
      digest.update(block)
  return digest.hexdigest()


def main(argv):
  del argv  # absl's: the flags are gone; the command is sys.argv's
  from benchmarks import common
  try:
    checkout = official_creation.official_dir(FLAGS.official_dir)
  except official_creation.OfficialScriptError as e:
    sys.stderr.write(f"error: {e}\n")
    sys.exit(1)
  if FLAGS.write and not checkout and writes_row(
      FLAGS.corpus_copies, FLAGS.beam_workers, FLAGS.workers):
    sys.stderr.write("error: --write: the first table's row needs the "
                     "official create_pretraining_data.py as its peer, run "
                     f"here: {official_creation.HOW_TO_GET}\n")
    sys.exit(1)
  window = common.CpuWindow(children=True)
  window.start()
  work_dir = FLAGS.work_dir or tempfile.mkdtemp(prefix="bench_data_")
  os.makedirs(work_dir, exist_ok=True)
  corpus, model, info = _prepare(work_dir)
  size_mb = os.path.getsize(corpus) / 1e6
  print(f"corpus: {size_mb:.2f} MB ({info['documents'] * FLAGS.corpus_copies:,}"
        f" documents), max_seq_length {FLAGS.max_seq_length}, dupe_factor "
        f"{FLAGS.dupe_factor}, {os.cpu_count()} cores")
  rows, rates = _run_ours(work_dir, corpus, model)
  official = None
  if checkout:
    official = _run_official(checkout, work_dir, corpus, model)
  others = window.others()
  if FLAGS.write:
    write(rows, rates, official, command(checkout, FLAGS.official_dir),
          FLAGS.corpus_copies, FLAGS.beam_workers, others)


def writes_row(corpus_copies: int, beam_workers: str, workers: str) -> bool:
  """Whether a run with these flags writes the first table's row (see
  figures)."""
  counts = {int(w) for w in workers.split(",") if w}
  return (corpus_copies >= MIN_COPIES and not beam_workers and 1 in counts
          and max(counts, default=1) >= 2)


def command(checkout: Optional[str], flag_value: Optional[str]) -> str:
  """The run's command; the official checkout taken from
  $ALBERT_OFFICIAL_DIR is written before it, so the command reruns."""
  import shlex

  from benchmarks import common
  text = common.command_line("benchmarks.data.creation", sys.argv[1:])
  if checkout and not flag_value:
    text = (f"{official_creation.OFFICIAL_DIR_ENV}={shlex.quote(checkout)} "
            + text)
  return text


def write(rows, rates, official, command: str, corpus_copies: int,
          beam_workers: str, others: float = 0.0) -> None:
  """The section (the run's table) and the first table's row (others: the
  cores other processes used over the run)."""
  from benchmarks import common
  table = common.markdown_table(
      ["corpus copies", "runner", "workers", "seconds", "instances",
       "inst/s", "tokens/s", "CPU s", "inst/CPU-s", "s/GB", "CPU-h/GB",
       "main RSS MB", "worker RSS MB", "same bytes"], rows)
  title = "Data creation: local path and Beam" if beam_workers else (
      "Data creation")
  common.update_benchmarks_md(
      f"{title} (corpus x{corpus_copies})", f"`{command}`; "
      f"{common.machine_line()}; other processes {others:.2f} cores over "
      f"the run. {_official_sentence(official)} "
      "\"Beam Direct\": the same job on Apache Beam's DirectRunner "
      "(multi_processing); \"same bytes\": the run's output has the "
      "first row's sha256.\n\n" + table,
      figures=figures(rates, command, corpus_copies, beam_workers, official,
                      common.machine_label(), others),
      stage="Data")


def _run_ours(work_dir, corpus, model):
  """Every local and Beam run in a fresh process: (the table's rows,
  {(runner, workers): instances/s})."""
  script = os.path.join(work_dir, "child.py")
  with open(script, "w") as f:
    f.write(_CHILD)
  repo = os.path.dirname(os.path.dirname(os.path.dirname(
      os.path.abspath(__file__))))
  env = dict(os.environ, PYTHONPATH=repo, TF_CPP_MIN_LOG_LEVEL="2")
  gb = os.path.getsize(corpus) / 1e9
  header = (f"{'runner':>12} {'workers':>7} {'seconds':>8} {'instances':>10} "
            f"{'inst/s':>9} {'tokens/s':>11} {'CPU s':>6} {'inst/CPU-s':>10} "
            f"{'s/GB':>7} {'CPU-h/GB':>8} {'main RSS MB':>11} "
            f"{'worker RSS MB':>13} {'same bytes':>10}")
  print(header)
  print("-" * len(header))
  rows = []
  runs = [("local", int(w)) for w in FLAGS.workers.split(",") if w]
  runs += [("DirectRunner", int(w)) for w in FLAGS.beam_workers.split(",")
           if w]
  reference, rates = None, {}
  for runner, workers in runs:
    out = os.path.join(work_dir, f"out_{runner}_w{workers}", "train.tfrecord")
    result = subprocess.run(
        [sys.executable, script, corpus, model, out, str(workers),
         str(FLAGS.max_seq_length), str(FLAGS.max_predictions_per_seq),
         str(FLAGS.dupe_factor), runner], env=env, capture_output=True,
        text=True)
    if result.returncode:
      sys.exit(f"{runner} x{workers} failed:\n{result.stderr[-3000:]}")
    r = json.loads(result.stdout.strip().splitlines()[-1])
    digest = _digest(out)
    reference = reference or digest
    same = "yes" if digest == reference else "NO"
    name = "local" if runner == "local" else "Beam Direct"
    rates[runner, workers] = r["instances"] / r["seconds"]
    cells = [name, workers, f"{r['seconds']:.2f}", f"{r['instances']:,}",
             f"{r['instances'] / r['seconds']:,.0f}",
             f"{r['tokens'] / r['seconds']:,.0f}",
             f"{r['cpu_seconds']:.2f}",
             f"{r['instances'] / r['cpu_seconds']:,.0f}",
             f"{r['seconds'] / gb:,.0f}",
             f"{r['cpu_seconds'] / 3600 / gb:.2f}",
             f"{r['main_rss_mb']:.0f}", f"{r['worker_rss_mb']:.0f}", same]
    widths = [12, 7, 8, 10, 9, 11, 6, 10, 7, 8, 11, 13, 10]
    print(" ".join(f"{c:>{w}}" for c, w in zip(map(str, cells), widths)),
          flush=True)
    rows.append([FLAGS.corpus_copies] + cells)
  return rows, rates


def _run_official(checkout, work_dir, corpus, model) -> Dict[str, float]:
  """The official script on the same corpus and settings, one process."""
  from data_pipeline.pretraining import instance_options
  options = instance_options.InstanceOptions(
      max_seq_length=FLAGS.max_seq_length,
      max_predictions_per_seq=FLAGS.max_predictions_per_seq)
  flags_ = official_creation.official_flags(options, FLAGS.dupe_factor)
  print(f"the official script ({checkout}) on the same corpus...",
        flush=True)
  try:
    result = official_creation.run_official(
        checkout, corpus, model,
        os.path.join(work_dir, "out_official", "train.tfrecord"), flags_)
  except official_creation.OfficialScriptError as e:
    sys.stderr.write(f"error: {e}\n")
    sys.exit(1)
  result["rate"] = result["instances"] / result["seconds"]
  print(f"official: {result['seconds']:.2f} s, {result['instances']:,} "
        f"instances, {result['rate']:,.0f} instances/s, "
        f"{result['instances'] / result['cpu_seconds']:,.0f} inst/CPU-s, "
        f"peak RSS {result['rss_mb']:.0f} MB", flush=True)
  return result


def _official_sentence(official: Optional[Dict[str, float]]) -> str:
  if official is None:
    return ("The official script was not run (no --official_dir): no "
            "first-table row.")
  return (f"The official script, same corpus and settings, one process, "
          f"in this run: {official['seconds']:.2f} s, "
          f"{official['instances']:,} instances, {official['rate']:,.0f} "
          f"instances/s ({official['instances'] / official['cpu_seconds']:,.0f}"
          f" inst/CPU-s), {official['rss_mb']:.0f} MB peak RSS.")


def figures(rates, command: str, corpus_copies: int, beam_workers: str,
            official: Optional[Dict[str, float]] = None,
            machine: Optional[str] = None, others: float = 0.0
            ) -> List[Dict]:
  """The first table's row, from a local run with 1 and with N > 1
  workers (no Beam) on corpus x MIN_COPIES or more, and the official
  script's run in this run (none without it): ours, N workers, against the
  official script's one process; the ceiling N processes x our one
  process's rate; reached: ours."""
  many = min(max((w for runner, w in rates if runner == "local"),
                 default=1), os.cpu_count() or 1)
  if (official is None or corpus_copies < MIN_COPIES or beam_workers or
      ("local", 1) not in rates or ("local", many) not in rates or
      many < 2):
    return []
  from benchmarks import common
  machine = machine or common.machine_label()
  one, ours = rates["local", 1], rates["local", many]
  return [dict(
      job=f"Data creation (instances/s, {many} workers, corpus x"
      f"{corpus_copies})", order=10,
      ours=dict(label=f"{many} workers, one process {one:,.0f}",
                value=round(ours), unit="instances/s"),
      peer=dict(label="official create_pretraining_data.py, one process "
                "(it has no workers), same corpus and settings",
                value=round(official["rate"]), unit="instances/s"),
      higher_is_better=True, contender="peer",
      ceiling=dict(label=f"{many} cores x our one process's rate",
                   value=round(many * one), unit="instances/s"),
      reached=round(ours), machine=machine, date=common.today(),
      command=command,
      conditions=common.load_conditions(others))]


if __name__ == "__main__":
  define_flags()
  app.run(main)
