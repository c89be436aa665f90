"""The same bytes before and after a change: pretraining data and exports.

  python -m benchmarks.investigations.byte_identity --before=0212147

A refactor that moves code must not change what the tools write. This runs
the same commands, through the command-line tools (whose names and flags
both trees share), in a temporary `git worktree add --detach` of `--before`
and in this tree (or `--after`), from the same inputs, and compares every
file:

  corpus            Python docstrings and Chinese lines, two files (made once)
  spm/, wp/         a SentencePiece model (trained once: its trainer is not
                    deterministic run to run) and a WordPiece vocab.txt
  data/             create_pretraining_data: SOP with 2 workers, NSP, WordPiece
                    with whole-word masking (jieba), and the Beam DirectRunner
  export/           export_savedmodel (encoder + MLM head, preprocessor) of a
                    4-step run_pretraining checkpoint made once, in this tree
  cls_export/       run_classifier --export_dir on a crafted SST-2 layout
  tflite/           export_tflite of the encoder (float) and the classifier
                    (dynamic int8)

Equal means equal bytes, except: fingerprint.pb (a random UUID per save);
the stats JSON files, compared without their timings and input fingerprint
(mtimes); SavedModel variables, compared tensor by tensor without dropout's
random-generator states (drawn when the model is built). The run's seeds
make fine-tuning reproducible within a tree (--seed).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Dict, List

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
_IGNORED_STATS = ("seconds", "instances_per_second", "fingerprint")
_TINY_CONFIG = dict(
    vocab_size=600, embedding_size=16, hidden_size=32, num_hidden_layers=2,
    num_attention_heads=4, intermediate_size=64, max_position_embeddings=64,
    hidden_act="gelu", hidden_dropout_prob=0.1,
    attention_probs_dropout_prob=0.1, type_vocab_size=2,
    initializer_range=0.02, num_hidden_groups=1, inner_group_num=1)


def write_inputs(folder: str) -> None:
  """The corpus, the config and a crafted SST-2 folder, in `folder`."""
  import inspect
  import random
  import re
  import string
  import textwrap
  docs = []
  for module in (json, re, textwrap, os, argparse, string, inspect):
    for name, obj in sorted(vars(module).items()):
      doc = None if name.startswith("_") else inspect.getdoc(obj)
      if doc and len(doc) > 200:
        sentences = [s for s in re.split(r"(?<=[.!?])\s+",
                                         " ".join(doc.split())) if s]
        if len(sentences) >= 3:
          docs.append(sentences)
  chinese = ["今天天气很好，我们去公园散步吧。",
             "他每天早上六点起床，然后去跑步。",
             "这家饭馆的饺子非常好吃。", "长城是中国最有名的古迹之一。"]
  docs += [[chinese[(i + k) % 4] for k in range(4)] for i in range(20)]
  os.makedirs(os.path.join(folder, "corpus"))
  half = len(docs) // 2
  for name, part in (("a", docs[:half]), ("b", docs[half:])):
    with open(os.path.join(folder, "corpus", f"{name}.txt"), "w",
              encoding="utf-8") as f:
      f.write("\n\n".join("\n".join(d) for d in part) + "\n")
  with open(os.path.join(folder, "config.json"), "w") as f:
    json.dump(_TINY_CONFIG, f)
  rng = random.Random(0)
  words = ("good bad fine awful great poor nice terrible movie film plot "
           "actor").split()
  glue = os.path.join(folder, "glue", "SST-2")
  os.makedirs(glue)
  for split, n in (("train", 64), ("dev", 16), ("test", 8)):
    with open(os.path.join(glue, f"{split}.tsv"), "w") as f:
      f.write("index\tsentence\n" if split == "test" else "sentence\tlabel\n")
      for i in range(n):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(3, 12)))
        label = int("good" in text or "great" in text)
        f.write(f"{i}\t{text}\n" if split == "test" else f"{text}\t{label}\n")


def _tool(tree: str, name: str, *flags: str) -> None:
  env = dict(os.environ, PYTHONPATH=tree, TF_CPP_MIN_LOG_LEVEL="3")
  done = subprocess.run([sys.executable, "-m", f"tools.{name}", *flags],
                        cwd=tree, env=env, capture_output=True, text=True)
  if done.returncode != 0:
    raise RuntimeError(f"tools.{name} failed in {tree}:\n"
                       f"{done.stderr[-3000:]}")


def make_artifacts(tree: str, out: str, shared: str) -> None:
  """Runs the tools of `tree` into `out` from the inputs in `shared`."""
  spm = os.path.join(shared, "spm", "albert.model")
  vocab = os.path.join(shared, "wp", "vocab.txt")
  corpus = os.path.join(shared, "corpus", "*.txt")
  data = os.path.join(out, "data")
  common = ["--max_seq_length=64", "--max_predictions_per_seq=8",
            "--dupe_factor=2", f"--input_file={corpus}"]
  _tool(tree, "train_wordpiece", f"--input={corpus}",
        f"--vocab_file={out}/wp/vocab.txt", "--vocab_size=800",
        "--do_lower_case")
  for name, flags in (
      ("sop", ["--num_output_shards=3", f"--spm_model_file={spm}",
               "--ngram=3", "--num_workers=2"]),
      ("nsp", ["--num_output_shards=2", f"--spm_model_file={spm}",
               "--random_next_sentence", "--random_seed=7"]),
      ("wp", ["--num_output_shards=2", f"--vocab_file={vocab}",
              "--do_lower_case", "--do_whole_word_mask",
              "--word_segmenter=jieba"]),
      ("beam", ["--num_output_shards=2", f"--spm_model_file={spm}",
                "--runner=DirectRunner"])):
    _tool(tree, "create_pretraining_data", *common, *flags,
          f"--output_file={data}/{name}.tfrecord")
  config = os.path.join(shared, "config.json")
  checkpoint = os.path.join(shared, "run")
  _tool(tree, "export_savedmodel", f"--albert_config_file={config}",
        f"--init_checkpoint={checkpoint}", f"--spm_model_file={spm}",
        f"--export_dir={out}/export", "--do_lower_case", "--with_mlm")
  _tool(tree, "run_classifier", "--do_train", "--do_eval",
        "--do_predict", "--task_name=SST-2",
        f"--data_dir={shared}/glue/SST-2", f"--output_dir={out}/cls",
        f"--albert_config_file={config}", f"--init_checkpoint={checkpoint}",
        f"--spm_model_file={spm}", "--max_seq_length=32",
        "--train_batch_size=8", "--train_step=8", "--warmup_step=1",
        "--seed=5", f"--export_dir={out}/cls_export")
  _tool(tree, "export_tflite", f"--saved_model={out}/export/encoder",
        f"--output_file={out}/tflite/encoder.tflite", "--seq_length=32")
  _tool(tree, "export_tflite", f"--saved_model={out}/cls_export",
        f"--output_file={out}/tflite/cls.tflite", "--seq_length=32",
        "--quantize=dynamic_int8")
  shutil.rmtree(os.path.join(out, "cls"))  # checkpoints: not compared


def make_shared_inputs(shared: str) -> None:
  """Inputs both trees read: the corpus, a SentencePiece model and a 4-step
  pretraining checkpoint (both made once, by this tree's tools)."""
  write_inputs(shared)
  corpus = os.path.join(shared, "corpus", "*.txt")
  _tool(REPO_ROOT, "train_sentencepiece", f"--input={corpus}",
        f"--model_prefix={shared}/spm/albert", "--vocab_size=600",
        "--do_lower_case")
  _tool(REPO_ROOT, "create_pretraining_data", f"--input_file={corpus}",
        f"--output_file={shared}/records/train.tfrecord",
        f"--spm_model_file={shared}/spm/albert.model", "--max_seq_length=64",
        "--max_predictions_per_seq=8", "--dupe_factor=2")
  _tool(REPO_ROOT, "run_pretraining",
        f"--input_file={shared}/records/train.tfrecord",
        f"--output_dir={shared}/run",
        f"--albert_config_file={shared}/config.json", "--train_batch_size=8",
        "--max_seq_length=64", "--max_predictions_per_seq=8",
        "--learning_rate=0.001", "--num_train_steps=4",
        "--num_warmup_steps=1", "--save_checkpoints_steps=4",
        "--iterations_per_loop=2", "--seed=3")
  _tool(REPO_ROOT, "train_wordpiece", f"--input={corpus}",
        f"--vocab_file={shared}/wp/vocab.txt", "--vocab_size=800",
        "--do_lower_case")


def _files(root: str) -> List[str]:
  return sorted(os.path.relpath(os.path.join(d, f), root)
                for d, _, names in os.walk(root) for f in names)


def _variables_equal(a: str, b: str) -> bool:
  import numpy as np
  import tensorflow as tf
  reader_a = tf.train.load_checkpoint(a)
  reader_b = tf.train.load_checkpoint(b)
  names = reader_a.get_variable_to_shape_map()
  if set(names) != set(reader_b.get_variable_to_shape_map()):
    return False
  for name in names:
    if "rng/_state_var" in name:  # dropout generators, drawn at build time
      continue
    x, y = reader_a.get_tensor(name), reader_b.get_tensor(name)
    if not (x == y if isinstance(x, bytes) else np.array_equal(x, y)):
      return False
  return True


def compare(before: str, after: str) -> Dict[str, List[str]]:
  """{"equal": [...], "differ": [...], "only_before": [...],
  "only_after": [...]} relative file paths (module docstring's rules)."""
  files_a, files_b = set(_files(before)), set(_files(after))
  result = {"equal": [], "differ": [],
            "only_before": sorted(files_a - files_b),
            "only_after": sorted(files_b - files_a)}
  for path in sorted(files_a & files_b):
    a, b = os.path.join(before, path), os.path.join(after, path)
    if path.endswith("fingerprint.pb") or path.endswith(".index") and (
        "variables" in path):
      continue  # a random UUID; the index is compared with the data
    if path.endswith("stats.json"):
      with open(a) as f, open(b) as g:
        values = [json.load(f), json.load(g)]
      for value in values:
        for key in _IGNORED_STATS:
          value.pop(key, None)
      same = values[0] == values[1]
    elif "variables/variables.data" in path:
      same = _variables_equal(a.split(".data-")[0], b.split(".data-")[0])
    else:
      with open(a, "rb") as f, open(b, "rb") as g:
        same = f.read() == g.read()
    result["equal" if same else "differ"].append(path)
  return result


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--before", required=True, help="A commit.")
  parser.add_argument("--after", default="", help="A commit (default: this "
                      "tree as it is).")
  args = parser.parse_args(argv)
  work = tempfile.mkdtemp(prefix="byte_identity_")
  trees = {}
  try:
    for name, commit in (("before", args.before), ("after", args.after)):
      if commit:
        trees[name] = os.path.join(work, f"tree_{name}")
        subprocess.run(["git", "worktree", "add", "--detach", trees[name],
                        commit], cwd=REPO_ROOT, check=True,
                       capture_output=True)
      else:
        trees[name] = REPO_ROOT
    shared = os.path.join(work, "shared")
    make_shared_inputs(shared)
    # The same output path in both trees: paths are recorded in sidecars.
    out = os.path.join(work, "out")
    for name in ("before", "after"):
      make_artifacts(trees[name], out, shared)
      os.rename(out, os.path.join(work, name))
    result = compare(os.path.join(work, "before"), os.path.join(work, "after"))
  finally:
    for name, tree in trees.items():
      if tree != REPO_ROOT:
        subprocess.run(["git", "worktree", "remove", "--force", tree],
                       cwd=REPO_ROOT, capture_output=True)
  print(f"{len(result['equal'])} files equal, {len(result['differ'])} "
        f"differ, {len(result['only_before'])} only before, "
        f"{len(result['only_after'])} only after ({work})")
  for key in ("differ", "only_before", "only_after"):
    for path in result[key]:
      print(f"  {key}: {path}")
  return 0 if not (result["differ"] or result["only_before"] or
                   result["only_after"]) else 1


if __name__ == "__main__":
  sys.exit(main())
