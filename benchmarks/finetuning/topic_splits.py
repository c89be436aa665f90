"""The stdlib topics task split four ways for the distillation benchmark,
by source file (a file's docstrings all go to one split):

  test       the first files of each topic (in the order of their paths'
             hashes) up to TEST_SHARE of its records: the reported figures;
             nothing is selected on it
  dev        the next files up to DEV_SHARE: checkpoints, patience and the
             intermediate loss are chosen on it
  train      every other remaining file, at most max_per_topic records per
             topic (labelled)
  unlabeled  the files between them and train's overflow, without labels:
             on-task text the labelled set never holds, at least as many
             rows as train (else SplitError)
"""

import collections
import csv
import io
import os
from typing import Dict, List, Sequence, Tuple

TEST_SHARE = 0.15
DEV_SHARE = 0.15
HELD_CAP = 0.25  # dev and test keep at most this x max_per_topic a topic


class SplitError(ValueError):
  """Too few on-task unlabeled rows for the labelled set."""


def split(by_file: Dict[str, Sequence[Tuple[bytes, Sequence[str]]]],
          max_per_topic: int) -> Dict[str, List]:
  """{"train", "dev", "test": [(text, topic)], "unlabeled": [text]}.

  by_file: topic -> [(file key, [texts])] in file order
  (data_pipeline.corpora.stdlib_topics.records_by_file)."""
  out = {"train": [], "dev": [], "test": [], "unlabeled": []}
  held_cap = max(1, round(max_per_topic * HELD_CAP))
  for topic, files in by_file.items():
    total = sum(len(texts) for _, texts in files)
    seen = collections.Counter()
    labelled = 0
    for index, (_, texts) in enumerate(files):
      if seen["test"] < TEST_SHARE * total:
        part = "test"
      elif seen["dev"] < DEV_SHARE * total:
        part = "dev"
      else:
        part = "train" if seen["rest"] % 2 == 0 else "unlabeled"
        seen["rest"] += 1
      if part != "unlabeled":
        seen[part] += len(texts)
      if part in ("test", "dev"):
        room = max(0, held_cap - sum(1 for _, t in out[part] if t == topic))
        out[part].extend((text, topic) for text in texts[:room])
      elif part == "train":
        room = max(0, max_per_topic - labelled)
        out["train"].extend((text, topic) for text in texts[:room])
        out["unlabeled"].extend(texts[room:])
        labelled += len(texts[:room])
      else:
        out["unlabeled"].extend(texts)
  if len(out["unlabeled"]) < len(out["train"]):
    raise SplitError(
        f"{len(out['unlabeled'])} on-task unlabeled rows for "
        f"{len(out['train'])} labelled ones: lower --max_per_topic")
  return out


def write(folder: str, splits: Dict[str, List]) -> Dict[str, str]:
  """<folder>/{train,dev,test}.csv (text, label) and unlabeled.csv (text);
  their paths."""
  from albert_common import file_io
  paths = {}
  for name, rows in splits.items():
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    if name == "unlabeled":
      writer.writerow(["text"])
      writer.writerows([text] for text in rows)
    else:
      writer.writerow(["text", "label"])
      writer.writerows(rows)
    paths[name] = os.path.join(folder, f"{name}.csv")
    file_io.write_atomic(paths[name], buffer.getvalue())
  return paths
