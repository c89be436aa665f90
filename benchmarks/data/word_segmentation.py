r"""The cost of --word_segmenter=jieba in create_pretraining_data.

Writes a Chinese corpus (sentences of words drawn, by frequency, from
jieba's own dictionary, with "，" and "。"; a blank line every 10 sentences)
and a BERT-layout vocabulary of its characters, then runs the local path in
one process with --word_segmenter=none and =jieba (same corpus and flags)
and prints instances/s of each. The jieba row includes loading its
dictionary once (timed alone on the last line).

  python -m benchmarks.data.word_segmentation --megabytes=2 \
    --max_seq_length=128 --dupe_factor=5
"""

import os
import random
import tempfile
import time

from absl import app
from absl import flags

FLAGS = flags.FLAGS


def define_flags():
  """The command's flags, defined when it runs (not on import: a test
  that imports this module must not define flags other tools share)."""
  flags.DEFINE_float("megabytes", 2.0, "Corpus size (UTF-8 MB).")
  flags.DEFINE_integer("max_seq_length", 128, "Maximum sequence length.")
  flags.DEFINE_integer("dupe_factor", 5, "Dupe factor.")
  flags.DEFINE_integer("repeats", 2, "Runs of each segmenter (best kept).")


def _write_corpus(folder: str, megabytes: float) -> str:
  import jieba
  words, weights = [], []
  with open(os.path.join(os.path.dirname(jieba.__file__), "dict.txt"),
            encoding="utf-8") as f:
    for line in f:
      word, freq = line.split()[:2]
      if int(freq) >= 1000:
        words.append(word)
        weights.append(int(freq))
  rng = random.Random(0)
  path = os.path.join(folder, "zh.txt")
  size, lines = 0, []
  while size < megabytes * 1e6:
    for _ in range(10):
      parts = rng.choices(words, weights, k=rng.randint(8, 25))
      cut = rng.randint(1, len(parts) - 1)
      sentence = "".join(parts[:cut]) + "，" + "".join(parts[cut:]) + "。"
      lines.append(sentence)
      size += len(sentence.encode("utf-8")) + 1
    lines.append("")
  with open(path, "w", encoding="utf-8") as f:
    f.write("\n".join(lines) + "\n")
  return path


def _write_vocab(folder: str, corpus: str) -> str:
  with open(corpus, encoding="utf-8") as f:
    chars = sorted(set(f.read()) - {"\n"})
  tokens = (["[PAD]"] + [f"[unused{i}]" for i in range(1, 100)] +
            ["[UNK]", "[CLS]", "[SEP]", "[MASK]"] + chars +
            ["##" + c for c in chars])
  path = os.path.join(folder, "vocab.txt")
  with open(path, "w", encoding="utf-8") as f:
    f.write("\n".join(tokens) + "\n")
  return path


def main(argv):
  del argv
  with tempfile.TemporaryDirectory(prefix="bench_wwm_") as folder:
    _run(folder)


def _run(folder: str) -> None:
  from data_pipeline.pretraining import instance_options
  from data_pipeline.pretraining import writer as pretraining_writer
  from data_pipeline.tokenization import word_segmentation
  corpus = _write_corpus(folder, FLAGS.megabytes)
  vocab = _write_vocab(folder, corpus)
  options = instance_options.InstanceOptions(
      max_seq_length=FLAGS.max_seq_length, max_predictions_per_seq=20)
  print(f"corpus {os.path.getsize(corpus) / 1e6:.2f} MB, "
        f"max_seq_length {FLAGS.max_seq_length}, "
        f"dupe_factor {FLAGS.dupe_factor}, 1 process")
  print("| word_segmenter | seconds | instances | inst/s | masked |")
  print("| --- | --- | --- | --- | --- |")
  for segmenter in ("none", "jieba"):
    best = None
    for run in range(FLAGS.repeats):
      word_segmentation.jieba_tokenizer.cache_clear()
      start = time.perf_counter()
      stats = pretraining_writer.create_pretraining_data(
          corpus, os.path.join(folder, f"{segmenter}{run}.tfrecord"), None,
          options, dupe_factor=FLAGS.dupe_factor, num_workers=1,
          show_progress=False, vocab_file=vocab, word_segmenter=segmenter)
      seconds = time.perf_counter() - start
      if best is None or seconds < best[0]:
        best = (seconds, stats)
    seconds, stats = best
    print(f"| {segmenter} | {seconds:.2f} | {stats['instances']:,} | "
          f"{stats['instances'] / seconds:,.0f} | "
          f"{stats['masked_fraction']:.4f} |")
  word_segmentation.jieba_tokenizer.cache_clear()
  start = time.perf_counter()
  word_segmentation.jieba_tokenizer()
  print(f"jieba dictionary load (once per process): "
        f"{time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
  define_flags()
  app.run(main)
