"""One piece of corpus -> framed TFRecord bytes (runs in worker processes).

Reads the piece (`document_pieces.read_piece`), tokenizes its sentences in one
batched call (SentencePiece or WordPiece), makes the instances of every dupe
(`sop_instances`), shuffles them with the piece's own Generator, masks
(`mlm_masking`) and encodes them in batches and frames the records
(`tfrecord_io`). Imports no TensorFlow. `init_worker` sets the per-process
state, so the same code runs in a pool worker or in the main process.
"""

import numpy as np

from data_pipeline.corpora import corpus_pieces
from data_pipeline.corpora import document_pieces
from data_pipeline.pretraining import mlm_masking
from data_pipeline.pretraining import sop_instances
from data_pipeline.pretraining import tfrecord_io
from data_pipeline.pretraining import tfrecord_schema
from data_pipeline.pretraining.stats import PretrainingStats
from data_pipeline.tokenization import word_segmentation
from data_pipeline.tokenization.factory import make_tokenizer

# Instances masked and encoded together (bounds the [n, seq] temporaries).
_BATCH = 2048
# int64 features whose values fit one varint byte.
_SMALL_FEATURES = ("input_mask", "segment_ids", "token_boundary",
                   "next_sentence_labels")

# Per-process state, set by `init_worker` (the pool initializer).
_WORKER = {}


def init_worker(spm_model_file, do_lower_case, options, vocab, random_seed,
                dupe_factor, num_threads, skip_non_utf8_lines, corpus=None,
                vocab_file=None, word_segmenter="none", fs=None):
  """Loads what `process_piece` needs (once per process).

  `corpus`: a CorpusOptions (default: the text format). `vocab_file`: a
  WordPiece vocab.txt, used if `spm_model_file` is None. `word_segmenter`:
  `none` or `jieba` (see word_segmentation; jieba's dictionary loads on the
  first piece). `fs` reads the vocabulary and the corpus (default file_io).
  """
  tokenizer = make_tokenizer(spm_model_file, vocab_file, do_lower_case, fs)
  _WORKER.update(
      skip_non_utf8_lines=skip_non_utf8_lines, fs=fs,
      corpus=corpus or document_pieces.CorpusOptions(),
      tokenizer=tokenizer,
      word_starts=word_segmentation.make_word_starts(word_segmenter,
                                                     tokenizer),
      options=options, vocab=vocab, random_seed=random_seed,
      dupe_factor=dupe_factor, num_threads=num_threads,
      encoder=tfrecord_io.ExampleEncoder(
          [(f.name, f.dtype) for f in tfrecord_schema.FEATURES],
          _SMALL_FEATURES))


def _tokenize_piece(piece: corpus_pieces.Piece):
  """(pool int32 [tokens], word starts bool [tokens] or None, documents,
  stats) of a piece; word starts only with a word segmenter."""
  texts = [s for _, sentences in piece.documents for s in sentences]
  word_starts = None
  if _WORKER["word_starts"] is not None:
    ids, starts = _WORKER["word_starts"].encode_batch(texts)
    word_starts = np.fromiter((b for x in starts for b in x), dtype=bool,
                              count=sum(len(x) for x in starts))
  else:
    ids = _WORKER["tokenizer"].encode_batch(texts, num_threads=_WORKER[
        "num_threads"]) if texts else []
  lengths = [len(x) for x in ids]
  pool = np.fromiter((i for x in ids for i in x), dtype=np.int32,
                     count=sum(lengths))
  documents = []
  stats = PretrainingStats(pieces=1, skipped_lines=piece.skipped_lines,
                           bad_records=piece.bad_records,
                           short_documents=piece.short_documents,
                           duplicate_documents=piece.duplicate_documents)
  offset = 0
  sentence = 0
  for key, sentences in piece.documents:
    starts, lens = [], []
    for _ in sentences:
      n = lengths[sentence]
      if n:  # The official code drops sentences with no tokens.
        starts.append(offset)
        lens.append(n)
      offset += n
      sentence += 1
    if lens:
      documents.append(sop_instances.Document(starts, lens, key))
      stats.sentences += len(lens)
      stats.corpus_tokens += sum(lens)
  stats.documents = len(documents)
  return pool, word_starts, documents, stats


def process_piece(spec: corpus_pieces.PieceSpec):
  """(piece index, TFRecord bytes, PretrainingStats) of one piece."""
  piece = document_pieces.read_piece(spec, _WORKER["corpus"],
                                     _WORKER["skip_non_utf8_lines"],
                                     _WORKER["fs"])
  options = _WORKER["options"]
  vocab = _WORKER["vocab"]
  seed = _WORKER["random_seed"]
  pool, word_starts, documents, stats = _tokenize_piece(piece)
  spans, dropped = sop_instances.create_instance_spans(
      documents, pool, options, vocab, seed, _WORKER["dupe_factor"],
      word_starts)
  stats.dropped_chunks = dropped
  order = sop_instances.shuffle_rng(seed, piece.key).permutation(
      len(spans.label))
  span_words = np.zeros(options.ngram + 1, np.int64)
  ngram_draws = np.zeros(options.ngram + 1, np.int64)
  replacements = np.zeros(3, np.int64)
  examples = []
  for begin in range(0, len(order), _BATCH):
    part = sop_instances.InstanceSpans(
        *(field[order[begin:begin + _BATCH]] for field in spans))
    batch = mlm_masking.mask_instances(part, pool, options, vocab,
                                       word_starts)
    span_words += batch.span_words
    ngram_draws += batch.ngram_draws
    replacements += batch.replacements
    stats.instances += len(part.label)
    stats.tokens += int(batch.input_mask.sum())
    stats.masked_tokens += int(batch.masked_lm_weights.sum())
    stats.swapped += int(batch.next_sentence_labels.sum())
    examples.extend(_WORKER["encoder"].encode(batch.features()))
  stats.span_words = span_words.tolist()
  stats.ngram_draws = ngram_draws.tolist()
  stats.replacements = replacements.tolist()
  return piece.index, tfrecord_io.frame_records(examples), stats
