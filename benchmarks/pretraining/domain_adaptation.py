"""Continued pretraining on a new domain: old vocabulary against extended.

  python -m benchmarks.pretraining.domain_adaptation --write

Source model: a small ALBERT (E=64, H=128, 4 heads, intermediate 512, one
shared layer applied 6 times, sequence 64, 10 predictions) pretrained by
our tools on the standard library's docstrings (the demo's corpus, 95% /
5% by document; a 5,000-piece lowercased SentencePiece model), cached
under build/benchmarks/domain_adaptation/source-<settings digest>.

Domain (--domain):
  science   the default: the docstring prose of numpy, scipy, scikit-learn
            and pandas as installed in the venv (statistics, linear
            algebra, signal processing, estimators; built by
            benchmarks/pretraining/science_corpus.py), split by file.
            Downstream task: which of six subpackage groups (scipy.stats,
            scipy.signal, scipy.linalg, sklearn models, sklearn data,
            pandas) a paragraph comes from, balanced, dev paragraphs from
            held-out files only.
  code      the standard library's code without its docstrings, split by
            file (benchmarks/pretraining/code_corpus.py). Downstream task:
            which of six packages a 4-line snippet comes from.
Words are the better test of the tool: code's pieces are 44% punctuation,
which no SentencePiece piece joins to a letter, so no extension can cut
them. Fine-tuning: tools.run_classifier on one's own files, the same steps,
batch and learning rate for every contender, each keeping its
--finetune_evals checkpoints (the same number of looks at dev for every
contender). The held-out task rows are split into dev and test
(domain_figures.split_dev_test); each checkpoint is scored on both, and
the figure is the test accuracy at the checkpoint dev chose, beside the
last checkpoint's (benchmarks.accuracy.select). Seeds are paired: the
goal "better downstream" is met when the mean of per-seed differences
exceeds their spread. A contender within 2 binomial standard deviations of
the test split's majority-class rate stops --write in one line.

Contenders, each with 3 seeds (the seed of continued pretraining and of
fine-tuning):
  source      no continued pretraining;
  old vocab   tools.run_pretraining --init_checkpoint=source
              --restart_schedule on the domain's records;
  extended    tools.extend_vocabulary --new_pieces=N, the domain's records
              rewritten with its tokenizer, then the same continued run.
Every continued run has the same budget (steps x batch) and evaluates the
held-out docstring records (general text) before its first update, and
both contenders are evaluated after it on the same records (the source's,
old ids). The share of general-text words the extended tokenizer segments
differently, and pieces per task example beside the accuracy (fine-tuning
truncates at --max_seq_length), are measured by domain_figures.

Every stage's output is keyed by the settings and by the code's revision
(benchmarks.revision): a rerun after a code change runs again.

Measured: pieces per word and the <unk> rate of the held-out domain text,
held-out whole-word MLM accuracy (benchmarks/pretraining/whole_word_mlm.py),
the downstream dev accuracy; and the goals of continued pretraining
(domain_adaptation_report.py says how each is checked). Every stage's
output is kept under build/benchmarks/domain_adaptation/, keyed by the
settings, so a rerun resumes.
"""

import argparse
import dataclasses
import hashlib
import json
import os
import random
import subprocess
import sys
import time
from typing import Dict, List

from albert_common import file_io
from benchmarks import common
from benchmarks import revision as revision_lib
from benchmarks.pretraining import code_corpus
from benchmarks.pretraining import domain_adaptation_report as report
from benchmarks.pretraining import domain_figures
from benchmarks.pretraining import science_corpus

# Seconds of each tool run of this invocation (the rest came from the
# cache under WORK_ROOT).
TOOL_SECONDS: List[float] = []
WORK_ROOT = os.path.join(common.REPO_ROOT, "build", "benchmarks",
                         "domain_adaptation")
CONTENDERS = ("source", "old vocab", "extended")
DOMAINS = ("science", "code")


@dataclasses.dataclass(frozen=True)
class SourceSettings:
  vocab_size: int = 5000
  embedding_size: int = 64
  hidden_size: int = 128
  num_hidden_layers: int = 6
  num_attention_heads: int = 4
  intermediate_size: int = 512
  max_seq_length: int = 64
  max_predictions_per_seq: int = 10
  dupe_factor: int = 3
  train_batch_size: int = 64
  num_train_steps: int = 2500
  learning_rate: float = 5e-3
  seed: int = 12345


@dataclasses.dataclass(frozen=True)
class RunSettings:
  domain: str = "science"
  new_pieces: int = 1500
  domain_dupe_factor: int = 2
  continued_steps: int = 600
  continued_batch_size: int = 32
  continued_learning_rate: float = 1e-3
  finetune_steps: int = 600
  finetune_batch_size: int = 32
  finetune_learning_rate: float = 5e-4
  finetune_evals: int = 6
  train_per_class: int = 400
  dev_per_class: int = 75
  mlm_windows: int = 600
  seeds: tuple = (1, 2, 3)


def digest(*settings) -> str:
  """The settings', Python's and the code revision's digest: a cache
  folder's name."""
  text = json.dumps([dataclasses.asdict(s) for s in settings] +
                    [sys.version.split()[0], code_revision()["key"]],
                    sort_keys=True)
  return hashlib.md5(text.encode()).hexdigest()[:10]


_REVISION: List[Dict] = []


def code_revision() -> Dict:
  """This code's revision (benchmarks.revision), read once per process."""
  if not _REVISION:
    _REVISION.append(revision_lib.code_revision())
  return _REVISION[0]


def tool(name: str, *flags: str, log: str) -> None:
  """Runs `python -m tools.<name> flags` from the repository root, its
  output kept in `log`; a failure stops the benchmark with the tool's last
  output lines."""
  env = dict(os.environ, PYTHONPATH=os.pathsep.join(
      p for p in (common.REPO_ROOT, os.environ.get("PYTHONPATH")) if p))
  command = [sys.executable, "-m", f"tools.{name}", *flags]
  print("  $ " + common.command_line(f"tools.{name}", flags), flush=True)
  started = time.time()
  done = subprocess.run(command, cwd=common.REPO_ROOT, env=env,
                        capture_output=True, text=True)
  file_io.write_atomic(log, done.stdout + done.stderr)
  if done.returncode:
    tail = "\n".join((done.stdout + done.stderr).splitlines()[-25:])
    raise SystemExit(f"tools.{name} failed ({done.returncode}):\n{tail}")
  TOOL_SECONDS.append(time.time() - started)
  print(f"    ({TOOL_SECONDS[-1]:.0f} s, log {log})", flush=True)
  # Every stage's seconds, kept across invocations: a rerun that reuses
  # stages still reports what building them took.
  times = os.path.join(WORK_ROOT, "tool_seconds.json")
  kept = (json.loads(file_io.read_text(times)) if file_io.exists(times)
          else {})
  kept[os.path.relpath(log, WORK_ROOT)] = TOOL_SECONDS[-1]
  file_io.write_json_atomic(times, kept)


def stage_minutes(*roots: str) -> float:
  """Minutes of the tool runs kept in tool_seconds.json under `roots`."""
  times = os.path.join(WORK_ROOT, "tool_seconds.json")
  if not file_io.exists(times):
    return 0.0
  prefixes = tuple(os.path.relpath(r, WORK_ROOT) + os.sep for r in roots)
  return sum(seconds for log, seconds in json.loads(
      file_io.read_text(times)).items() if log.startswith(prefixes)) / 60


def write_records(text: str, output: str, spm_model: str,
                  source: SourceSettings, dupe_factor: int) -> str:
  """Pretraining records of `text` with the source's data settings (the
  library call of tools.create_pretraining_data); cached."""
  if not file_io.exists(output):
    from data_pipeline.pretraining import instance_options
    from data_pipeline.pretraining import writer
    writer.create_pretraining_data(
        text, output, spm_model, instance_options.InstanceOptions(
            max_seq_length=source.max_seq_length,
            max_predictions_per_seq=source.max_predictions_per_seq),
        dupe_factor=dupe_factor, random_seed=source.seed,
        show_progress=False)
  return output


def split_documents(corpus: str, train: str, heldout: str) -> None:
  """95% / 5% of the corpus' documents (seed 0), as the demo splits."""
  documents = [d for d in file_io.read_text(corpus).split("\n\n")
               if d.strip()]
  random.Random(0).shuffle(documents)
  count = max(1, len(documents) // 20)
  file_io.write_atomic(heldout, "\n\n".join(documents[:count]) + "\n")
  file_io.write_atomic(train, "\n\n".join(documents[count:]) + "\n")


def pretraining_flags(config: str, train: str, evaluate: str, output: str,
                      source: SourceSettings, steps: int, batch: int,
                      learning_rate: float, seed: int) -> List[str]:
  return [f"--albert_config_file={config}", f"--input_file={train}",
          f"--eval_file={evaluate}", f"--output_dir={output}",
          f"--max_seq_length={source.max_seq_length}",
          f"--max_predictions_per_seq={source.max_predictions_per_seq}",
          f"--train_batch_size={batch}", "--eval_batch_size=64",
          f"--learning_rate={learning_rate}", f"--num_train_steps={steps}",
          f"--num_warmup_steps={max(1, steps // 10)}",
          f"--save_checkpoints_steps={steps}",
          f"--iterations_per_loop={min(50, steps)}", "--max_eval_steps=-1",
          f"--seed={seed}"]


def build_source(source: SourceSettings) -> Dict[str, str]:
  """The source model (pretrained once per settings): its paths."""
  root = os.path.join(WORK_ROOT, f"source-{digest(source)}")
  join = os.path.join
  paths = dict(root=root, corpus=join(root, "stdlib_docs.txt"),
               train_text=join(root, "docs_train.txt"),
               heldout_text=join(root, "docs_heldout.txt"),
               spm=join(root, "albert_spm"),
               config=join(root, "albert_config.json"),
               run=join(root, "run"))
  paths["spm_model"] = paths["spm"] + ".model"
  paths["train"] = join(root, "docs_train.tfrecord")
  paths["heldout"] = join(root, "docs_heldout.tfrecord")
  if file_io.exists(join(paths["run"], "eval_results.json")):
    print(f"source model: cached in {root}", flush=True)
    return paths
  print(f"source model: pretraining in {root}", flush=True)
  from albert_tf.config import AlbertConfig
  from data_pipeline.corpora import stdlib_corpus
  from data_pipeline.tokenization import sentencepiece_trainer
  file_io.makedirs(root)
  if not file_io.exists(paths["heldout_text"]):
    stdlib_corpus.write_stdlib_corpus(paths["corpus"])
    split_documents(paths["corpus"], paths["train_text"],
                    paths["heldout_text"])
  if not file_io.exists(paths["spm_model"]):
    sentencepiece_trainer.train_sentencepiece(
        paths["train_text"], paths["spm"], vocab_size=source.vocab_size,
        do_lower_case=True)
  write_records(paths["train_text"], paths["train"], paths["spm_model"],
                source, source.dupe_factor)
  write_records(paths["heldout_text"], paths["heldout"], paths["spm_model"],
                source, 1)
  AlbertConfig(
      vocab_size=source.vocab_size, embedding_size=source.embedding_size,
      hidden_size=source.hidden_size,
      num_hidden_layers=source.num_hidden_layers,
      num_attention_heads=source.num_attention_heads,
      intermediate_size=source.intermediate_size,
      max_position_embeddings=source.max_seq_length).to_json_file(
          paths["config"])
  tool("run_pretraining", *pretraining_flags(
      paths["config"], paths["train"], paths["heldout"], paths["run"],
      source, source.num_train_steps, source.train_batch_size,
      source.learning_rate, source.seed), log=paths["run"] + ".log")
  return paths


def build_domain(root: str, src: Dict[str, str], source: SourceSettings,
                 run: RunSettings) -> Dict[str, str]:
  """The domain corpus, the task's files, the extended model and the
  records of both tokenizers: their paths."""
  join = os.path.join
  paths = dict(train_text=join(root, "domain_train.txt"),
               heldout_text=join(root, "domain_heldout.txt"),
               task_train=join(root, "task_train.jsonl"),
               task_dev=join(root, "task_dev.jsonl"),
               task_test=join(root, "task_test.jsonl"),
               extended=join(root, "extended"))
  if run.domain == "science":
    corpus, task_rows = (science_corpus.build_domain(),
                         science_corpus.paragraph_rows)
  else:
    corpus, task_rows = code_corpus.build_domain(), code_corpus.snippet_rows
  if not file_io.exists(paths["task_test"]):
    code_corpus.write_documents(paths["train_text"],
                                corpus.documents("train"))
    code_corpus.write_documents(paths["heldout_text"],
                                corpus.documents("heldout"))
    try:
      train_rows = task_rows(corpus, "train", run.train_per_class, seed=0)
      # dev_per_class rows a class for dev and as many for test.
      held = domain_figures.split_dev_test(task_rows(
          corpus, "heldout", 2 * run.dev_per_class, seed=1))
    except ValueError as error:
      raise SystemExit(f"--domain={run.domain}: {error}; lower "
                       "--train_per_class or --dev_per_class") from None
    code_corpus.write_rows(paths["task_train"], train_rows)
    code_corpus.write_rows(paths["task_dev"], held["dev"])
    code_corpus.write_rows(paths["task_test"], held["test"])
  if not file_io.exists(paths["extended"]):
    tool("extend_vocabulary", f"--init_checkpoint={src['run']}",
         f"--albert_config_file={src['config']}",
         f"--spm_model_file={src['spm_model']}",
         f"--input_file={paths['train_text']}",
         f"--new_pieces={run.new_pieces}",
         f"--output_dir={paths['extended']}",
         log=paths["extended"] + ".log")
  paths["extended_spm"] = join(paths["extended"],
                               os.path.basename(src["spm_model"]))
  paths["extended_config"] = join(paths["extended"], "albert_config.json")
  for name, spm_model in (("old", src["spm_model"]),
                          ("new", paths["extended_spm"])):
    paths[f"domain_{name}"] = write_records(
        paths["train_text"], join(root, f"domain_train_{name}.tfrecord"),
        spm_model, source, run.domain_dupe_factor)
  # The ceiling of "fewer pieces": a tokenizer of the extended size
  # trained on the domain's text alone.
  paths["domain_spm"] = join(root, "domain_only_spm")
  if not file_io.exists(paths["domain_spm"] + ".model"):
    from data_pipeline.tokenization import sentencepiece_trainer
    sentencepiece_trainer.train_sentencepiece(
        paths["train_text"], paths["domain_spm"],
        vocab_size=source.vocab_size + run.new_pieces, do_lower_case=True)
  paths["docs_new"] = write_records(
      src["heldout_text"], join(root, "docs_heldout_new.tfrecord"),
      paths["extended_spm"], source, 1)
  paths["corpus"] = corpus
  return paths


def continue_pretraining(root: str, src, dom, source: SourceSettings,
                         run: RunSettings) -> Dict[str, Dict[int, str]]:
  """{contender: {seed: run dir}} of the continued runs."""
  runs = {"old vocab": {}, "extended": {}}
  for seed in run.seeds:
    for name, config, init, train, evaluate in (
        ("old vocab", src["config"], src["run"], dom["domain_old"],
         src["heldout"]),
        ("extended", dom["extended_config"], dom["extended"],
         dom["domain_new"], dom["docs_new"])):
      output = os.path.join(root, f"continued_{name.split()[0]}_{seed}")
      runs[name][seed] = output
      if file_io.exists(os.path.join(output, "eval_results.json")) and (
          json.loads(file_io.read_text(os.path.join(
              output, "eval_results.json")))["step"] == run.continued_steps):
        continue
      tool("run_pretraining", f"--init_checkpoint={init}",
           "--restart_schedule", *pretraining_flags(
               config, train, evaluate, output, source, run.continued_steps,
               run.continued_batch_size, run.continued_learning_rate, seed),
           log=output + ".log")
  return runs


def finetune(root: str, name: str, seed: int, init: str, config: str,
             spm_model: str, dom, source: SourceSettings,
             run: RunSettings) -> Dict:
  """The downstream figures of one contender and seed: its run's
  `finetune_evals` checkpoints scored on dev and test, the one dev chose
  (benchmarks.accuracy.select: "test", "last", "dev")."""
  from benchmarks import accuracy
  output = os.path.join(root, f"task_{name.split()[0]}_{seed}")
  results = os.path.join(output, "eval_results.json")
  revision_lib.check(output, code_revision(), "eval_results.json")
  if not file_io.exists(results):
    tool("run_classifier", f"--train_file={dom['task_train']}",
         f"--dev_file={dom['task_dev']}", f"--init_checkpoint={init}",
         f"--albert_config_file={config}", f"--spm_model_file={spm_model}",
         f"--max_seq_length={source.max_seq_length}",
         f"--train_batch_size={run.finetune_batch_size}",
         f"--learning_rate={run.finetune_learning_rate}",
         f"--train_step={run.finetune_steps}",
         f"--warmup_step={run.finetune_steps // 10}",
         "--save_checkpoints_steps="
         f"{-(-run.finetune_steps // run.finetune_evals)}",
         f"--keep_checkpoint_max={run.finetune_evals}",
         f"--seed={seed}", "--do_train", "--do_eval",
         f"--output_dir={output}", log=output + ".log")
    revision_lib.stamp(output, code_revision())
  return accuracy.select(domain_figures.finetune_looks(
      output, dom["task_dev"], dom["task_test"], spm_model,
      source.max_seq_length, run.finetune_evals), f"{name}, seed {seed}")


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  defaults_source, defaults_run = SourceSettings(), RunSettings()
  for settings in (defaults_source, defaults_run):
    for field in dataclasses.fields(settings):
      if field.name != "seeds":
        parser.add_argument(
            f"--{field.name}", type=type(field.default),
            default=field.default,
            choices=DOMAINS if field.name == "domain" else None)
  parser.add_argument("--seeds", default="1,2,3")
  parser.add_argument("--write", action="store_true",
                      help="update BENCHMARKS.md (the domain's section) "
                      "and, for --domain=science, the numbers in "
                      "docs/continued-pretraining.md")
  args = parser.parse_args()
  values = vars(args)
  source = SourceSettings(**{f.name: values[f.name]
                             for f in dataclasses.fields(SourceSettings)})
  run = RunSettings(**{f.name: values[f.name]
                       for f in dataclasses.fields(RunSettings)
                       if f.name != "seeds"},
                    seeds=tuple(int(s) for s in args.seeds.split(",")))
  started = time.time()
  machine = common.machine_line()
  src = build_source(source)
  root = os.path.join(WORK_ROOT, f"run-{digest(source, run)}")
  file_io.makedirs(root)
  dom = build_domain(root, src, source, run)
  runs = continue_pretraining(root, src, dom, source, run)
  downstream = {name: {} for name in CONTENDERS}
  for seed in run.seeds:
    downstream["source"][seed] = finetune(
        root, "source", seed, src["run"], src["config"], src["spm_model"],
        dom, source, run)
    downstream["old vocab"][seed] = finetune(
        root, "old vocab", seed, runs["old vocab"][seed], src["config"],
        src["spm_model"], dom, source, run)
    downstream["extended"][seed] = finetune(
        root, "extended", seed, runs["extended"][seed],
        dom["extended_config"], dom["extended_spm"], dom, source, run)
  measured = report.measure(src, dom, runs, downstream, source, run)
  measured["minutes"] = (time.time() - started) / 60
  measured["tool_runs"] = len(TOOL_SECONDS)
  measured["stage_minutes"] = stage_minutes(src["root"], root)
  file_io.write_json_atomic(os.path.join(root, "results.json"), measured)
  argv = sys.argv[1:]
  refused = report.at_chance(measured)
  for line in refused:
    print(line)
  text = report.markdown(measured, source, run, machine,
                         common.command_line(
                             "benchmarks.pretraining.domain_adaptation",
                             argv))
  print(text)
  if args.write:
    if refused:
      parser.exit(1, f"error: {refused[0]}\n")
    report.write(text, run.domain)


if __name__ == "__main__":
  main()
