"""The models `benchmarks.finetuning.distillation` compares, built by our
tools and cached under build/benchmarks/distillation/ (keyed by their
settings, so a rerun skips what it has):

  source_model: a small ALBERT pretrained on the standard library's
    docstrings (tools.support.pipeline_demo.run_demo: corpus,
    SentencePiece, SOP + n-gram data, LAMB), cached in source-<hash>/;
  task_files: the stdlib topics task split by file into train.csv,
    dev.csv, test.csv and an on-task unlabeled.csv (topic_splits), and
    off_task.csv: docstrings of modules no topic takes (the unlabeled
    file's control);
  finetune / distill: one `python -m tools.run_classifier` or
    `python -m tools.distill` run (a subprocess: each tool owns its flags),
    skipped when its eval_results.json exists and was made by this code
    (benchmarks.revision: a folder made by other code is refused);
  flops_per_example: the FLOPs formula of a config.
"""

import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import time
from typing import Dict, List, Optional, Sequence

from albert_common import file_io
from benchmarks import common
from benchmarks import revision as revision_lib
from benchmarks.finetuning import distillation_eval
from benchmarks.finetuning import topic_splits

CACHE = os.path.join(common.REPO_ROOT, "build", "benchmarks", "distillation")
MAX_UNLABELED = 3000
TEMPERATURE = 2  # every distilled run's --temperature


_REVISION: List[Dict] = []


def code_revision() -> Dict:
  """This code's revision (benchmarks.revision), read once per process;
  after read_runs_of, that commit's."""
  if not _REVISION:
    _REVISION.append(revision_lib.code_revision())
  return _REVISION[0]


def read_runs_of(commit: str) -> None:
  """From now on, runs are those `commit`'s code made (keyed and checked
  by its revision) and nothing is trained: a run or source model missing
  from the cache is a StaleRunError. For a harness change that does not
  touch what the runs compute (how they are scored, timed or reported)."""
  revision = revision_lib.code_revision_at(commit)
  _REVISION[:] = [dict(revision, read_only=True)]


def _read_only() -> bool:
  return bool(code_revision().get("read_only"))


def key(settings: Dict, revision: Optional[Dict] = None) -> str:
  """A short digest of settings (a dict of JSON values) and of the code's
  revision (default this code's): a cache folder's name."""
  revision = revision or code_revision()
  text = json.dumps(dict(settings, code=revision["key"]),
                    sort_keys=True)
  return hashlib.sha256(text.encode()).hexdigest()[:12]


def source_model(model: Dict, steps: int, seq_length: int,
                 batch_size: int = 64, learning_rate: float = 5e-3,
                 data_from: Optional[Dict] = None, cache: str = CACHE,
                 revision: Optional[Dict] = None) -> Dict:
  """The pretrained source model: {"checkpoint": pretraining run folder,
  "config": albert_config.json, "spm": SentencePiece model, "folder"}.
  model: AlbertConfig fields (vocab_size among them). data_from: another
  source model whose corpus, SentencePiece model and pretraining records
  this one copies (a narrower student needs the teacher's vocabulary
  byte for byte). cache: the folder it goes in; revision: the code
  revision it is keyed by (default this code's)."""
  from albert_tf.config import AlbertConfig
  from tools.support import pipeline_demo
  settings = dict(model=model, steps=steps, seq_length=seq_length,
                  batch_size=batch_size, learning_rate=learning_rate)
  if data_from:
    settings["data_from"] = data_from["folder"]
  folder = os.path.join(cache, "source-" + key(settings, revision))
  found = dict(folder=folder, checkpoint=os.path.join(folder, "pretraining"),
               config=os.path.join(folder, "albert_config.json"),
               spm=os.path.join(folder, "spm", "albert_spm.model"))
  if _read_only() and revision is None:
    if not os.path.exists(found["config"]):
      raise revision_lib.StaleRunError(
          f"{folder}: no source model of "
          f"{revision_lib.describe(code_revision())} here (--runs_from "
          "reads runs, it trains none)")
    return found
  if data_from:
    for part in ("corpus", "spm", "data"):
      if not os.path.exists(os.path.join(folder, part)):
        shutil.copytree(os.path.join(data_from["folder"], part),
                        os.path.join(folder, part))
  config = AlbertConfig.from_dict(dict(model,
                                       max_position_embeddings=seq_length))
  started = time.time()
  pipeline_demo.run_demo(pipeline_demo.DemoSettings(
      output_dir=folder, vocab_size=model["vocab_size"],
      max_seq_length=seq_length, train_batch_size=batch_size,
      num_train_steps=steps, learning_rate=learning_rate,
      save_checkpoints_steps=max(50, steps // 4 // 50 * 50), model=config))
  print(f"source model in {folder} ({time.time() - started:.0f} s)",
        flush=True)
  return found


def task_files(max_per_topic: int, cache: str = CACHE) -> Dict[str, str]:
  """train / dev / test / unlabeled.csv of the stdlib topics task
  (topic_splits: by file, test never selected on, unlabeled on-task text
  at least as many rows as train) and off_task.csv (column text): first
  sentences of docstrings of modules outside every topic, the control of
  the on-task unlabeled file."""
  from data_pipeline.corpora import stdlib_corpus
  from data_pipeline.corpora import stdlib_topics
  folder = os.path.join(cache, f"topics-{max_per_topic}-split4")
  names = ("train", "dev", "test", "unlabeled", "off_task")
  paths = {name: os.path.join(folder, f"{name}.csv") for name in names}
  if all(os.path.exists(p) for p in paths.values()):
    return paths
  splits = topic_splits.split(stdlib_topics.records_by_file(), max_per_topic)
  topic_splits.write(folder, splits)
  import sysconfig
  root = sysconfig.get_paths()["stdlib"]
  taken = {m for modules in stdlib_topics.TOPICS.values() for m in modules}
  texts = []
  for path in stdlib_corpus.python_files(root):
    top = os.path.relpath(path, root).split(os.sep)[0]
    if top.removesuffix(".py") in taken:
      continue
    for doc in stdlib_corpus.docstrings(path):
      sentences = stdlib_corpus.docstring_to_sentences(doc)
      if sentences:
        texts.append(" ".join(sentences[:stdlib_topics.MAX_SENTENCES]))
  # As many rows as the on-task file: the control differs in topic only.
  texts = sorted(set(texts), key=lambda t: hashlib.sha256(
      t.encode()).digest())[:len(splits["unlabeled"])]
  buffer = io.StringIO()
  writer = csv.writer(buffer, lineterminator="\n")
  writer.writerow(["text"])
  writer.writerows([t] for t in texts)
  file_io.write_atomic(paths["off_task"], buffer.getvalue())
  return paths


def run_tool(module: str, flags: Sequence[str], output_dir: str,
          log_name: str, root: Optional[str] = None,
          revision: Optional[Dict] = None,
          launcher: Sequence[str] = ("-m",)) -> Dict:
  """Runs `python -m module flags` unless output_dir/eval_results.json
  exists (made by this code: else StaleRunError); returns that file's
  metrics. root: the code tree to run it from (default this one; another
  tree comes with its `revision`). launcher: what comes between python and
  the module (a script that runs it, e.g. mask_stream.py STREAM)."""
  results = os.path.join(output_dir, "eval_results.json")
  root = root or common.REPO_ROOT
  revision = revision or code_revision()
  revision_lib.check(output_dir, revision, "eval_results.json")
  if not os.path.exists(results) and revision.get("read_only"):
    raise revision_lib.StaleRunError(
        f"{output_dir}: no run of {revision_lib.describe(revision)} here "
        "(--runs_from reads runs, it trains none)")
  if not os.path.exists(results):
    os.makedirs(os.path.dirname(output_dir), exist_ok=True)
    log = output_dir + ".log"
    command = [sys.executable, *launcher, module, *flags,
               f"--output_dir={output_dir}"]
    started = time.time()
    env = dict(os.environ, PYTHONPATH=root)
    with open(log, "w") as out:
      done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT,
                            cwd=root, env=env)
    if done.returncode:
      tail = open(log).read().strip().splitlines()[-3:]
      raise RuntimeError(f"{log_name}: {module} failed (log {log}): "
                         + " | ".join(tail))
    revision_lib.stamp(output_dir, revision)
    print(f"{log_name}: {time.time() - started:.0f} s", flush=True)
  with open(results) as f:
    return json.load(f)


def common_flags(task: Dict[str, str], spm: str, seq_length: int,
                 steps: int, batch_size: int, learning_rate: float,
                 seed: int) -> List[str]:
  """Fine-tuning's flags shared by run_classifier and distill runs: every
  run keeps all its distillation_eval.LOOKS checkpoints (one look at dev
  each, whatever its steps)."""
  looks = distillation_eval.LOOKS
  return [f"--train_file={task['train']}", f"--dev_file={task['dev']}",
          "--text_a_column=text", "--label_column=label",
          f"--spm_model_file={spm}", f"--max_seq_length={seq_length}",
          f"--train_batch_size={batch_size}", "--eval_batch_size=64",
          f"--learning_rate={learning_rate}", f"--train_step={steps}",
          f"--warmup_step={steps // 10}",
          f"--save_checkpoints_steps={max(-(-steps // looks), 1)}",
          f"--keep_checkpoint_max={looks}",
          f"--seed={seed}", "--do_train", "--do_eval"]


def finetune(output_dir: str, source: Dict, flags: List[str],
             layers: Optional[int] = None, early_exit: bool = False,
             export: bool = True) -> Dict:
  """A run_classifier run from the source checkpoint (layers: a config
  with that num_hidden_layers, the same weights)."""
  config = source["config"]
  if layers is not None:
    from albert_tf.config import AlbertConfig
    base = AlbertConfig.from_json_file(config)
    config = output_dir + "-config.json"
    os.makedirs(os.path.dirname(config), exist_ok=True)
    AlbertConfig.from_dict(dict(base.to_dict(), num_hidden_layers=layers)
                           ).to_json_file(config)
  extra = [f"--albert_config_file={config}",
           f"--init_checkpoint={source['checkpoint']}"]
  if early_exit:
    extra.append("--early_exit")
  if export:
    extra.append(f"--export_dir={output_dir}-export")
  return run_tool("tools.run_classifier", flags + extra, output_dir,
               os.path.basename(output_dir))


def distill(output_dir: str, teacher: str, flags: List[str],
            student_layers: int, intermediate_loss: str,
            unlabeled: str = "", export: bool = True,
            alpha: float = 0.5,
            student: Optional[Sequence[str]] = None) -> Dict:
  """A tools.distill run of `teacher` (a run folder) into the student of
  its first `student_layers` applications (alpha 0 with no intermediate
  loss: the cut fine-tuned on the gold labels alone), or, with student =
  (albert_config.json, checkpoint), into that narrower pretrained model."""
  extra = [f"--teacher={teacher}", f"--temperature={TEMPERATURE}",
           f"--alpha={alpha}",
           f"--intermediate_loss={intermediate_loss}"]
  if student:
    extra += [f"--student_config={student[0]}",
              f"--student_init_checkpoint={student[1]}"]
  else:
    extra.append(f"--student_layers={student_layers}")
  if unlabeled:
    extra.append(f"--unlabeled_file={unlabeled}")
  if export:
    extra.append(f"--export_dir={output_dir}-export")
  return run_tool("tools.distill", flags + extra, output_dir,
               os.path.basename(output_dir))


def flops_per_example(config: Dict, seq_length: int, num_classes: int
                      ) -> float:
  """FLOPs of one example's forward pass at seq_length S, from
  AlbertConfig fields (num_hidden_layers may be a mean depth), C classes:
  benchmarks.ceilings.encoder_flops (the one definition every row uses:
  a classifier's last application at [CLS] only, its keys and values at
  every position) plus the classifier's 2 H C. Softmax, GELU, LayerNorm
  and the embedding lookups are not counted (a few per cent here)."""
  import types

  from benchmarks import ceilings
  fields = types.SimpleNamespace(**dict(config, inner_group_num=config.get(
      "inner_group_num", 1)))
  return (ceilings.encoder_flops(fields, seq_length, last_positions=1)
          + 2 * config["hidden_size"] * num_classes)
