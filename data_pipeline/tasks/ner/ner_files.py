"""Reading a NER file in any of the three formats, checked; writing
predictions back in the file's own format.

`read_ner_file` reads CoNLL (conll_format), JSON lines (jsonl_format) or
CLUENER (cluener_format) from any filesystem and checks every sentence: the
tags are tags of the scheme (detected from the training file, or given),
follow it (tag_schemes.check_sequence), and, for dev and test files, are
among the training labels. A bad record is a UserInputError "path:line:
why"; with `skip_bad_records` it is skipped and counted instead. An empty
file, or one left without sentences, is an error too.

`input_format="auto"` takes the format from the extension: .jsonl / .json
files are JSON lines, or CLUENER when their first record has a "text" and
no "tokens"; the CoNLL extensions (.conll, .txt, .tsv, .iob, .bio, ...)
are CoNLL.
"""

import json
from typing import List, Optional, Sequence, Union

from absl import logging

from albert_common import file_io
from albert_common.errors import UserInputError
from data_pipeline.tasks.ner import cluener_format
from data_pipeline.tasks.ner import conll_format
from data_pipeline.tasks.ner import jsonl_format
from data_pipeline.tasks.ner import tag_schemes
from data_pipeline.tasks.ner.sentences import BadRecord
from data_pipeline.tasks.ner.sentences import NerFile
from data_pipeline.tasks.ner.sentences import Sentence

CONLL, JSONL, CLUENER = "conll", "jsonl", "cluener"
FORMATS = (CONLL, JSONL, CLUENER)
AUTO = "auto"
# Files next to a JSON lines file that name its integer tags.
LABEL_NAME_FILES = ("label_names.txt", "label_names.json")


def _read_text(path: str) -> str:
  try:
    data = file_io.read_bytes(path)
  except FileNotFoundError:
    raise UserInputError(f"{path}: no such file") from None
  except OSError as e:
    raise UserInputError(f"{path}: cannot read it ({e.strerror or e})"
                         ) from None
  try:
    return data.decode("utf-8-sig")
  except UnicodeDecodeError as e:
    line = data[:e.start].count(b"\n") + 1
    raise UserInputError(f"{path}:{line}: not UTF-8 text") from None


def resolve_format(path: str, input_format: str, text: str = "") -> str:
  """The format of `path`: `input_format`, or from the extension (and, for
  JSON, the first record) when it is "auto"."""
  if input_format != AUTO:
    if input_format not in FORMATS:
      raise UserInputError(f"--input_format must be one of {FORMATS} or "
                           f"{AUTO}, got {input_format!r}")
    return input_format
  name = file_io.basename(path).lower()
  if name.endswith(".gz"):
    name = name[:-3]
  if name.endswith(jsonl_format.EXTENSIONS):
    first = next((line for line in text.split("\n") if line.strip()), "")
    return CLUENER if cluener_format.is_cluener_record(first) else JSONL
  if name.endswith(conll_format.EXTENSIONS):
    return CONLL
  raise UserInputError(
      f"{path}: cannot tell its format from the extension; pass "
      f"--input_format (one of {', '.join(FORMATS)})")


def load_label_names(value: str, data_path: str = "") -> Optional[List[str]]:
  """The names of integer tags: `value` is a comma-separated list or a file
  (one name a line, or a JSON list); empty: a label_names.txt /
  label_names.json beside `data_path`, else None."""
  path = value
  if not value:
    folder = file_io.dirname(data_path) if data_path else ""
    path = next((p for p in (file_io.join(folder, n) if folder else n
                             for n in LABEL_NAME_FILES)
                 if file_io.isfile(p)), "")
    if not path:
      return None
  elif not file_io.isfile(value):
    return [name.strip() for name in value.split(",")]
  text = _read_text(path)
  if path.endswith(".json"):
    try:
      names = json.loads(text)
    except json.JSONDecodeError as e:
      raise UserInputError(f"{path}: not JSON ({e.msg})") from None
    if not (isinstance(names, list) and all(isinstance(n, str)
                                            for n in names)):
      raise UserInputError(f"{path}: expected a JSON list of label names")
    return names
  return [line.strip() for line in text.splitlines() if line.strip()]


def _records(text, input_format, labeled, scheme, names):
  """(records, layout, labeled) of the format's parser."""
  if input_format == CONLL:
    return conll_format.parse(text, labeled)
  if input_format == JSONL:
    records, labeled = jsonl_format.parse(text, labeled, names)
  else:
    records, labeled = cluener_format.parse(
        text, labeled,
        tag_schemes.IOB2 if scheme == tag_schemes.AUTO else scheme)
  return records, [], labeled


def _check(sentence: Sentence, scheme: str,
           known_labels: Optional[Sequence[str]]) -> None:
  """Raises the BadRecord of a sentence's first bad tag."""
  problem = tag_schemes.check_sequence(sentence.tags, scheme)
  if problem:
    raise BadRecord(sentence.line_of(problem[0]), problem[1])
  if known_labels is not None:
    known = set(known_labels)
    for i, tag in enumerate(sentence.tags):
      if tag not in known:
        raise BadRecord(sentence.line_of(i), f"tag {tag!r} is not among the "
                        f"training labels ({', '.join(known_labels)})")


def read_ner_file(path: str, input_format: str = AUTO,
                  labeled: Optional[bool] = True,
                  scheme: str = tag_schemes.AUTO, label_names: str = "",
                  known_labels: Optional[Sequence[str]] = None,
                  skip_bad_records: bool = False) -> NerFile:
  """Reads and checks one NER file (see the module docstring).

  Args:
    path: the file (any filesystem).
    input_format: one of FORMATS, or AUTO.
    labeled: whether it must have tags (training, dev); None: as its first
      sentence (a test file may or may not).
    scheme: the tag scheme (tag_schemes.CHOICES); AUTO: detected from the
      tags (the training file).
    label_names: --label_names (JSON lines with integer tags).
    known_labels: the training labels a dev / test file's tags must be
      among; None: any.
    skip_bad_records: skip bad records (counted, logged) instead of failing.

  Raises:
    UserInputError: "path:line: why" for the first bad record (unless
      skipped), a missing, empty or non-UTF-8 file, a file without
      sentences.
  """
  text = _read_text(path)
  input_format = resolve_format(path, input_format, text)
  scheme = tag_schemes.canonical(scheme)
  names = (load_label_names(label_names, path)
           if input_format == JSONL else None)
  records, layout, labeled = _records(text, input_format, labeled, scheme,
                                      names)
  if not records:
    raise UserInputError(f"{path}: no sentences (an empty file)")
  if labeled and scheme == tag_schemes.AUTO:
    scheme = tag_schemes.detect_scheme(
        r.tags for r in records if isinstance(r, Sentence))
  kept: List[Sentence] = []
  position = {}  # record index -> kept sentence index
  bad: List[BadRecord] = []
  for index, record in enumerate(records):
    try:
      if isinstance(record, BadRecord):
        raise record
      if labeled:
        _check(record, scheme, known_labels)
    except BadRecord as e:
      if not skip_bad_records:
        raise UserInputError(f"{path}:{e.line}: {e.message}; fix it or "
                             "pass --skip_bad_records") from None
      bad.append(e)
      continue
    position[index] = len(kept)
    kept.append(record)
  if bad:
    logging.warning("%s: skipped %d bad records (--skip_bad_records); the "
                    "first: line %d: %s", path, len(bad), bad[0].line,
                    bad[0].message)
  if not kept:
    raise UserInputError(f"{path}: no sentences left: all {len(bad)} "
                         f"records are bad (the first, line {bad[0].line}: "
                         f"{bad[0].message})")
  layout = [position[item] if isinstance(item, int) else item
            for item in layout
            if not isinstance(item, int) or item in position]
  # Integer tags are written back as integers (an unlabeled file: when
  # names are given).
  integers = names is not None and (not labeled or any(
      isinstance(t, int) for s in kept
      for t in s.record[jsonl_format.tag_key(s.record)]))
  return NerFile(path, input_format, kept, labeled,
                 scheme if scheme != tag_schemes.AUTO else "", len(bad),
                 layout, names if integers else None)


def render_predictions(ner_file: NerFile,
                       predicted: Sequence[Sequence[str]],
                       scheme: str) -> str:
  """The file's text with `predicted` (one tag per word of each sentence)
  in place of its tags, in its own format."""
  if ner_file.input_format == CONLL:
    return conll_format.render(ner_file.sentences, ner_file.layout,
                               predicted, ner_file.labeled)
  if ner_file.input_format == JSONL:
    return jsonl_format.render(ner_file.sentences, predicted,
                               ner_file.label_names)
  return cluener_format.render(ner_file.sentences, predicted, scheme)


def predictions_file_name(split: str, ner_file: NerFile) -> str:
  """`<split>_predictions` with the input file's extension (or the
  format's: .txt, .jsonl, .json)."""
  name = file_io.basename(ner_file.path)
  if name.endswith(".gz"):
    name = name[:-3]
  extension = name[name.rfind("."):] if "." in name else {
      CONLL: ".txt", JSONL: ".jsonl", CLUENER: ".json"}[ner_file.input_format]
  return f"{split}_predictions{extension}"


def write_predictions(ner_file: NerFile, predicted: Sequence[Sequence[str]],
                      scheme: str, directory: str, split: str) -> str:
  """Writes `<directory>/<split>_predictions.<ext>` atomically; its path."""
  path = file_io.join(directory, predictions_file_name(split, ner_file))
  file_io.write_atomic(path, render_predictions(ner_file, predicted, scheme))
  return path


def all_tags(files: Sequence[Union[NerFile, None]]) -> List[str]:
  """Every tag of the labeled files' sentences."""
  return [t for f in files if f is not None and f.labeled
          for s in f.sentences for t in s.tags]
