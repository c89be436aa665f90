"""What benchmarks.serving.corpus's contenders share: the corpus, the
SentencePiece model, the classifier export, the Hugging Face model, the
FLOPs ceiling (the corpus's real tokens' forward FLOPs at the matmul peak
at the export's bucket shapes), the positions a contender's batches
compute and the report's line on them.

The corpus: the standard library's docstring paragraphs
(data_pipeline.corpora.stdlib_corpus's prose filter applied to each
paragraph, its sentences joined by spaces), one row a line, repeated in
order to the rows asked for: real lengths, most short, a long tail.
"""

import dataclasses
import os
import re
import sysconfig
import time
from typing import Dict, List, Optional, Sequence

import numpy as np

from benchmarks import common

# The quick check's model: outputs spread over rows (initializer_range),
# so the contenders' outputs can be compared.
TINY = dict(embedding_size=16, hidden_size=32, num_hidden_layers=2,
            num_attention_heads=4, intermediate_size=64,
            initializer_range=0.2)
VOCAB_SIZE = 5000  # the SentencePiece model trained on the corpus
LABELS = ("negative", "positive")
# When ours (corpus_worker's `ours` and `ours_beam`) began and ended
# loading its export and first predicted, time.perf_counter() of this
# process: Beam's DirectRunner in multi_threading mode runs its workers as
# threads of the launching process, and unpickles timed_load by reference
# to this module, so its workers write here too.
TIMES: Dict[str, float] = {}


def paragraphs(stdlib_dir: Optional[str] = None) -> List[str]:
  """The prose paragraphs of the standard library's docstrings, in order."""
  from data_pipeline.corpora import stdlib_corpus
  rows = []
  root = stdlib_dir or sysconfig.get_paths()["stdlib"]
  for path in stdlib_corpus.python_files(root):
    for doc in stdlib_corpus.docstrings(path):
      for paragraph in re.split(r"\n\s*\n", doc):
        sentences = stdlib_corpus.docstring_to_sentences(paragraph)
        if sentences:
          rows.append(" ".join(sentences))
  return rows


class _FirstBatchTimed:
  """A predictor that notes its first predict call (TIMES["first_batch"])
  and is otherwise the predictor it wraps."""

  def __init__(self, predictor):
    self._predictor = predictor

  def __getattr__(self, name):
    return getattr(self._predictor, name)

  def predict(self, *args):
    TIMES.setdefault("first_batch", time.perf_counter())
    return self._predictor.predict(*args)


def timed_load(*args):
  """exported_model.Predictor(*args) (tools.predict's `load`), its loading
  and first batch timed in TIMES (the first load's, when the workers of a
  multi-process runner each load their own)."""
  from albert_tf.prediction import exported_model
  began = time.perf_counter()
  predictor = exported_model.Predictor(*args)
  TIMES.setdefault("load_start", began)
  TIMES.setdefault("load_end", time.perf_counter())
  return _FirstBatchTimed(predictor)


def fixed_costs(start: float) -> Dict[str, float]:
  """{load_seconds, first_batch_seconds} of a run that began at `start`
  (time.perf_counter()): the seconds timed_load took, those before the
  first batch (the run's fixed cost: counting rows, building and starting
  a pipeline, loading the export and the tokenizer); empty when nothing
  was loaded (every shard already written)."""
  if "load_start" not in TIMES:
    return {}
  return dict(load_seconds=TIMES["load_end"] - TIMES["load_start"],
              first_batch_seconds=TIMES.get("first_batch",
                                            TIMES["load_end"]) - start)


def write_corpus(path: str, texts: Sequence[str], rows: int) -> List[str]:
  """Writes `rows` lines, `texts` repeated in order; returns them."""
  lines = [texts[i % len(texts)] for i in range(rows)]
  with open(path, "w", encoding="utf-8") as f:
    f.write("\n".join(lines) + "\n")
  return lines


def train_spm(texts: Sequence[str], work: str) -> str:
  """A SentencePiece model trained on the paragraphs, as the data
  harnesses train theirs (5000 pieces, lowercased); its path."""
  from data_pipeline.tokenization import sentencepiece_trainer
  corpus = os.path.join(work, "paragraphs.txt")
  with open(corpus, "w", encoding="utf-8") as f:
    f.write("\n".join(texts) + "\n")
  prefix = os.path.join(work, "spm")
  sentencepiece_trainer.train_sentencepiece(corpus, prefix,
                                            vocab_size=VOCAB_SIZE,
                                            do_lower_case=True)
  return prefix + ".model"


def model_config(size: str, seq: int):
  """`size`'s AlbertConfig (tiny: TINY) with the corpus's vocabulary."""
  from albert_tf.config import AlbertConfig
  if size == "tiny":
    return AlbertConfig(vocab_size=VOCAB_SIZE, max_position_embeddings=seq,
                        **TINY)
  return dataclasses.replace(common.load_config(size), vocab_size=VOCAB_SIZE)


def build_export(config, spm_model: str, path: str, seq: int,
                 buckets: Sequence[int]) -> str:
  """A classifier export (random weights, length buckets), as
  run_classifier --export_dir writes one."""
  import tf_keras

  from albert_tf import exports
  from albert_tf.models.albert_classifier import AlbertClassifier
  from albert_tf.networks.albert_encoder import AlbertEncoder
  from data_pipeline.tasks.label_list import LabelList
  tf_keras.utils.set_random_seed(0)
  model = AlbertClassifier(AlbertEncoder(config), len(LABELS),
                           dropout_rate=0.0)
  labels = LabelList("classification", LABELS)
  return exports.export_classifier(
      model, path, spm_model, list(LABELS), 1, seq,
      length_buckets=tuple(buckets), label_list=labels)


def build_hf(config, spm_model: str, folder: str, seq: int) -> str:
  """transformers' AlbertForSequenceClassification of the same sizes
  (random weights) with the same SentencePiece model as its tokenizer,
  saved as a Hugging Face folder (what pipeline() loads)."""
  import torch
  import transformers

  from albert_tf.checkpoints import configs
  from albert_tf.checkpoints import sentencepiece_files
  hf_config = transformers.AlbertConfig(
      **configs.config_to_huggingface(config,
                                      ("AlbertForSequenceClassification",)),
      num_labels=len(LABELS), id2label=dict(enumerate(LABELS)))
  torch.manual_seed(0)
  model = transformers.AlbertForSequenceClassification._from_config(
      hf_config, attn_implementation="sdpa")
  model.save_pretrained(folder)
  sentencepiece_files.write_huggingface_tokenizer(spm_model, folder, True,
                                                  seq)
  return folder


def real_tokens(texts: Sequence[str], spm_model: str, seq: int) -> np.ndarray:
  """Each text's tokens as the export packs it: [CLS] + pieces + [SEP],
  at most seq."""
  from data_pipeline.tokenization.sentencepiece_tokenizer import (
    SentencePieceTokenizer,
  )
  tokenizer = SentencePieceTokenizer(spm_model, do_lower_case=True)
  ids = tokenizer.encode_batch(list(texts), num_threads=1)
  return np.minimum(np.array([len(i) + 2 for i in ids]), seq)


def forward_flops(config, tokens: np.ndarray) -> float:
  """Forward FLOPs of every row at its real length (ceilings.encoder_flops,
  the pooler included; the 2-label head's are negligible)."""
  from benchmarks import ceilings
  lengths, counts = np.unique(tokens, return_counts=True)
  return float(sum(c * ceilings.encoder_flops(config, int(n))
                   for n, c in zip(lengths, counts)))


def bucket_peaks(config, batch: int, buckets: Sequence[int],
                 threads: int) -> Dict[int, Dict[str, float]]:
  """{bucket: {framework: FLOP/s}}: the float32 matmul peak at a batch of
  that bucket's rows ([batch x bucket, H] x [H, I] and back), in
  TensorFlow and in PyTorch (a contender runs on each), measured here."""
  from benchmarks import roofline
  return {b: {"TensorFlow": roofline.step_peak(
      config.hidden_size, config.intermediate_size, batch * b),
              "PyTorch": roofline.torch_step_peak(
                  config.hidden_size, config.intermediate_size, batch * b,
                  threads)}
          for b in buckets}


def ceiling(config, tokens: np.ndarray, peaks: Dict[int, Dict[str, float]]
           ) -> Dict:
  """The rows/s of the corpus's real tokens' forward FLOPs at the best
  peak of any bucket and framework (a ceiling every contender stays
  under: each computes at least the real tokens, at one of those shapes
  or smaller ones)."""
  flops = forward_flops(config, tokens)
  peak = max(max(by.values()) for by in peaks.values())
  return dict(peak=peak, flops_per_row=flops / len(tokens),
              rows_per_s=peak * len(tokens) / flops,
              mean_tokens=float(np.mean(tokens)))


def computed_positions(tokens: Sequence[int], batch_size: int,
                       buckets: Sequence[int] = (),
                       shard: Optional[int] = None) -> Dict[str, int]:
  """{tokens, positions}: the rows' real tokens and the positions their
  batches compute under tools.predict's rule for a classifier export
  (its predictor runs at each batch's own longest row): rows sorted by
  length within each shard of `shard` rows (None: the whole input), cut
  every batch_size rows, across `buckets` (batching.batches at own
  length), each batch at its own longest row (own_length.padded_length,
  never past the bucket holding it). Without shards: the direct
  ceiling's batches (corpus_worker.run_direct)."""
  from albert_tf.prediction import batching
  from albert_tf.prediction import own_length
  tokens = [int(n) for n in tokens]
  shard = shard or max(len(tokens), 1)
  positions = 0
  for start in range(0, len(tokens), shard):
    part = tokens[start:start + shard]
    for batch in batching.batches(part, batch_size, buckets,
                                  at_own_length=True):
      longest = max(part[i] for i in batch)
      width = batching.bucket_of(longest, buckets) if buckets else longest
      positions += len(batch) * own_length.padded_length(longest, width)
  return dict(tokens=sum(tokens), positions=positions)


def tool_rows_per_shard() -> int:
  """tools.predict's default --rows_per_shard: the timed runs' shards."""
  from albert_tf.prediction.options import PredictOptions
  return next(f.default for f in dataclasses.fields(PredictOptions)
              if f.name == "rows_per_shard")


def padding_line(measured: Dict) -> str:
  """The report's padding line (benchmarks.serving.corpus.measure's
  figures): the share of computed positions that are real tokens, ours
  (computed_positions) and the direct ceiling's."""
  rows, padding = measured["rows"], measured["padding"]
  ours, direct = padding["ours"], padding["direct"]
  buckets = ", ".join(str(b) for b in measured["buckets"])
  shard = measured["rows_per_shard"]
  sorted_over = ("the whole input (one shard: tools.predict's default "
                 f"--rows_per_shard, {shard:,} rows)" if rows <= shard else
                 f"each shard of {shard:,} rows (tools.predict's default "
                 "--rows_per_shard)")
  return (
      "Padding (real tokens over the positions computed): ours in-process "
      f"{ours['tokens'] / ours['positions']:.1%} "
      f"({ours['positions'] / rows:.1f} positions a row for "
      f"{ours['tokens'] / rows:.1f} real tokens: rows sorted by length "
      f"over {sorted_over}, cut every {measured['batch_size']} rows, "
      "across the export's buckets "
      f"({buckets}), each batch at its longest row, as tools.predict runs "
      "a classifier export); the direct ceiling "
      f"{direct['tokens'] / direct['positions']:.1%} "
      f"({direct['positions'] / rows:.1f} positions a row: sorted over the "
      "whole input, no buckets).")


def fixed_costs_line(results: Dict) -> str:
  """The report's line on ours' fixed costs, in-process and on Beam
  (fixed_costs: the seconds before the first batch, loading the export
  among them) and its rows/s after its model loaded; "" when no run
  timed them."""
  parts = []
  for name, r in results.items():
    if r["contender"] in ("ours", "ours_beam") and r.get(
        "first_batch_seconds"):
      after = r["rows"] / (r["seconds"] - r["load_seconds"])
      parts.append(
          f"{name}: {r['first_batch_seconds']:.1f} s before its first "
          f"batch of its {r['seconds']:.1f} (loading the export "
          f"{r['load_seconds']:.1f}), {after:,.1f} rows/s after its model "
          "loaded")
  if not parts:
    return ""
  return ("Fixed costs (a larger input amortizes them; the direct "
          "ceiling's are not timed): " + "; ".join(parts) + ". Before the "
          "first batch: counting the rows, on Beam building and starting "
          "the pipeline (the FnApiRunner's stages), loading the export and "
          "its tokenizer, the first call's setup.")
