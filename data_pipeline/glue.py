"""GLUE's 9 tasks: their standard TSV files, features, metrics, submissions.

Files as distributed by the GLUE benchmark (download_glue_data.py), one task
per `data_dir`:

  task    files (dev / test splits)          columns used
  CoLA    train.tsv dev.tsv: no header,      3 = sentence, 1 = label
            4 columns
          test.tsv: header                   index, sentence
  SST-2   train/dev/test.tsv                 sentence, label
  MRPC    train/dev/test.tsv                 #1 String, #2 String, Quality
  STS-B   train/dev/test.tsv                 sentence1, sentence2, score
  QQP     train/dev/test.tsv                 question1, question2,
                                               is_duplicate (test: id)
  MNLI    train.tsv dev_matched.tsv          sentence1, sentence2, gold_label
            dev_mismatched.tsv
            test_matched.tsv test_mismatched.tsv
            (+ diagnostic.tsv here or in ../diagnostic/, the AX set)
  QNLI    train/dev/test.tsv                 question, sentence, label
  RTE     train/dev/test.tsv                 sentence1, sentence2, label
  WNLI    train/dev/test.tsv                 sentence1, sentence2, label

Columns are found by header name, so the different column counts of e.g.
MNLI's train (12) and dev (16) files need no special cases. Fields are split on
tabs with no quote processing (quotes are text, as the official readers'
`quotechar=None`). Every row must have the header's number of columns (CoLA:
4); a row that does not, or a label outside the task's label set, raises
UserInputError naming the file and line (`skip_malformed=True` skips such
rows with a warning instead). Test files have no labels.

Features follow the official ALBERT `classifier_utils`: `[CLS] a [SEP]` or
`[CLS] a [SEP] b [SEP]` (type ids 0 for `[CLS] a [SEP]`, 1 for `b [SEP]`),
pairs truncated by `_truncate_seq_pair` (drop the last token of the longer
segment, `b` on ties), padded with the `<pad>` id to `max_seq_length`.

Metrics (as the GLUE leaderboard): Matthews correlation (CoLA), accuracy,
F1 of the positive class + accuracy (MRPC, QQP), Pearson + Spearman (STS-B).
"""

import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple

from absl import logging
import numpy as np

from albert_common import file_io
from albert_common.encoder_inputs import INPUT_MASK
from albert_common.encoder_inputs import INPUT_TYPE_IDS
from albert_common.encoder_inputs import INPUT_WORD_IDS
from albert_common.errors import UserInputError
from data_pipeline import length_buckets


@dataclasses.dataclass(frozen=True)
class Example:
  """One GLUE example. `label` is a label name, a float (STS-B), or None
  (test sets); `guid` is the test `index` / `id`, else "split-line"."""

  guid: str
  text_a: str
  text_b: Optional[str] = None
  label: Optional[object] = None


@dataclasses.dataclass(frozen=True)
class GlueTask:
  """A GLUE task's files, columns, labels and metrics.

  Columns are header names; `headerless` maps split -> (num_columns,
  {role: column index}) for files without a header (CoLA train/dev).
  """

  name: str
  labels: Optional[Tuple[str, ...]]  # None: regression
  text_a: str
  text_b: Optional[str]
  label: str
  main_metric: str
  dev_splits: Tuple[str, ...] = ("dev",)
  test_splits: Tuple[str, ...] = ("test",)
  test_id: str = "index"
  submission: Tuple[Tuple[str, str], ...] = ()  # (split, file name)
  headerless: Tuple[Tuple[str, int, Tuple[Tuple[str, int], ...]], ...] = ()

  @property
  def is_regression(self) -> bool:
    return self.labels is None

  @property
  def num_classes(self) -> int:
    return 1 if self.is_regression else len(self.labels)

  @property
  def num_segments(self) -> int:
    return 1 if self.text_b is None else 2

  def submission_file(self, split: str) -> str:
    return dict(self.submission)[split]


_NLI = ("entailment", "not_entailment")
TASKS: Dict[str, GlueTask] = {
    "cola": GlueTask(
        "CoLA", ("0", "1"), "sentence", None, "label", "matthews_corr",
        submission=(("test", "CoLA.tsv"),),
        headerless=(("train", 4, (("text_a", 3), ("label", 1))),
                    ("dev", 4, (("text_a", 3), ("label", 1))))),
    "sst-2": GlueTask("SST-2", ("0", "1"), "sentence", None, "label",
                      "accuracy", submission=(("test", "SST-2.tsv"),)),
    "mrpc": GlueTask("MRPC", ("0", "1"), "#1 String", "#2 String", "Quality",
                     "accuracy", submission=(("test", "MRPC.tsv"),)),
    "sts-b": GlueTask("STS-B", None, "sentence1", "sentence2", "score",
                      "pearson", submission=(("test", "STS-B.tsv"),)),
    "qqp": GlueTask("QQP", ("0", "1"), "question1", "question2",
                    "is_duplicate", "accuracy", test_id="id",
                    submission=(("test", "QQP.tsv"),)),
    "mnli": GlueTask(
        "MNLI", ("contradiction", "entailment", "neutral"), "sentence1",
        "sentence2", "gold_label", "accuracy",
        dev_splits=("dev_matched", "dev_mismatched"),
        test_splits=("test_matched", "test_mismatched", "diagnostic"),
        submission=(("test_matched", "MNLI-m.tsv"),
                    ("test_mismatched", "MNLI-mm.tsv"),
                    ("diagnostic", "AX.tsv"))),
    "qnli": GlueTask("QNLI", _NLI, "question", "sentence", "label",
                     "accuracy", submission=(("test", "QNLI.tsv"),)),
    "rte": GlueTask("RTE", _NLI, "sentence1", "sentence2", "label",
                    "accuracy", submission=(("test", "RTE.tsv"),)),
    "wnli": GlueTask("WNLI", ("0", "1"), "sentence1", "sentence2", "label",
                     "accuracy", submission=(("test", "WNLI.tsv"),)),
}
_ALIASES = {"sst2": "sst-2", "stsb": "sts-b", "sts": "sts-b"}


def get_task(task_name: str) -> GlueTask:
  """The task for `--task_name` (case-insensitive; "SST-2" or "sst2")."""
  key = (task_name or "").strip().lower()
  key = _ALIASES.get(key, key)
  if key not in TASKS:
    raise UserInputError(
        f"--task_name={task_name!r} is not a GLUE task; expected one of "
        + ", ".join(t.name for t in TASKS.values()))
  return TASKS[key]


# --- Reading -----------------------------------------------------------------


def split_path(task: GlueTask, data_dir: str, split: str) -> str:
  """The TSV file of `split` ("train", "dev", "dev_matched", "test", ...)."""
  if split == "diagnostic":
    for path in (file_io.join(data_dir, "diagnostic.tsv"),
                 file_io.join(data_dir, "..", "diagnostic", "diagnostic.tsv")):
      path = file_io.normpath(path)
      if file_io.exists(path):
        return path
  return file_io.join(data_dir, f"{split}.tsv")


def available_test_splits(task: GlueTask, data_dir: str) -> List[str]:
  """Test splits to predict; MNLI's diagnostic (AX) set only if present."""
  return [s for s in task.test_splits
          if s != "diagnostic" or
          file_io.exists(split_path(task, data_dir, s))]


def _read_rows(path: str) -> List[Tuple[int, List[str]]]:
  """(1-based line number, fields) of every non-empty line."""
  try:
    data = file_io.read_bytes(path)
  except FileNotFoundError:
    raise UserInputError(f"{path} does not exist (--data_dir should hold the "
                         "task's GLUE TSV files)") from None
  except OSError as e:
    raise UserInputError(f"cannot read {path}: {e}") from e
  try:
    text = data.decode("utf-8-sig")
  except UnicodeDecodeError as e:
    line = data[:e.start].count(b"\n") + 1
    raise UserInputError(f"{path}:{line}: not valid UTF-8") from e
  rows = []
  for number, line in enumerate(text.split("\n"), start=1):
    line = line.rstrip("\r")
    if line:
      rows.append((number, line.split("\t")))
  return rows


def read_examples(task: GlueTask, data_dir: str, split: str,
                  skip_malformed: bool = False) -> List[Example]:
  """Examples of one split; labels are None for test splits.

  Raises:
    UserInputError: missing file or column, a row with the wrong number of
      columns, or an unknown / unparsable label (file and line named).
  """
  path = split_path(task, data_dir, split)
  rows = _read_rows(path)
  is_test = split.startswith("test") or split == "diagnostic"
  headerless = {s: (n, dict(cols)) for s, n, cols in task.headerless}
  if split in headerless:
    num_columns, columns = headerless[split]
  else:
    if not rows:
      raise UserInputError(f"{path} is empty (expected a header line)")
    header = rows[0][1]
    rows = rows[1:]
    num_columns = len(header)
    columns = _header_columns(task, split, header, is_test, path)
  examples = []
  skipped = 0
  for number, fields in rows:
    try:
      if len(fields) != num_columns:
        raise UserInputError(
            f"{path}:{number}: expected {num_columns} tab-separated columns, "
            f"found {len(fields)}")
      label = None
      if not is_test:
        label = _parse_label(task, fields[columns["label"]], path, number)
      guid = (fields[columns["id"]] if "id" in columns
              else f"{split}-{number}")
      examples.append(Example(
          guid=guid, text_a=fields[columns["text_a"]],
          text_b=fields[columns["text_b"]] if "text_b" in columns else None,
          label=label))
    except UserInputError:
      if not skip_malformed:
        raise
      skipped += 1
  if skipped:
    logging.warning("%s: skipped %d malformed rows", path, skipped)
  if not examples:
    raise UserInputError(f"{path} has no examples")
  return examples


def _header_columns(task: GlueTask, split: str, header: List[str],
                    is_test: bool, path: str) -> Dict[str, int]:
  """{role: column index} of text_a, text_b and label (id for test splits).

  Raises:
    UserInputError: a column the task reads is not in the header.
  """
  wanted = {"text_a": task.text_a, "text_b": task.text_b}
  wanted["id" if is_test else "label"] = (task.test_id if is_test
                                          else task.label)
  columns = {}
  for role, name in wanted.items():
    if name is None:
      continue
    if name not in header:
      raise UserInputError(
          f"{path}:1: no column {name!r} in the header "
          f"({', '.join(header)}); is this the {task.name} {split} file?")
    columns[role] = header.index(name)
  return columns


def _parse_label(task: GlueTask, value: str, path: str, number: int):
  if task.is_regression:
    try:
      return float(value)
    except ValueError:
      raise UserInputError(f"{path}:{number}: {task.label} {value!r} is not "
                           "a number") from None
  if value not in task.labels:
    raise UserInputError(f"{path}:{number}: label {value!r} is not one of "
                         f"{list(task.labels)}")
  return value


# --- Features ----------------------------------------------------------------


def truncate_seq_pair(tokens_a: List[int], tokens_b: List[int],
                      max_length: int) -> None:
  """In place: drop the last token of the longer list (b on ties) until the
  total fits (official `_truncate_seq_pair`)."""
  while len(tokens_a) + len(tokens_b) > max_length:
    if len(tokens_a) > len(tokens_b):
      tokens_a.pop()
    else:
      tokens_b.pop()


@dataclasses.dataclass
class Features:
  """Packed token ids of N examples, unpadded (padding happens in tf.data).

  Attributes:
    token_ids: int32 [sum of lengths], `[CLS] a [SEP] (b [SEP])` per example.
    lengths: int32 [N], tokens per example (<= max_seq_length).
    segment_a_lengths: int32 [N], length of `[CLS] a [SEP]`.
    labels: int32 [N] label index, float32 [N] (regression), or None (test).
    guids: list of str.
  """

  token_ids: np.ndarray
  lengths: np.ndarray
  segment_a_lengths: np.ndarray
  labels: Optional[np.ndarray]
  guids: List[str]

  def __len__(self) -> int:
    return len(self.lengths)

  def padded(self, max_seq_length: int, pad_id: int = 0
            ) -> Dict[str, np.ndarray]:
    """Encoder inputs as int32 numpy arrays [N, max_seq_length]."""
    n = len(self)
    positions = np.arange(max_seq_length)[None, :]
    mask = positions < self.lengths[:, None]
    ids = np.full((n, max_seq_length), pad_id, np.int32)
    ids[mask] = self.token_ids
    type_ids = (positions >= self.segment_a_lengths[:, None]) & mask
    return {INPUT_WORD_IDS: ids, INPUT_MASK: mask.astype(np.int32),
            INPUT_TYPE_IDS: type_ids.astype(np.int32)}


def featurize(task: GlueTask, examples: Sequence[Example], tokenizer,
              max_seq_length: int) -> Features:
  """Tokenizes and packs examples (see module docstring).

  Args:
    task: GlueTask (labels to indices).
    examples: from read_examples.
    tokenizer: data_pipeline.tokenization.SentencePieceTokenizer.
    max_seq_length: int >= 3 (>= 5 for pairs).
  """
  pair = task.num_segments == 2
  if max_seq_length < (5 if pair else 3):
    raise UserInputError(f"--max_seq_length={max_seq_length} is too short")
  cls_id, sep_id = tokenizer.cls_id, tokenizer.sep_id
  tokens_a = tokenizer.encode_batch([e.text_a for e in examples])
  tokens_b = (tokenizer.encode_batch([e.text_b or "" for e in examples])
              if pair else [[] for _ in examples])
  packed, lengths, a_lengths = [], [], []
  for a, b in zip(tokens_a, tokens_b):
    if pair:
      truncate_seq_pair(a, b, max_seq_length - 3)
      ids = [cls_id] + a + [sep_id] + b + [sep_id]
    else:
      a = a[:max_seq_length - 2]
      ids = [cls_id] + a + [sep_id]
    packed.extend(ids)
    lengths.append(len(ids))
    a_lengths.append(len(a) + 2)
  labels = None
  if examples and examples[0].label is not None:
    if task.is_regression:
      labels = np.array([e.label for e in examples], np.float32)
    else:
      index = {name: i for i, name in enumerate(task.labels)}
      labels = np.array([index[e.label] for e in examples], np.int32)
  return Features(token_ids=np.array(packed, np.int32),
                  lengths=np.array(lengths, np.int32),
                  segment_a_lengths=np.array(a_lengths, np.int32),
                  labels=labels, guids=[e.guid for e in examples])


def make_dataset(features: Features, max_seq_length: int, batch_size: int,
                 is_training: bool = False, seed: Optional[int] = None,
                 pad_id: int = 0, with_labels: Optional[bool] = None,
                 buckets: Sequence[int] = ()):
  """tf.data of encoder-input dicts (static shape [batch, max_seq_length]).

  Training: (features, labels), repeated, shuffled, full batches only.
  Otherwise: one pass in order; with labels (features, labels) if
  `with_labels`, else feature dicts only (the default for prediction).
  With more than one of `buckets` (data_pipeline.length_buckets), batches
  are [batch, bucket] instead, and evaluation batches carry EXAMPLE_INDEX.
  """
  import tensorflow as tf
  if with_labels is None:
    with_labels = is_training
  ragged = tf.RaggedTensor.from_row_lengths(features.token_ids,
                                            features.lengths)
  a_lengths = features.segment_a_lengths
  if with_labels:
    if features.labels is None:
      raise ValueError("features have no labels")
    dataset = tf.data.Dataset.from_tensor_slices(
        (ragged, a_lengths, features.labels))
  else:
    dataset = tf.data.Dataset.from_tensor_slices((ragged, a_lengths))
  if is_training:
    dataset = dataset.repeat().shuffle(min(len(features), 100_000),
                                       seed=seed)

  def pack(ids, a_length, *label):
    length = tf.shape(ids)[0]
    word_ids = tf.pad(ids, [[0, max_seq_length - length]],
                      constant_values=pad_id)
    positions = tf.range(max_seq_length)
    mask = tf.cast(positions < length, tf.int32)
    type_ids = tf.cast(positions >= a_length, tf.int32) * mask
    inputs = {INPUT_WORD_IDS: tf.ensure_shape(word_ids, [max_seq_length]),
              INPUT_MASK: mask, INPUT_TYPE_IDS: type_ids}
    return (inputs, label[0]) if label else inputs

  dataset = dataset.map(pack, num_parallel_calls=tf.data.AUTOTUNE)
  dataset = length_buckets.batch(
      dataset, buckets, batch_size, drop_remainder=is_training,
      keep_order=not is_training and not with_labels)
  return dataset.prefetch(tf.data.AUTOTUNE)


# --- Metrics -----------------------------------------------------------------


def accuracy(labels, predictions) -> float:
  labels, predictions = np.asarray(labels), np.asarray(predictions)
  return float(np.mean(labels == predictions))


def f1_score(labels, predictions, positive=1) -> float:
  """F1 of the positive class (0 when it is never predicted nor present)."""
  labels, predictions = np.asarray(labels), np.asarray(predictions)
  tp = np.sum((predictions == positive) & (labels == positive))
  fp = np.sum((predictions == positive) & (labels != positive))
  fn = np.sum((predictions != positive) & (labels == positive))
  denominator = 2 * tp + fp + fn
  return float(2 * tp / denominator) if denominator else 0.0


def matthews_corr(labels, predictions) -> float:
  """Matthews correlation of binary labels (0 when undefined, as sklearn)."""
  labels = np.asarray(labels).astype(bool)
  predictions = np.asarray(predictions).astype(bool)
  tp = float(np.sum(predictions & labels))
  tn = float(np.sum(~predictions & ~labels))
  fp = float(np.sum(predictions & ~labels))
  fn = float(np.sum(~predictions & labels))
  denominator = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
  return float((tp * tn - fp * fn) / denominator) if denominator else 0.0


def pearson(x, y) -> float:
  x = np.asarray(x, np.float64) - np.mean(x)
  y = np.asarray(y, np.float64) - np.mean(y)
  denominator = np.sqrt(np.sum(x * x) * np.sum(y * y))
  return float(np.sum(x * y) / denominator) if denominator else 0.0


def _average_ranks(x) -> np.ndarray:
  """Ranks 1..n, ties sharing their mean rank (as scipy.stats.rankdata)."""
  x = np.asarray(x, np.float64)
  order = np.argsort(x, kind="mergesort")
  sorted_x = x[order]
  starts = np.r_[0, np.flatnonzero(np.diff(sorted_x)) + 1]
  ends = np.r_[starts[1:], len(x)]
  ranks = np.empty(len(x), np.float64)
  for start, end in zip(starts, ends):
    ranks[order[start:end]] = (start + end + 1) / 2.0
  return ranks


def spearman(x, y) -> float:
  return pearson(_average_ranks(x), _average_ranks(y))


def compute_metrics(task: GlueTask, labels: np.ndarray,
                    outputs: np.ndarray) -> Dict[str, float]:
  """Dev metrics from model outputs (logits [N, C]; regression [N] or [N, 1]).

  Returns {metric: value} including `loss` (cross-entropy or mean squared
  error) and the task's main metric.
  """
  outputs = np.asarray(outputs, np.float64)
  labels = np.asarray(labels)
  if task.is_regression:
    predictions = outputs.reshape(-1)
    return dict(pearson=pearson(predictions, labels),
                spearman=spearman(predictions, labels),
                loss=float(np.mean((predictions - labels) ** 2)))
  logits = outputs - outputs.max(axis=-1, keepdims=True)
  log_probs = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
  predictions = outputs.argmax(axis=-1)
  label_log_probs = log_probs[np.arange(len(labels)), labels]
  results = dict(accuracy=accuracy(labels, predictions),
                 loss=float(-np.mean(label_log_probs)))
  if task.name == "CoLA":
    results["matthews_corr"] = matthews_corr(labels, predictions)
  if task.name in ("MRPC", "QQP"):
    results["f1"] = f1_score(labels, predictions)
  return results


# --- Submissions -------------------------------------------------------------


def prediction_labels(task: GlueTask, outputs: np.ndarray) -> List[str]:
  """Label names (or scores for STS-B) as GLUE submissions expect."""
  outputs = np.asarray(outputs)
  if task.is_regression:
    return [f"{v:.3f}" for v in outputs.reshape(-1)]
  return [task.labels[i] for i in outputs.argmax(axis=-1)]


def write_submission(task: GlueTask, split: str, guids: Sequence[str],
                     outputs: np.ndarray, output_dir: str) -> str:
  """Writes `<output_dir>/<CoLA.tsv|MNLI-m.tsv|...>` with `index\\tprediction`
  rows (the test file's index, label name / score); returns its path."""
  labels = prediction_labels(task, outputs)
  if len(labels) != len(guids):
    raise ValueError(f"{len(guids)} test examples, {len(labels)} predictions")
  path = file_io.join(output_dir, task.submission_file(split))
  file_io.write_atomic(path, "index\tprediction\n" + "".join(
      f"{guid}\t{label}\n" for guid, label in zip(guids, labels)))
  return path
