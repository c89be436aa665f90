"""Raw-text serving latency with length buckets against without (#24).

  python -m benchmarks.serving.length_buckets --size=base --seq_length=128 \
      --repeats=30

One classifier (random weights, `--size`'s config, 2 labels) exported twice
with `export_classifier`, the raw-text SavedModel of run_classifier
--export_dir: with `--length_buckets` (default auto: 32, 64, ...,
--seq_length) and with `none` (every request padded to --seq_length, the
export before #24). Each is loaded as a user loads it
(`albert_tf.exports.load_saved_model`) and its `serving_default` signature
called on one sentence (batch 1) of 12, 25 and 60 tokens ([CLS] and [SEP]
included). The vocabulary is a 2000-piece SentencePiece model trained on
the Python standard library's docstrings; each sentence is made of words
that are one piece each, so its length is exact. For each length the two
exports are called alternately (`common.time_alternating`), the median of
`--repeats` calls each; the speed-up is none / bucketed. The largest
difference of the two exports' probabilities is reported too (it should be
float rounding).
"""

import argparse
import os
import tempfile

import numpy as np
import tensorflow as tf

from benchmarks import common

LENGTHS = (12, 25, 60)
VOCAB_SIZE = 2000


def one_piece_words(tokenizer, count: int = 400):
  """Words the tokenizer encodes as exactly one piece, in vocabulary order."""
  words = []
  for i in range(tokenizer.sp_model.GetPieceSize()):
    piece = tokenizer.sp_model.IdToPiece(i)
    word = piece[1:]
    if (piece.startswith("\u2581") and word.isalpha() and len(word) > 2 and
        len(tokenizer.encode(word)) == 1):
      words.append(word)
      if len(words) == count:
        break
  return words


def sentence_of(tokenizer, words, tokens: int, seed: int = 0) -> str:
  """A sentence whose packed length ([CLS] words [SEP]) is `tokens`."""
  rng = np.random.default_rng(seed + tokens)
  text = " ".join(rng.choice(words, tokens - 2))
  if len(tokenizer.encode(text)) != tokens - 2:
    raise RuntimeError(f"{text!r} is not {tokens - 2} pieces")
  return text


def _buckets_of(flag: str, seq_length: int):
  from data_pipeline.tasks import length_buckets
  return length_buckets.parse_length_buckets(flag, seq_length)


def run(size: str, seq_length: int, repeats: int,
        buckets_flag: str = "auto", lengths=LENGTHS) -> str:
  """The markdown table (see the module docstring)."""
  from albert_tf import exports
  from albert_tf.models.albert_classifier import AlbertClassifier
  from albert_tf.networks.albert_encoder import AlbertEncoder
  from data_pipeline.corpora import stdlib_corpus
  from data_pipeline.tokenization import sentencepiece_trainer
  from data_pipeline.tokenization.sentencepiece_tokenizer import (
    SentencePieceTokenizer,
  )
  config = common.load_config(size)
  if config.vocab_size < VOCAB_SIZE:
    raise SystemExit(f"error: --size {size}: vocab_size {config.vocab_size} "
                     f"is below the benchmark's {VOCAB_SIZE} pieces")
  if max(lengths) > seq_length:
    raise SystemExit(f"error: --seq_length={seq_length} is below the "
                     f"longest input ({max(lengths)} tokens)")
  buckets = _buckets_of(buckets_flag, seq_length)
  tf.keras.utils.set_random_seed(0)
  model = AlbertClassifier(AlbertEncoder(config), 2, dropout_rate=0.0)
  with tempfile.TemporaryDirectory() as work:
    corpus = os.path.join(work, "corpus.txt")
    stdlib_corpus.write_stdlib_corpus(corpus, max_bytes=300_000)
    spm = os.path.join(work, "spm")
    sentencepiece_trainer.train_sentencepiece(corpus, spm,
                                              vocab_size=VOCAB_SIZE)
    tokenizer = SentencePieceTokenizer(spm + ".model")
    words = one_piece_words(tokenizer)
    serving = {}
    for name, export_buckets in (("none", ()), (buckets_flag, buckets)):
      path = exports.export_classifier(
          model, os.path.join(work, name), spm + ".model", ["0", "1"], 1,
          seq_length, length_buckets=export_buckets)
      serving[name] = exports.load_saved_model(path).signatures[
          "serving_default"]
    rows = []
    for tokens in lengths:
      sentence = tf.constant([sentence_of(tokenizer, words, tokens)])
      calls = {name: (lambda f=f: f(sentences=sentence))
               for name, f in serving.items()}
      times = common.time_alternating(calls, repeats)
      padded = common.median(times["none"]) * 1e3
      bucketed = common.median(times[buckets_flag]) * 1e3
      difference = np.abs(
          calls["none"]()["probabilities"].numpy() -
          calls[buckets_flag]()["probabilities"].numpy()).max()
      bucket = next(b for b in buckets if b >= tokens)
      rows.append([common.size_label(size), tokens, bucket,
                   f"{padded:.2f}", f"{bucketed:.2f}",
                   f"{padded / bucketed:.2f}x", f"{difference:.1e}"])
  header = ["model", "tokens", "bucket", f"none ms (seq {seq_length})",
            f"{buckets_flag} ms", "speed-up", "max prob. diff"]
  table = common.markdown_table(header, rows)
  print(table)
  return table


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--size", default="base")
  parser.add_argument("--seq_length", type=int, default=128)
  parser.add_argument("--repeats", type=int, default=30)
  parser.add_argument("--length_buckets", default="auto")
  parser.add_argument("--write", action="store_true",
                      help="update BENCHMARKS.md")
  args = common.parse_args(parser)
  from albert_common.errors import UserInputError
  try:
    _buckets_of(args.length_buckets, args.seq_length)
  except UserInputError as e:
    parser.exit(1, f"error: {e}\n")
  machine = common.machine_line()
  table = run(args.size, args.seq_length, args.repeats, args.length_buckets)
  if args.write:
    common.update_benchmarks_md(
        "Serving latency with length buckets",
        f"`python -m benchmarks.serving.length_buckets --size={args.size} "
        f"--seq_length={args.seq_length} --repeats={args.repeats} "
        f"--length_buckets={args.length_buckets}`; {machine}. The raw-text "
        "classifier export (run_classifier --export_dir), batch 1, one "
        "sentence of the given packed length, the bucketed export against "
        "`--length_buckets=none` (every request at --seq_length), calls "
        "alternating, median of --repeats each.\n\n" + table)


if __name__ == "__main__":
  main()
