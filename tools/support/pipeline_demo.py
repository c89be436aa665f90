"""The whole pipeline on a corpus built on this machine (what `make demo` runs).

  1. corpus: the Python standard library's docstrings, split by document
     into train (95%) and held-out (5%) text; cached in <output_dir>/corpus.
  2. a SentencePiece model with the ALBERT recipe (or, with
     tokenizer="wordpiece", a WordPiece vocab.txt as the Chinese models use).
  3. pretraining TFRecords (SOP + n-gram masking) for both splits.
  4. pretraining a small ALBERT with LAMB on the CPU.
  5. held-out MLM and SOP accuracy next to their baselines, and a SavedModel.

Each stage is skipped when its output exists, so a rerun resumes. The
output_dir may be on any TensorFlow filesystem (`gs://`).
"""

import collections
import dataclasses
import os
import random
import time
from typing import Dict, Optional, Tuple

from absl import logging

from albert_common import file_io
from albert_tf.config import AlbertConfig

STAGES = 6


@dataclasses.dataclass(frozen=True)
class DemoSettings:
  output_dir: str = "demo_output"
  vocab_size: int = 5000
  max_seq_length: int = 64
  max_predictions_per_seq: int = 10
  dupe_factor: int = 5
  train_batch_size: int = 64
  num_train_steps: int = 600
  num_warmup_steps: Optional[int] = None  # default: 10% of the steps
  learning_rate: float = 5e-3
  save_checkpoints_steps: int = 200
  seed: int = 12345
  # "sentencepiece" (ALBERT's) or "wordpiece" (BERT's vocab.txt, as the
  # released Chinese ALBERTs): every stage reaches it through the same flags.
  tokenizer: str = "sentencepiece"
  # A small ALBERT: factorized E=64 -> H=256, one block shared by 4 layers.
  model: AlbertConfig = AlbertConfig(
      vocab_size=5000, embedding_size=64, hidden_size=256,
      num_hidden_layers=4, num_attention_heads=4, intermediate_size=512,
      max_position_embeddings=64)


def _stage(number: int, text: str) -> float:
  print(f"\n[{number}/{STAGES}] {text}", flush=True)
  return time.time()


def _done(started: float, text: str) -> None:
  print(f"      {text} ({time.time() - started:.0f} s)", flush=True)


def split_corpus(corpus: str, train_path: str, heldout_path: str,
                 heldout_fraction: float = 0.05, seed: int = 0) -> Tuple[int,
                                                                         int]:
  """Splits a corpus by document; returns (train, held-out) document counts."""
  documents = [d for d in file_io.read_text(corpus).split("\n\n")
               if d.strip()]
  random.Random(seed).shuffle(documents)
  count = max(1, int(len(documents) * heldout_fraction))
  for path, part in ((heldout_path, documents[:count]),
                     (train_path, documents[count:])):
    file_io.write_atomic(path, "\n\n".join(part) + "\n")
  return len(documents) - count, count


def heldout_baselines(path: str, max_seq_length: int,
                      max_predictions_per_seq: int) -> Dict[str, float]:
  """Chance baselines on the held-out records.

  mlm: accuracy of always predicting the most frequent masked token;
  sop: accuracy of always predicting the majority order label.
  """
  from data_pipeline.pretraining import reader as pretraining_input
  dataset = pretraining_input.pretraining_dataset(
      path, batch_size=1, max_seq_length=max_seq_length,
      max_predictions_per_seq=max_predictions_per_seq, is_training=False)
  tokens, labels = collections.Counter(), collections.Counter()
  for batch in dataset:
    ids = batch["masked_lm_ids"].numpy()[0]
    weights = batch["masked_lm_weights"].numpy()[0]
    tokens.update(ids[weights > 0].tolist())
    labels.update(batch["next_sentence_labels"].numpy().reshape(-1).tolist())
  return dict(mlm=tokens.most_common(1)[0][1] / sum(tokens.values()),
              sop=labels.most_common(1)[0][1] / sum(labels.values()))


def run_demo(settings: DemoSettings) -> Dict[str, float]:
  """Runs every stage; returns held-out metrics and baselines."""
  paths = _demo_paths(settings.output_dir)
  _build_corpus(paths)
  _train_vocabulary(settings, paths)
  _write_pretraining_data(settings, paths)
  results = _pretrain(settings, paths)
  metrics = _evaluate_heldout(settings, paths, results)
  started = _stage(6, "SavedModel export (TF Hub encoder + preprocessor)")
  export_dir = _export(settings, paths)
  _done(started, export_dir or "skipped")
  _print_summary(metrics, paths, export_dir, _vocabulary(settings, paths),
                 settings.max_seq_length)
  return metrics


def _demo_paths(output_dir: str) -> Dict[str, str]:
  """Where each stage writes, under `output_dir` (created)."""
  out = output_dir
  if not file_io.is_remote(out):
    out = os.path.abspath(out)
  join = file_io.join
  paths = dict(corpus=join(out, "corpus", "stdlib_docs.txt"),
               train_text=join(out, "corpus", "train.txt"),
               heldout_text=join(out, "corpus", "heldout.txt"),
               spm=join(out, "spm", "albert_spm"),
               vocab=join(out, "vocab", "vocab.txt"),
               train=join(out, "data", "train.tfrecord"),
               heldout=join(out, "data", "heldout.tfrecord"),
               config=join(out, "albert_config.json"),
               run=join(out, "pretraining"),
               export=join(out, "savedmodel"))
  for key in ("corpus", "train"):  # the vocabulary's: by its own stage
    file_io.makedirs(file_io.dirname(paths[key]))
  return paths


def _build_corpus(paths: Dict[str, str]) -> None:
  from data_pipeline.corpora import stdlib_corpus
  started = _stage(1, "English corpus from the standard library's docstrings")
  if file_io.exists(paths["heldout_text"]):
    _done(started, f"cached in {file_io.dirname(paths['corpus'])}")
    return
  stats = stdlib_corpus.write_stdlib_corpus(paths["corpus"])
  train_docs, heldout_docs = split_corpus(paths["corpus"],
                                          paths["train_text"],
                                          paths["heldout_text"])
  _done(started, f"{stats['documents']:,} documents, {stats['bytes']:,} "
        f"bytes: {train_docs:,} train / {heldout_docs:,} held out")


def _vocabulary(settings: DemoSettings, paths: Dict[str, str]
                ) -> Dict[str, Optional[str]]:
  """The tokenizer flags of the data and export stages."""
  if settings.tokenizer == "wordpiece":
    return dict(spm_model_file=None, vocab_file=paths["vocab"])
  return dict(spm_model_file=paths["spm"] + ".model", vocab_file=None)


def _train_vocabulary(settings: DemoSettings, paths: Dict[str, str]) -> None:
  from data_pipeline.tokenization import sentencepiece_trainer
  if settings.tokenizer == "wordpiece":
    from data_pipeline.tokenization import wordpiece_trainer
    started = _stage(2, "WordPiece vocabulary (BERT's vocab.txt layout)")
    file_io.makedirs(file_io.dirname(paths["vocab"]))
    if not file_io.exists(paths["vocab"]):
      wordpiece_trainer.train_wordpiece(paths["train_text"], paths["vocab"],
                                        vocab_size=settings.vocab_size)
    _done(started, f"at most {settings.vocab_size} pieces: {paths['vocab']}")
    return
  started = _stage(2, "SentencePiece model (ALBERT recipe)")
  file_io.makedirs(file_io.dirname(paths["spm"]))
  if not file_io.exists(paths["spm"] + ".model"):
    sentencepiece_trainer.train_sentencepiece(
        paths["train_text"], paths["spm"], vocab_size=settings.vocab_size,
        do_lower_case=True)
  _done(started, f"{settings.vocab_size} pieces: {paths['spm']}.model")


def _write_pretraining_data(settings: DemoSettings,
                            paths: Dict[str, str]) -> None:
  from data_pipeline.pretraining import instance_options
  from data_pipeline.pretraining import writer as pretraining_writer
  started = _stage(3, "pretraining data (SOP pairs, n-gram whole-word masks)")
  options = instance_options.InstanceOptions(
      max_seq_length=settings.max_seq_length,
      max_predictions_per_seq=settings.max_predictions_per_seq)
  for split, text, dupe in (("train", paths["train_text"],
                             settings.dupe_factor),
                            ("heldout", paths["heldout_text"], 2)):
    if not file_io.exists(paths[split]):
      vocabulary = _vocabulary(settings, paths)
      stats = pretraining_writer.create_pretraining_data(
          text, paths[split], vocabulary["spm_model_file"], options,
          dupe_factor=dupe, random_seed=settings.seed, show_progress=False,
          vocab_file=vocabulary["vocab_file"])
      print(f"      {split}: {stats['instances']:,} instances, "
            f"{stats['masked_tokens']:,} masked tokens")
  _done(started, file_io.dirname(paths["train"]))


def _pretrain(settings: DemoSettings, paths: Dict[str, str]):
  """Pretrains (or resumes); returns the final eval metrics."""
  from albert_tf.training.pretraining import driver as pretraining
  started = _stage(4, f"pretraining ALBERT (E={settings.model.embedding_size}"
                   f", H={settings.model.hidden_size}, "
                   f"{settings.model.num_hidden_layers} layers sharing one "
                   f"block) for {settings.num_train_steps} steps of "
                   f"{settings.train_batch_size} on the CPU")
  settings.model.to_json_file(paths["config"])
  params = pretraining.PretrainingParams.from_flat(
      input_file=paths["train"], eval_file=paths["heldout"],
      output_dir=paths["run"], albert_config_file=paths["config"],
      train_batch_size=settings.train_batch_size, eval_batch_size=32,
      max_seq_length=settings.max_seq_length,
      max_predictions_per_seq=settings.max_predictions_per_seq,
      learning_rate=settings.learning_rate,
      num_train_steps=settings.num_train_steps,
      num_warmup_steps=(settings.num_warmup_steps
                        if settings.num_warmup_steps is not None
                        else settings.num_train_steps // 10),
      save_checkpoints_steps=settings.save_checkpoints_steps,
      iterations_per_loop=50, max_eval_steps=-1, seed=settings.seed,
      keep_checkpoint_max=3)
  # A rerun of a finished demo reads the results it saved.
  results = pretraining.run_pretraining(params)
  _done(started, f"checkpoints in {paths['run']}")
  return results


def _evaluate_heldout(settings: DemoSettings, paths: Dict[str, str],
                      results) -> Dict[str, float]:
  started = _stage(5, "held-out evaluation")
  baselines = heldout_baselines(paths["heldout"], settings.max_seq_length,
                                settings.max_predictions_per_seq)
  metrics = dict(mlm_accuracy=float(results["mlm_accuracy"]),
                 sop_accuracy=float(results["sop_accuracy"]),
                 mlm_baseline=baselines["mlm"], sop_baseline=baselines["sop"])
  _done(started, "done")
  return metrics


def _shown(path: str) -> str:
  """A local path relative to the working folder when it is inside it."""
  if file_io.is_remote(path):
    return path
  relative = os.path.relpath(path)
  return path if relative.startswith("..") else relative


def _print_summary(metrics: Dict[str, float], paths: Dict[str, str],
                   export_dir: Optional[str],
                   vocabulary: Dict[str, Optional[str]],
                   max_seq_length: int) -> None:
  paths = {k: _shown(v) for k, v in paths.items()}
  export_dir = export_dir and _shown(export_dir)
  print("\n" + "=" * 72)
  print(f"held-out MLM accuracy  {metrics['mlm_accuracy']:7.1%}   (most "
        f"frequent token: {metrics['mlm_baseline']:.1%})")
  print(f"held-out SOP accuracy  {metrics['sop_accuracy']:7.1%}   (majority "
        f"label: {metrics['sop_baseline']:.1%})")
  print(f"checkpoints            {paths['run']}")
  print(f"TensorBoard logs       {paths['run']}/train, {paths['run']}/eval")
  if export_dir:
    print(f"SavedModel             {export_dir}/encoder, "
          f"{export_dir}/preprocessor")
  print(f"open TensorBoard       .venv/bin/tensorboard --logdir "
        f"{paths['run']}")
  flag, path = next((f"--{k}", _shown(v)) for k, v in vocabulary.items() if v)
  print("next: fine-tune it on your own labelled file (CSV, TSV, JSON lines "
        "or Parquet;\n      docs/finetuning.md, \"Your own data\"):")
  print(f"  python -m tools.run_classifier --train_file=train.csv "
        f"--dev_file=dev.csv \\\n      --init_checkpoint={paths['run']} "
        f"--albert_config_file={paths['config']} \\\n      {flag}={path} "
        f"--max_seq_length={max_seq_length} --output_dir=runs/mine "
        "--do_train --do_eval")
  print("=" * 72)
  logging.info("demo metrics: %s", metrics)


def _export(settings, paths):
  """Exports the final checkpoint; returns the export directory."""
  import tensorflow as tf

  from albert_tf import exports
  if file_io.exists(paths["export"]):
    return paths["export"]
  vocabulary = _vocabulary(settings, paths)
  exports.export_savedmodel(
      AlbertConfig.from_json_file(paths["config"]),
      tf.train.latest_checkpoint(paths["run"]),
      vocabulary["spm_model_file"], paths["export"], do_lower_case=True,
      with_mlm=True, seq_length=settings.max_seq_length,
      vocab_file=vocabulary["vocab_file"])
  return paths["export"]
