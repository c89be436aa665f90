"""A real classification task every machine has: which part of the standard
library a docstring documents.

Each record is one class or function docstring of the Python standard library
(its first sentences, prose only, as in `stdlib_corpus`), labelled with the
topic of the package it comes from: GUI, email, concurrency, markup,
networking, testing, files or numbers. The texts are human-written and of
mixed difficulty: "Return the MIME type of the message." names its topic,
"Close the connection." could be networking, email or a file. Used by
`benchmarks.serving.early_exit --task=stdlib_topics`, a task whose examples
need different depths, on text our pretraining corpus covers.

  python -m data_pipeline.corpora.stdlib_topics --output_dir=topics

writes train.csv and dev.csv (columns text, label). The split is by source
file (a file's docstrings all go to one side), so dev sentences are not
near-copies of training ones. Deterministic for a given Python installation.
"""

import argparse
import collections
import csv
import hashlib
import io
import os
import sysconfig
from typing import Dict, List, Optional, Tuple

from albert_common import file_io
from data_pipeline.corpora import stdlib_corpus

# Topic -> the top-level modules and packages it takes.
TOPICS: Dict[str, Tuple[str, ...]] = {
    "gui": ("tkinter", "turtle", "idlelib"),
    "email": ("email", "mailbox", "smtplib", "imaplib", "poplib", "nntplib",
              "mimetypes", "mailcap"),
    "concurrency": ("asyncio", "multiprocessing", "concurrent", "threading",
                    "queue", "selectors", "sched"),
    "markup": ("xml", "html"),
    "networking": ("http", "urllib", "socket", "socketserver", "ssl",
                   "ftplib", "telnetlib", "ipaddress", "wsgiref", "xmlrpc",
                   "cgi", "webbrowser"),
    "testing": ("unittest", "doctest", "pdb", "bdb", "trace", "pstats",
                "timeit", "traceback", "tracemalloc", "cgitb", "profile",
                "cProfile"),
    "files": ("pathlib", "shutil", "tempfile", "zipfile", "tarfile", "gzip",
              "bz2", "lzma", "fileinput", "zipimport", "_pyio", "os",
              "posixpath", "ntpath", "genericpath", "stat", "filecmp"),
    "numbers": ("_pydecimal", "statistics", "fractions", "numbers", "random",
                "datetime", "calendar", "heapq", "_strptime", "zoneinfo"),
}
MAX_SENTENCES = 3


def _topic_of(relative_path: str) -> Optional[str]:
  top = relative_path.split(os.sep)[0]
  top = top[:-3] if top.endswith(".py") else top
  for topic, modules in TOPICS.items():
    if top in modules:
      return topic
  return None


def _file_key(relative_path: str) -> bytes:
  return hashlib.sha256(relative_path.encode("utf-8")).digest()


def records_by_file(stdlib_dir: Optional[str] = None
                    ) -> Dict[str, List[Tuple[bytes, List[str]]]]:
  """topic -> [(file key, [texts])] in the order of the files' path hashes;
  a text that occurs more than once in the library is dropped."""
  root = stdlib_dir or sysconfig.get_paths()["stdlib"]
  files = collections.defaultdict(list)  # topic -> [(key, [texts])]
  counts = collections.Counter()
  for path in stdlib_corpus.python_files(root):
    relative = os.path.relpath(path, root)
    topic = _topic_of(relative)
    if topic is None:
      continue
    texts = []
    for doc in stdlib_corpus.docstrings(path):
      sentences = stdlib_corpus.docstring_to_sentences(doc)
      if sentences:
        texts.append(" ".join(sentences[:MAX_SENTENCES]))
    counts.update(texts)
    files[topic].append((_file_key(relative), texts))
  return {topic: [(key, [t for t in texts if counts[t] == 1])
                  for key, texts in sorted(files[topic])]
          for topic in TOPICS}


def build_records(stdlib_dir: Optional[str] = None,
                  dev_fraction: float = 0.2,
                  max_per_topic: int = 400,
                  ) -> Dict[str, List[Tuple[str, str]]]:
  """{"train": [(text, topic)], "dev": [...]}.

  A text that occurs more than once in the library is dropped. Each topic's
  files, in the order of their paths' hashes, go to dev until dev holds
  dev_fraction of the topic's records, the rest to train. Each topic keeps
  at most max_per_topic training records (and dev records in proportion),
  so GUI's 1,700 docstrings do not drown markup's 240.
  """
  records = {"train": [], "dev": []}
  caps = {"train": max_per_topic,
          "dev": round(max_per_topic * dev_fraction / (1 - dev_fraction))}
  for topic, unique in records_by_file(stdlib_dir).items():
    dev_target = dev_fraction * sum(len(texts) for _, texts in unique)
    seen, kept = collections.Counter(), collections.Counter()
    for _, texts in unique:
      split = "dev" if seen["dev"] < dev_target else "train"
      seen[split] += len(texts)
      room = max(0, caps[split] - kept[split])
      records[split].extend((text, topic) for text in texts[:room])
      kept[split] += len(texts[:room])
  return records


def write_task(output_dir: str, **kwargs) -> Dict[str, int]:
  """Writes <output_dir>/train.csv and dev.csv; returns their record counts."""
  file_io.makedirs(output_dir)
  sizes = {}
  for split, rows in build_records(**kwargs).items():
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["text", "label"])
    writer.writerows(rows)
    file_io.write_atomic(file_io.join(output_dir, f"{split}.csv"),
                         buffer.getvalue())
    sizes[split] = len(rows)
  return sizes


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--output_dir", required=True)
  parser.add_argument("--dev_fraction", type=float, default=0.2)
  parser.add_argument("--max_per_topic", type=int, default=400)
  args = parser.parse_args()
  if not 0 < args.dev_fraction < 1:
    parser.exit(1, f"error: --dev_fraction={args.dev_fraction} must be "
                "between 0 and 1\n")
  if args.max_per_topic < 1:
    parser.exit(1, f"error: --max_per_topic={args.max_per_topic} must be "
                "at least 1\n")
  try:
    sizes = write_task(args.output_dir, dev_fraction=args.dev_fraction,
                       max_per_topic=args.max_per_topic)
  except Exception as e:  # pylint: disable=broad-except
    # OSError locally, tf.errors.OpError on other filesystems: one line.
    parser.exit(1, f"error: cannot write --output_dir={args.output_dir}: "
                f"{str(e).splitlines()[0] if str(e) else type(e).__name__}\n")
  print(f"train.csv: {sizes['train']:,} records, dev.csv: {sizes['dev']:,} "
        f"records in {args.output_dir}")

if __name__ == "__main__":
  main()
