"""One contender of benchmarks.serving.corpus, run in a fresh process.

  python -m benchmarks.serving.corpus_worker '{"contender": "ours", ...}'

prints one JSON line, {"rows", "seconds", "rss_mb"}: the rows it wrote,
the wall seconds of its whole run over the input file after its imports
(loading the model, reading, predicting, writing its outputs; `direct`:
its predict calls only; `ours` and `ours_beam` add "load_seconds",
those loading the model, and "first_batch_seconds", those before their
first batch) and the process's peak resident memory (VmHWM,
common.peak_rss_mb); `direct` adds "tokens" and "positions", the real
tokens of its rows and the positions its batches computed. The spec
(JSON): contender (CONTENDERS), input (a text file, one row a line),
output (a folder), export, spm_model, hf_model (folders), seq_length,
batch_size, rows_per_shard (ours; absent: tools.predict's default),
workers, threads, buckets (stock_beam: rows
padded to their bucket and Beam's length-aware batching at these; empty:
padded to seq_length).

  ours        tools.predict's library in this process (runner.predict_files)
  ours_beam   the same on Beam's DirectRunner (beam_pipeline.predict_files_beam,
              --direct_num_workers=workers, multi_threading)
  stock_beam  Beam's stock TFModelHandlerTensor on the same DirectRunner,
              fed by a tokenizing step (ReadFromText, SentencePiece ids
              padded to seq_length, RunInference in fixed batches of
              batch_size in input order, WriteToText); with buckets, its
              batch_bucket_boundaries
  hf          Hugging Face's pipeline("text-classification") over the lines
  direct      the ceiling: the export called directly in length-sorted
              batches (run_direct), no I/O and no framework in the timing
"""

import json
import os
import sys
import time
from typing import Dict, List, Sequence, Tuple

import numpy as np

CONTENDERS = ("ours", "ours_beam", "stock_beam", "hf", "direct")
# Rows the export's preprocessor packs at a time (direct, untimed).
PACK_ROWS = 1024


def _tf_threads(threads: int) -> None:
  import tensorflow as tf
  tf.config.threading.set_intra_op_parallelism_threads(threads)


def _options(spec: Dict, runner: str = ""):
  """tools.predict's settings; --rows_per_shard the tool's default unless
  the spec gives one (the RSS runs)."""
  from albert_tf.prediction.options import PredictOptions
  shards = ({"rows_per_shard": spec["rows_per_shard"]}
            if spec.get("rows_per_shard") else {})
  return PredictOptions(model=spec["export"], input_file=spec["input"],
                        output_dir=spec["output"], input_format="text",
                        batch_size=spec["batch_size"], runner=runner,
                        **shards)


def run_ours(spec: Dict) -> Tuple[int, float, Dict]:
  """Also "load_seconds" and "first_batch_seconds": of the run's seconds,
  those loading the export and those before its first batch (fixed costs
  a larger input amortizes; the direct ceiling's are not timed;
  corpus_setup.fixed_costs)."""
  from albert_tf.prediction import runner
  from benchmarks.serving import corpus_setup
  _tf_threads(spec["threads"])
  start = time.perf_counter()
  manifest = runner.predict_files(_options(spec),
                                  load=corpus_setup.timed_load)
  return manifest["rows"], time.perf_counter() - start, (
      corpus_setup.fixed_costs(start))


def run_ours_beam(spec: Dict) -> Tuple[int, float, Dict]:
  """As run_ours: the load and the first batch are timed by the worker
  threads of the DirectRunner, in this process (multi_threading)."""
  from albert_tf.prediction import beam_pipeline
  from benchmarks.serving import corpus_setup
  _tf_threads(spec["threads"])
  start = time.perf_counter()
  manifest = beam_pipeline.predict_files_beam(
      _options(spec, "DirectRunner"),
      [f"--direct_num_workers={spec['workers']}",
       "--direct_running_mode=multi_threading"],
      load=corpus_setup.timed_load)
  return manifest["rows"], time.perf_counter() - start, (
      corpus_setup.fixed_costs(start))


class _Tokenize:
  """A line -> int32 [3, length]: word ids ([CLS] text [SEP], truncated),
  mask and type ids, padded to seq, or with `buckets` to the smallest
  bucket that holds the row (Beam's stock handler stacks its batch's
  tensors: they must have one shape)."""

  def __init__(self, spm_model: str, seq: int, buckets=()):
    self.spm_model, self.seq, self.tokenizer = spm_model, seq, None
    self.buckets = list(buckets) or [seq]

  def __call__(self, line: str) -> np.ndarray:
    if self.tokenizer is None:
      from data_pipeline.tokenization.sentencepiece_tokenizer import (
        SentencePieceTokenizer,
      )
      self.tokenizer = SentencePieceTokenizer(self.spm_model,
                                              do_lower_case=True)
    t = self.tokenizer
    ids = [t.cls_id] + t.encode(line)[:self.seq - 2] + [t.sep_id]
    length = next(b for b in self.buckets if b >= len(ids))
    packed = np.zeros([3, length], np.int32)
    packed[0, :len(ids)], packed[1, :len(ids)] = ids, 1
    return packed


def stock_handler(export: str, batch_size: int, buckets=()):
  """Beam's TFModelHandlerTensor over the export's `token_ids` signature.

  Its own load_model (tf.keras.models.load_model) cannot read the
  export (Keras 3 reads no SavedModel; tf_keras, with
  TF_USE_LEGACY_KERAS=1, none without Keras metadata), so a minimal
  subclass loads it with tf.saved_model.load; its inference_fn stacks the
  batch, as Beam's default does, and calls the signature. Batches of
  exactly batch_size (the last smaller), in the order rows come; with
  `buckets`, Beam's length-aware batching: batch_length_fn (a row's
  tokens) and batch_bucket_boundaries at the export's buckets, so a batch
  holds rows of one bucket (its stateful batching: max_batch_duration_secs
  set, 0 = until full or the input ends).
  """
  from apache_beam.ml.inference import tensorflow_inference
  from apache_beam.ml.inference.base import PredictionResult

  class SavedModelHandler(tensorflow_inference.TFModelHandlerTensor):

    def load_model(self):
      from albert_tf.exports import load_saved_model
      return load_saved_model(self._model_uri).signatures["token_ids"]

  def inference_fn(model, batch, inference_args, model_id=None):
    import tensorflow as tf
    stacked = tf.stack(batch)  # [b, 3, seq]
    outputs = model(input_word_ids=stacked[:, 0], input_mask=stacked[:, 1],
                    input_type_ids=stacked[:, 2])
    return [PredictionResult(x, p, model_id)
            for x, p in zip(batch, outputs["probabilities"].numpy())]

  length_kwargs = {}
  if buckets:
    from albert_tf.prediction import beam_handler
    length_kwargs = dict(
        batch_length_fn=lambda x: int(x[1].sum()),
        batch_bucket_boundaries=beam_handler.beam_boundaries(buckets),
        max_batch_duration_secs=0)
  return SavedModelHandler(export, inference_fn=inference_fn,
                           min_batch_size=batch_size,
                           max_batch_size=batch_size, **length_kwargs)


def run_stock_beam(spec: Dict) -> Tuple[int, float]:
  import apache_beam as beam
  from apache_beam.ml.inference.base import RunInference
  from apache_beam.options.pipeline_options import PipelineOptions
  from apache_beam.runners.portability.fn_api_runner import FnApiRunner
  _tf_threads(spec["threads"])
  buckets = spec.get("buckets", ())
  handler = stock_handler(spec["export"], spec["batch_size"], buckets)
  start = time.perf_counter()
  options = PipelineOptions([f"--direct_num_workers={spec['workers']}",
                             "--direct_running_mode=multi_threading"])
  # The FnApiRunner, as beam_pipeline runs ours on the DirectRunner; the
  # stateful length-aware batching needs a timer it lacks: then the
  # DirectRunner's own choice (its one-thread BundleBasedDirectRunner).
  runner = None if buckets else FnApiRunner()
  with beam.Pipeline(runner=runner, options=options) as pipeline:
    _ = (pipeline
         | "Read" >> beam.io.ReadFromText(spec["input"])
         | "Tokenize" >> beam.Map(_Tokenize(spec["spm_model"],
                                            spec["seq_length"], buckets))
         | "Predict" >> RunInference(handler)
         | "Format" >> beam.Map(lambda r: json.dumps(
             {"probabilities": [float(p) for p in r.inference]}))
         | "Write" >> beam.io.WriteToText(
             os.path.join(spec["output"], "part"), file_name_suffix=".jsonl"))
  seconds = time.perf_counter() - start
  return _lines(spec["output"]), seconds


def run_hf(spec: Dict) -> Tuple[int, float]:
  import torch
  import transformers

  # transformers imports lazily: its pipeline and model modules now, so
  # the clock starts after the imports, as the others'.
  from transformers import pipelines  # noqa: F401
  from transformers.models.albert import modeling_albert  # noqa: F401
  from transformers.models.albert import tokenization_albert  # noqa: F401
  torch.set_num_threads(spec["threads"])
  start = time.perf_counter()
  classify = transformers.pipeline("text-classification",
                                   model=spec["hf_model"], device="cpu")
  with open(spec["input"], encoding="utf-8") as f:
    lines = f.read().splitlines()
  os.makedirs(spec["output"], exist_ok=True)
  with open(os.path.join(spec["output"], "part.jsonl"), "w") as f:
    for scores in classify(lines, batch_size=spec["batch_size"],
                           truncation=True, max_length=spec["seq_length"],
                           top_k=None):
      f.write(json.dumps({s["label"]: s["score"] for s in scores}) + "\n")
  seconds = time.perf_counter() - start
  return _lines(spec["output"]), seconds


def pack_rows(export: str, lines: Sequence[str]
             ) -> Tuple[object, List[np.ndarray]]:
  """The loaded export and each line's token ids and type ids (int32
  [2, n], n its real tokens), packed by the export's own preprocessor as
  tools.predict packs them (own_length.packer: its tokenize and
  bert_pack_inputs, what serving_default calls), PACK_ROWS at a time."""
  import tensorflow as tf

  from albert_common.encoder_inputs import INPUT_MASK
  from albert_common.encoder_inputs import INPUT_TYPE_IDS
  from albert_common.encoder_inputs import INPUT_WORD_IDS
  from albert_tf.exports import load_saved_model
  from albert_tf.prediction import own_length
  loaded = load_saved_model(export)
  pack = own_length.packer(loaded, pair=False)
  rows = []
  for start in range(0, len(lines), PACK_ROWS):
    inputs = {k: v.numpy() for k, v in pack(tf.constant(
        lines[start:start + PACK_ROWS], tf.string)).items()}
    for ids, mask, types in zip(inputs[INPUT_WORD_IDS], inputs[INPUT_MASK],
                                inputs[INPUT_TYPE_IDS]):
      n = int(mask.sum())
      rows.append(np.stack([ids[:n], types[:n]]))
  return loaded, rows


def direct_batches(rows: Sequence[np.ndarray], batch_size: int
                  ) -> Tuple[List[List[int]], List[Dict]]:
  """Rows sorted by length over the whole input (then position), cut every
  batch_size rows (batching.batches without buckets), each batch's
  encoder inputs (int32 tf tensors [batch, its longest row]) and the row
  indices of each."""
  import tensorflow as tf

  from albert_common.encoder_inputs import ENCODER_INPUT_NAMES
  from albert_tf.prediction import batching
  groups = batching.batches([r.shape[1] for r in rows], batch_size)
  inputs = []
  for group in groups:
    longest = max(rows[i].shape[1] for i in group)
    packed = np.zeros([3, len(group), longest], np.int32)
    for j, i in enumerate(group):
      n = rows[i].shape[1]
      packed[0, j, :n], packed[1, j, :n], packed[2, j, :n] = (
          rows[i][0], 1, rows[i][1])
    inputs.append({name: tf.constant(x)
                   for name, x in zip(ENCODER_INPUT_NAMES, packed)})
  return groups, inputs


def run_direct(spec: Dict) -> Tuple[int, float, Dict]:
  """The export's `token_ids` signature over pre-packed, length-sorted
  batches (direct_batches), timed over its calls only (after one untimed
  call on the first batch); the first label's probability of each row
  written afterwards (part.jsonl, input order)."""
  from albert_tf.prediction import own_length
  _tf_threads(spec["threads"])
  with open(spec["input"], encoding="utf-8") as f:
    lines = f.read().splitlines()
  loaded, rows = pack_rows(spec["export"], lines)
  groups, inputs = direct_batches(rows, spec["batch_size"])
  model = loaded.signatures[own_length.TOKEN_IDS]
  model(**inputs[0])  # untimed: the function's first run sets it up
  outputs = []
  start = time.perf_counter()
  for batch in inputs:
    outputs.append(model(**batch)["probabilities"])
  seconds = time.perf_counter() - start
  first = np.zeros(len(rows))
  for group, probabilities in zip(groups, outputs):
    first[group] = probabilities.numpy()[:, 0]
  os.makedirs(spec["output"], exist_ok=True)
  with open(os.path.join(spec["output"], "part.jsonl"), "w") as f:
    f.writelines(json.dumps({"probabilities": [float(p)]}) + "\n"
                 for p in first)
  return _lines(spec["output"]), seconds, dict(
      tokens=sum(r.shape[1] for r in rows),
      positions=sum(len(g) * max(rows[i].shape[1] for i in g)
                    for g in groups))


def _lines(folder: str) -> int:
  """Lines of the .jsonl files a contender wrote."""
  total = 0
  for name in os.listdir(folder):
    if name.endswith(".jsonl"):
      with open(os.path.join(folder, name), encoding="utf-8") as f:
        total += sum(1 for _ in f)
  return total


def main(argv) -> None:
  from benchmarks import common
  spec = json.loads(argv[1])
  run = {"ours": run_ours, "ours_beam": run_ours_beam,
         "stock_beam": run_stock_beam, "hf": run_hf,
         "direct": run_direct}[spec["contender"]]
  rows, seconds, *extra = run(spec)
  print(json.dumps(dict({"rows": rows, "seconds": seconds,
                         "rss_mb": common.peak_rss_mb()}, **(
                             extra[0] if extra else {}))))


if __name__ == "__main__":
  main(sys.argv)
