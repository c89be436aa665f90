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

For reference (issue 3): the official google-research/albert script made
about 985 instances/s in one process (907 MB peak RSS) for max_seq_length 128,
dupe_factor 5 on a 2.7 MB corpus of this kind. It needs TF1, so it is not run
here.
"""

import hashlib
import json
import os
import subprocess
import sys
import tempfile

from absl import app
from absl import flags

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
  flags.DEFINE_bool("write", False, "Update BENCHMARKS.md with the table.")


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
  del argv
  work_dir = FLAGS.work_dir or tempfile.mkdtemp(prefix="bench_data_")
  os.makedirs(work_dir, exist_ok=True)
  corpus, model, info = _prepare(work_dir)
  size_mb = os.path.getsize(corpus) / 1e6
  print(f"corpus: {size_mb:.2f} MB ({info['documents'] * FLAGS.corpus_copies:,}"
        f" documents), max_seq_length {FLAGS.max_seq_length}, dupe_factor "
        f"{FLAGS.dupe_factor}, {os.cpu_count()} cores")
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
    print(" ".join(f"{c:>{w}}" for c, w in zip(map(str, cells), widths)))
    rows.append([FLAGS.corpus_copies] + cells)
  if FLAGS.write:
    from benchmarks import common
    table = common.markdown_table(
        ["corpus copies", "runner", "workers", "seconds", "instances",
         "inst/s", "tokens/s", "CPU s", "inst/CPU-s", "s/GB", "CPU-h/GB",
         "main RSS MB", "worker RSS MB", "same bytes"], rows)
    title = "Data creation: local path and Beam" if FLAGS.beam_workers else (
        "Data creation")
    command = (
        f"python -m benchmarks.data.creation --workers={FLAGS.workers}"
        f" --beam_workers={FLAGS.beam_workers}"
        f" --corpus_copies={FLAGS.corpus_copies} --max_seq_length="
        f"{FLAGS.max_seq_length} --dupe_factor={FLAGS.dupe_factor} --write")
    common.update_benchmarks_md(
        f"{title} (corpus x{FLAGS.corpus_copies})", f"`{command}`; "
        f"{common.machine_line()}. The official script: about 985 "
        f"instances/s in one process, 907 MB peak RSS, on a 2.7 MB corpus "
        f"of this kind (measured when the issue was filed; it needs TF1 and "
        f"is not run here). \"Beam Direct\": the same job on Apache Beam's "
        f"DirectRunner (multi_processing); \"same bytes\": the run's output "
        f"has the first row's sha256.\n\n" + table,
        figures=figures(rates, command, FLAGS.corpus_copies,
                        FLAGS.beam_workers), stage="Data")


OFFICIAL_PER_PROCESS = 985  # instances/s, measured when the issue was filed


def figures(rates, command, corpus_copies, beam_workers):
  """The first table's row, from a local run with 1 and with N > 1
  workers on a large corpus (x16 or more, no Beam): one process against
  the official script's, the ceiling N x one process's rate."""
  many = max((w for runner, w in rates if runner == "local"), default=1)
  if (corpus_copies < 16 or beam_workers or
      ("local", 1) not in rates or many < 2):
    return []
  import time

  from benchmarks import common
  one = rates["local", 1]
  return [dict(
      job="Data creation (instances/s, one process)", order=10,
      ours=dict(label="one process", value=round(one), unit="instances/s"),
      peer=dict(label="official script, measured when the issue was filed",
                value=OFFICIAL_PER_PROCESS, unit="instances/s"),
      higher_is_better=True,
      ceiling=dict(label=f"{many} cores x one process; {many} workers: "
                   f"{rates['local', many]:,.0f}", value=round(many * one),
                   unit="instances/s"),
      reached=round(rates["local", many]), machine=common.machine_line(),
      date=time.strftime("%Y-%m-%d"), command=command,
      conditions=f"load average {os.getloadavg()[0]:.1f} at the end")]


if __name__ == "__main__":
  define_flags()
  app.run(main)
