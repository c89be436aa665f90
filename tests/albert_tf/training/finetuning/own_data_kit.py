"""Crafted own-data tasks the fine-tuning tests learn: sentences of a real
English corpus with keywords put in, labelled by which keywords they hold.
No sentence held a keyword before.

  classification  one of three keywords in each sentence; the label is its
                  class ("fruit", "music", "volcano")
  regression      0 to 3 copies of "banana"; the label is copies / 2 + 0.25
  multi_label     each keyword in or not (probability 1/2); the labels are
                  the classes of those in
  multiple choice C short sentences; the right choice holds "banana"
"""

import csv
import json
import random

from absl import flags
from absl import logging as absl_logging

from albert_tf.config import AlbertConfig
from albert_tf.training.finetuning.own_data_settings import OwnDataOptions

KEYWORDS = {"fruit": "banana", "music": "guitar", "volcano": "lava"}
SEQ = 32


def corpus_lines(english_corpus, count, words=9, seed=0):
  """`count` corpus lines of >= 4 words (their first `words`), shuffled,
  none holding a keyword."""
  with open(english_corpus, encoding="utf-8") as f:
    lines = [line.split()[:words] for line in f
             if len(line.split()) >= 4 and
             not any(k in line.lower() for k in KEYWORDS.values())]
  random.Random(seed).shuffle(lines)
  assert len(lines) >= count
  return lines[:count]


def _insert(words, word, rng):
  words = list(words)
  words.insert(rng.randint(0, len(words)), word)
  return words


def classification_rows(lines, seed):
  rng = random.Random(seed)
  rows = []
  for i, words in enumerate(lines):
    name = rng.choice(sorted(KEYWORDS))
    rows.append({"id": f"r{i}", "text": " ".join(_insert(
        words, KEYWORDS[name], rng)), "label": name})
  return rows


def regression_rows(lines, seed):
  rng = random.Random(seed)
  rows = []
  for words in lines:
    copies = rng.randint(0, 3)
    for _ in range(copies):
      words = _insert(words, "banana", rng)
    rows.append({"text": " ".join(words), "label": copies / 2 + 0.25})
  return rows


def multi_label_rows(lines, seed):
  rng = random.Random(seed)
  rows = []
  for i, words in enumerate(lines):
    names = [n for n in sorted(KEYWORDS) if rng.random() < 0.5]
    for name in names:
      words = _insert(words, KEYWORDS[name], rng)
    rows.append({"id": i, "text": " ".join(words), "label": names})
  return rows


def choice_rows(lines, num_choices, seed):
  """Questions of `num_choices` short choices, the right one with
  "banana"; contexts and questions vary but carry no signal."""
  rng = random.Random(seed)
  rows = []
  for i in range(len(lines) // num_choices):
    group = lines[i * num_choices:(i + 1) * num_choices]
    label = rng.randrange(num_choices)
    choices = [" ".join(_insert(w[:5], "banana", rng) if j == label
                        else w[:5]) for j, w in enumerate(group)]
    rows.append({"id": f"q{i}", "context": " ".join(group[0][5:]),
                 "question": "which one is it?", "choices": choices,
                 "label": label})
  return rows


def write_jsonl(path, rows):
  with open(path, "w", encoding="utf-8") as f:
    f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
  return str(path)


def write_csv(path, rows, columns, convert=None):
  with open(path, "w", encoding="utf-8", newline="") as f:
    writer = csv.writer(f)
    writer.writerow(columns)
    for row in rows:
      row = convert(row) if convert else row
      writer.writerow([row[c] for c in columns])
  return str(path)


def write_tsv(path, rows, columns):
  with open(path, "w", encoding="utf-8") as f:
    f.write("\t".join(columns) + "\n")
    f.writelines("\t".join(str(r[c]) for c in columns) + "\n" for r in rows)
  return str(path)


def write_parquet(path, rows, columns):
  import pyarrow as pa
  import pyarrow.parquet as pq
  pq.write_table(pa.table({c: [r[c] for r in rows] for c in columns}),
                 str(path), row_group_size=64)
  return str(path)


def tiny_config(path, vocab_size=2000, dropout=0.1, hidden_size=32,
                num_hidden_layers=2):
  """A tiny ALBERT (H=32, 2 layers, 64 positions) written to `path`."""
  AlbertConfig(vocab_size=vocab_size, embedding_size=16,
               hidden_size=hidden_size, num_hidden_layers=num_hidden_layers,
               num_attention_heads=4, intermediate_size=2 * hidden_size,
               max_position_embeddings=64,
               hidden_dropout_prob=dropout,
               attention_probs_dropout_prob=dropout,
               initializer_range=0.02).to_json_file(str(path))
  return str(path)


def run_settings(output_dir, config_file, spm_model="", vocab_file="",
                 **kwargs):
  """Prepared FinetuningParams of a fast tiny run (kwargs override)."""
  from albert_tf.training.finetuning import params as finetuning_params
  values = dict(output_dir=str(output_dir), albert_config_file=config_file,
                spm_model_file=spm_model, vocab_file=vocab_file,
                do_train=True, do_eval=True, max_seq_length=SEQ,
                train_batch_size=32, eval_batch_size=64, learning_rate=1e-3,
                train_step=300, warmup_step=30, save_checkpoints_steps=100,
                iterations_per_loop=50, log_steps=100, seed=0)
  values.update(kwargs)
  return finetuning_params.prepare(
      finetuning_params.FinetuningParams.from_flat(**values))


def options(**values):
  """OwnDataOptions from flat flag values."""
  return OwnDataOptions.from_flat(**values)


def read_jsonl(path):
  """The records of a JSON lines file."""
  with open(path, encoding="utf-8") as f:
    return [json.loads(line) for line in f]


def read_json(path):
  """The value of a JSON file."""
  with open(path, encoding="utf-8") as f:
    return json.load(f)


def run_tool(tool, *args):
  """tools.<tool>'s main in this process, as `python -m` would run it;
  returns its exit status (0, or 1 with one "error:" line on stderr)."""
  import importlib
  module = importlib.import_module(f"tools.{tool}")
  from tools.support import cli
  flags.FLAGS.unparse_flags()
  try:
    flags.FLAGS([tool, *args])
    absl_logging.set_verbosity(absl_logging.INFO)
    cli._main_with_clean_errors(module.main)([tool])  # noqa: SLF001
    return 0
  except SystemExit as e:
    return e.code
  finally:
    flags.FLAGS.unparse_flags()
