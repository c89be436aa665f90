"""A Beam ModelHandler for our exports: RunInference serves them as the
in-process path does.

`ExportModelHandler` takes `InputRow`s (good ones) and returns one
prediction dict per row (`exported_model.Predictor.predict`'s plain names);
wrapped in Beam's `KeyedModelHandler`, each row travels with its key (the
shard it belongs to and its key columns). `load_model` loads the export
once per worker process: Beam keeps it in its shared handle, so the
threads of a process (`--direct_running_mode=multi_threading`, a Dataflow
worker's harness threads) call one model. `run_inference` is
`batching.predictions`, the in-process path's per-batch step.

Length-aware batching. An export built with length buckets cuts each
request to the smallest bucket holding its longest row, so a batch of
alike lengths computes little padding. The buckets are the export's record
(exported_model.length_buckets); for an export made before it recorded
them, `export_buckets` reads them from the serving graph (the int32
boundary constant that `albert_tf.exports.bucketing.cut_to_bucket` gathers
from). Each batch Beam hands `run_inference` is sorted by the rows' token
counts (lengths.TokenCounter) and batched as in-process
(batching.predictions): where the predictor runs each batch at its own
longest row (its `own_length`: classifier, regression, multi-label and
encoder exports, ONNX files) in batch_size rows, a batch across buckets
costing nothing; else cut at the buckets, so no model call mixes two.
Rows reach RunInference sorted by length within their shard
(beam_pipeline.py), and Beam's plain BatchElements batches consecutive
rows, MODEL_CALLS_PER_BATCH model calls' worth at a time; a Beam batch
may hold the end of one shard and the start of the next, so
run_inference sorts it again and cuts it every batch_size rows: batches
of alike lengths, as the in-process path makes of a shard. With
`length_aware` (the runners with native stateful processing: Dataflow,
Flink) the handler also gives Beam a `batch_length_fn` (a row's
estimated tokens) and `batch_bucket_boundaries` at the export's buckets,
so Beam's stateful BatchElements keys rows by
bucket across bundles and workers. Not on the DirectRunner: that batching
holds a processing-time timer, which makes the DirectRunner fall back to
its one-thread BundleBasedDirectRunner and ignore --direct_num_workers.
A row's length is its packed token count, counted with the export's own
tokenizer (the SentencePiece model or WordPiece vocabulary in its assets,
lengths.TokenCounter, loaded once per worker process), so each row lands
in the bucket the in-process batching gives it (KeyedTokenCount). Only an
export without a vocabulary in its assets falls back to an estimate from
the characters (CHARS_PER_TOKEN): a wrong estimate costs padding, never a
different output (the export cuts each batch itself).
"""

import dataclasses
import functools
from typing import (
  Any,
  Callable,
  Dict,
  Iterable,
  List,
  Optional,
  Sequence,
  Tuple,
)

from apache_beam.ml.inference.base import KeyedModelHandler
from apache_beam.ml.inference.base import ModelHandler

from albert_common import file_io
from albert_tf.prediction import batching
from albert_tf.prediction import exported_model
from albert_tf.prediction import lengths
from albert_tf.prediction.inputs import InputRow

# Characters per token of English SentencePiece / WordPiece text (spaces
# included): the length estimate of an export without a vocabulary.
CHARS_PER_TOKEN = 4
# [CLS] and [SEP] of one text (a pair adds one more [SEP]).
_SPECIAL_TOKENS = 2
_INT32 = 3  # tensorflow.DataType.DT_INT32
# Model calls (of --batch_size rows) in one batch Beam hands run_inference,
# which sorts it by tokens and cuts it every batch_size rows. Beam's
# BatchElements batches consecutive rows with no regard to shards, so a
# Beam batch of batch_size rows across two shards joins the longest rows
# of one to the shortest of the next. Positions computed a real token,
# counted over the batches each size makes (stdlib paragraphs, batches of
# 32, shards sorted by tokens, in a shuffled order): 1,000 rows
# in 10 shards, 2.14 with Beam batches of 32 rows, 1.34 of 8 calls', 1.07
# of 32 calls' (the in-process run's one sorted shard: 1.07); 100,000 rows
# in shards of 10,000, 1.01 at any of these sizes (in-process 1.01).
MODEL_CALLS_PER_BATCH = 32


def estimated_tokens(row: InputRow) -> int:
  """A row's tokens as the export will pack them, estimated."""
  pair = row.text_b is not None
  return (-(-batching.text_length(row) // CHARS_PER_TOKEN) +
          _SPECIAL_TOKENS + int(pair))


@functools.lru_cache(maxsize=None)
def _token_counter(model: str, buckets: Tuple[int, ...],
                   encoder: bool) -> Optional[lengths.TokenCounter]:
  """One TokenCounter per export and process (the worker's threads share
  it; SentencePiece's and WordPiece's encoding is thread-safe)."""
  return lengths.token_counter(model, buckets, encoder)


class KeyedTokenCount:
  """Beam's batch_length_fn: a (key, row) element's packed tokens (the
  KeyedModelHandler's elements), counted as the in-process batching counts
  them (lengths.TokenCounter of the export at `model`); estimated_tokens
  for an export without a vocabulary. Pickles as its arguments: the
  tokenizer loads on a worker's first row.

  Args:
    model: the export (--model).
    buckets: its length buckets (two or more).
    encoder: an export_savedmodel folder (its preprocessor's assets).
  """

  def __init__(self, model: str, buckets: Sequence[int], encoder: bool):
    self.model, self.buckets = model, tuple(buckets)
    self.encoder = encoder

  def __call__(self, element: Tuple[Any, InputRow]) -> int:
    counter = _token_counter(self.model, self.buckets, self.encoder)
    if counter is None:
      return estimated_tokens(element[1])
    return counter(element[1])

  def lengths(self, rows: Sequence[InputRow]) -> List[int]:
    """The rows' packed tokens, as the in-process run sorts a shard
    (beam_pipeline._shard_rows); their characters for an export without
    a vocabulary (batching.text_length, as in-process)."""
    counter = _token_counter(self.model, self.buckets, self.encoder)
    if counter is None:
      return [batching.text_length(row) for row in rows]
    return counter.lengths(rows)


def beam_boundaries(buckets: Sequence[int]) -> List[int]:
  """Beam's lower-inclusive boundaries for the export's buckets: bucket b
  holds lengths up to b, so the next starts at b + 1 (a row past the last
  bucket is cut to it by the export, and batched with its rows)."""
  return [b + 1 for b in buckets[:-1]]


def _bucket_constants(graph_def) -> List[Tuple[int, ...]]:
  """The int32 vectors of at least two increasing values that a function
  of `graph_def` both compares (`Less`) and gathers from: cut_to_bucket's
  boundaries."""
  from tensorflow.python.framework import tensor_util
  found = []
  for function in graph_def.library.function:
    consts = {n.name: n for n in function.node_def
              if n.op == "Const" and n.attr["dtype"].type == _INT32}
    used = {}
    for node in function.node_def:
      for name in node.input[:1] if node.op == "GatherV2" else node.input:
        used.setdefault(name.split(":")[0], set()).add(node.op)
    for name, node in consts.items():
      if not {"Less", "GatherV2"} <= used.get(name, set()):
        continue
      values = tensor_util.MakeNdarray(node.attr["value"].tensor)
      if values.ndim == 1 and len(values) > 1 and all(
          a < b for a, b in zip(values[:-1], values[1:])):
        found.append(tuple(int(v) for v in values))
  return found


@functools.lru_cache(maxsize=None)
def export_buckets(path: str,
                   description: exported_model.ExportDescription
                  ) -> Tuple[int, ...]:
  """The export's length buckets (increasing, ending with its sequence
  length), () when it has none: every request runs at its full length.
  The encoder export's are its preprocessor's."""
  from tensorflow.core.protobuf import saved_model_pb2
  if description.kind == "encoder":
    path = file_io.join(path, "preprocessor")
  saved_model = saved_model_pb2.SavedModel()
  with file_io.open_read(file_io.join(path, "saved_model.pb")) as f:
    saved_model.ParseFromString(f.read())
  found = set()
  for meta_graph in saved_model.meta_graphs:
    found.update(_bucket_constants(meta_graph.graph_def))
  # One cut per endpoint, all with the same buckets; several different
  # lists would be a graph this reading does not know: no bucketing then.
  return found.pop() if len(found) == 1 else ()


@dataclasses.dataclass
class _Loaded:
  """What a worker loads once and its threads share (a class: Beam's
  shared handle keeps a weak reference to it)."""
  predictor: Any  # predict(texts_a, texts_b[, choices])
  counter: Optional[lengths.TokenCounter]  # rows -> tokens; None: chars


class ExportModelHandler(ModelHandler[InputRow, Dict[str, Any], Any]):
  """RunInference's handler of one export (module docstring).

  Args:
    model: the export's path (--model).
    description: exported_model.describe(model).
    embeddings: "pooled" or "mean" (encoder exports).
    batch_size: rows per model call (--batch_size); Beam's batches are
      MODEL_CALLS_PER_BATCH times this size (the last of a bundle
      smaller), or with length-aware batching this size (the last of a
      bucket smaller).
    buckets: the export's length buckets (export_buckets).
    length_aware: Beam's stateful length-aware batching at `buckets`
      (when there are more than one; module docstring).
    load: (model, description, embeddings) -> an object with
      `predict(texts_a, texts_b)`; default exported_model.Predictor.
  """

  def __init__(self, model: str,
               description: exported_model.ExportDescription,
               embeddings: str, batch_size: int,
               buckets: Sequence[int] = (),
               load: Optional[Callable] = None,
               length_aware: bool = True):
    length_kwargs = {}
    if length_aware and len(buckets) > 1:
      # max_batch_duration_secs selects Beam's stateful batching, the one
      # that keys rows by length bucket; 0: a batch waits until it is
      # full or the input ends (a batch pipeline, no latency to bound).
      length_kwargs = dict(batch_length_fn=KeyedTokenCount(
                               model, buckets, description.kind == "encoder"),
                           batch_bucket_boundaries=beam_boundaries(buckets),
                           max_batch_duration_secs=0)
    # Beam's length-aware batches already hold rows of one bucket; kept
    # at batch_size rows (larger ones, which fill later, failed on the
    # DirectRunner: rows flushed at the end reached a finished
    # GroupByKey).
    beam_batch = batch_size * (1 if length_kwargs else MODEL_CALLS_PER_BATCH)
    super().__init__(min_batch_size=beam_batch, max_batch_size=beam_batch,
                     **length_kwargs)
    self._model = model
    self._description = description
    self._embeddings = embeddings
    self._batch_size = batch_size
    self._buckets = tuple(buckets)
    self._load = load

  def load_model(self) -> "_Loaded":
    predictor = (self._load or exported_model.Predictor)(
        self._model, self._description, self._embeddings)
    counter = lengths.token_counter(self._model, self._buckets,
                                    self._description.kind == "encoder")
    return _Loaded(predictor, counter)

  def run_inference(self, batch: Sequence[InputRow], model: "_Loaded",
                    inference_args: Optional[Dict[str, Any]] = None
                   ) -> Iterable[Dict[str, Any]]:
    del inference_args  # our exports take none
    # As in-process (batching.predictions): a predictor at its own
    # longest row runs Beam's batch sorted, in batch_size rows; else a
    # batch Beam made of rows of several buckets is cut at them.
    return batching.predictions(
        list(batch), model.predictor.predict, self._batch_size,
        self._buckets, model.counter.lengths if model.counter else None,
        batching.own_length(model.predictor))

  def get_num_bytes(self, batch: Sequence[InputRow]) -> int:
    """Characters of the batch's texts (RunInference's byte metric)."""
    return sum(batching.text_length(row) for row in batch)

  def get_metrics_namespace(self) -> str:
    return "albert_predict"


def handler_buckets(model: str,
                    description: exported_model.ExportDescription
                   ) -> Tuple[int, ...]:
  """The buckets the handler batches at: the export's record; an older
  export's, read from its graph (export_buckets)."""
  return tuple(description.length_buckets or
               export_buckets(model, description))


def keyed_handler(model: str, description: exported_model.ExportDescription,
                  embeddings: str, batch_size: int,
                  load: Optional[Callable] = None,
                  buckets: Optional[Sequence[int]] = None,
                  length_aware: bool = True) -> KeyedModelHandler:
  """The handler RunInference gets: (key, InputRow) -> (key, prediction),
  with `length_aware` batching at `buckets` (default: the export's,
  export_buckets)."""
  if buckets is None:
    buckets = handler_buckets(model, description)
  return KeyedModelHandler(ExportModelHandler(
      model, description, embeddings, batch_size, buckets, load,
      length_aware))
