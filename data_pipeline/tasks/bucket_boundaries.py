"""Length-bucket boundaries chosen from the data, and kept with the run.

`--length_buckets=auto` (fine-tuning) picks at most `--max_length_buckets`
boundaries that minimise the padded tokens of the training set: every
example is padded to the smallest boundary that holds it, so a set of
boundaries costs

  padded tokens = sum over examples of (its bucket's length),

and the best set is found exactly by a dynamic program over the length
histogram (`optimal_boundaries`; O(K n^2) for n candidate boundaries, well
under a second for any max_seq_length). Candidates are the multiples of
MULTIPLE (8) below --max_seq_length, which is always the last boundary.

The choice is written to the run's output directory as
`length_buckets.json` and read back by every later run there:

  {"length_buckets": [24, 40, 64, 128], "setting": "auto",
   "max_length_buckets": 4, "max_seq_length": 128,
   "padded_share": 0.091, "examples": 67349, "source": "train"}

Policy (`resolve`): with `auto`, a saved choice for the same
--max_seq_length and --max_length_buckets is reused as it is -- by a
resumed run (so its batch stream continues exactly), an evaluation or
prediction without training, and the export -- even when the training
file now gives other boundaries (logged as a warning: start a new
--output_dir, or delete the file, to choose again). Without a saved choice,
auto chooses from the training set's lengths (--do_train), else from the
split the run reads (dev or test; boundaries change speed, never results).
An explicit value (`pow2`, `none`, a list) is used as given and recorded.

`padded_share` = padded positions / all positions of the training set in
its buckets (0 = no padding).

Pure numpy: no TensorFlow here.
"""

import dataclasses
import itertools
from typing import Callable, Dict, Optional, Sequence, Tuple

from absl import logging
import numpy as np

from albert_common import file_io
from albert_common.errors import UserInputError
from data_pipeline.tasks import length_buckets

FILE_NAME = "length_buckets.json"
# Boundaries (but the last, --max_seq_length) are multiples of this.
MULTIPLE = 8


def histogram(lengths: Sequence[int], max_seq_length: int) -> np.ndarray:
  """int64 [max_seq_length + 1]: examples of each length (0..max)."""
  lengths = np.asarray(lengths, np.int64)
  if lengths.size and (lengths.min() < 0 or lengths.max() > max_seq_length):
    raise ValueError(f"lengths outside [0, {max_seq_length}]: "
                     f"{lengths.min()}..{lengths.max()}")
  return np.bincount(lengths, minlength=max_seq_length + 1)


def padded_tokens(counts: np.ndarray, buckets: Sequence[int]) -> int:
  """Positions the examples of histogram `counts` take in `buckets` (each
  example at the smallest bucket >= its length)."""
  cumulative = np.concatenate([[0], np.cumsum(counts)])  # [S + 2]
  total, low = 0, 0
  for bucket in buckets:
    # Examples with length in (low, bucket]: cumulative[b + 1] - [low + 1].
    total += bucket * int(cumulative[bucket + 1] - cumulative[low + 1])
    low = bucket
  # Length 0 (empty rows) takes the first bucket.
  return total + buckets[0] * int(counts[0])


def padded_share(counts: np.ndarray, buckets: Sequence[int]) -> float:
  """The share of positions that are padding, in [0, 1)."""
  positions = padded_tokens(counts, buckets)
  tokens = int(np.dot(np.arange(len(counts)), counts))
  return 1.0 - tokens / positions if positions else 0.0


def candidates(max_seq_length: int, multiple: int = MULTIPLE
               ) -> Tuple[int, ...]:
  """Possible boundaries: multiples of `multiple` below max_seq_length, then
  max_seq_length."""
  return tuple(range(multiple, max_seq_length, multiple)) + (max_seq_length,)


def optimal_boundaries(counts: np.ndarray, max_buckets: int,
                       multiple: int = MULTIPLE) -> Tuple[int, ...]:
  """The boundaries of least padded tokens, exactly (dynamic program).

  Args:
    counts: int [max_seq_length + 1], the length histogram.
    max_buckets: at most this many boundaries (>= 1).
    multiple: every boundary but the last is a multiple of it.

  Returns:
    Increasing ints ending with max_seq_length = len(counts) - 1. Ties go
    to fewer boundaries, then to the lexicographically smallest list.

  best[t][j] = the least cost of the examples up to candidate c_j with t
  boundaries, the last c_j: best[1][j] = c_j * N(c_j), and
  best[t][j] = min_i best[t-1][i] + c_j * (N(c_j) - N(c_i)), where N(c)
  counts the examples of length <= c.
  """
  if max_buckets < 1:
    raise ValueError(f"max_buckets must be >= 1, got {max_buckets}")
  max_seq_length = len(counts) - 1
  cands = candidates(max_seq_length, multiple)
  cumulative = np.cumsum(counts)  # N(c) = cumulative[c]
  below = [int(cumulative[c]) for c in cands]
  n = len(cands)
  # best[j]: (cost, boundaries) with the current number of boundaries.
  best = [(c * below[j], (c,)) for j, c in enumerate(cands)]
  answer = best[-1]
  for _ in range(2, max_buckets + 1):
    best = [None] + [
        min((best[i][0] + cands[j] * (below[j] - below[i]),
             best[i][1] + (cands[j],))
            for i in range(j) if best[i] is not None)
        if any(b is not None for b in best[:j]) else None
        for j in range(1, n)]
    if best[-1] is not None and best[-1][0] < answer[0]:
      answer = best[-1]  # a tie keeps the fewer boundaries found first
  return answer[1]


def brute_force_boundaries(counts: np.ndarray, max_buckets: int,
                           multiple: int = MULTIPLE) -> Tuple[int, ...]:
  """optimal_boundaries by trying every subset (tests; small inputs)."""
  max_seq_length = len(counts) - 1
  inner = candidates(max_seq_length, multiple)[:-1]
  best = None
  for size in range(max_buckets):
    for subset in itertools.combinations(inner, size):
      buckets = subset + (max_seq_length,)
      key = (padded_tokens(counts, buckets), len(buckets), buckets)
      best = key if best is None or key < best else best
  return best[2]


@dataclasses.dataclass(frozen=True)
class BucketChoice:
  """The boundaries a run uses and how they were found.

  Attributes:
    length_buckets: increasing ints ending with max_seq_length.
    setting: the --length_buckets value ("auto", "pow2", "none", a list).
    max_length_buckets: the --max_length_buckets in force.
    max_seq_length: the last boundary.
    padded_share: padding share of the examples they were chosen on (None
      when no lengths were at hand).
    examples: how many examples that was.
    source: the split the lengths came from ("train", "dev", ...).
    compared: padding share of the other rules on the same examples
      ({"pow2": ..., "none": ...}), for the log and the record.
  """

  length_buckets: Tuple[int, ...]
  setting: str
  max_length_buckets: int
  max_seq_length: int
  padded_share: Optional[float] = None
  examples: int = 0
  source: str = ""
  compared: Dict[str, float] = dataclasses.field(default_factory=dict)

  def to_dict(self) -> dict:
    values = dataclasses.asdict(self)
    values["length_buckets"] = list(self.length_buckets)
    return values

  @classmethod
  def from_dict(cls, values: dict) -> "BucketChoice":
    names = {f.name for f in dataclasses.fields(cls)}
    values = {k: v for k, v in values.items() if k in names}
    values["length_buckets"] = tuple(int(n) for n in values["length_buckets"])
    return cls(**values)


def choose(value: str, max_seq_length: int, max_buckets: int,
           lengths: Optional[Sequence[int]] = None, source: str = ""
           ) -> BucketChoice:
  """The boundaries of a --length_buckets value.

  Args:
    value: "auto", "pow2", "none" or a comma list
      (length_buckets.parse_length_buckets).
    max_seq_length: the last boundary.
    max_buckets: --max_length_buckets, auto's limit.
    lengths: the examples' token counts; `auto` without them falls back to
      `pow2` (nothing to fit).
    source: where the lengths came from, for the record.
  """
  text = (value or "").strip().lower()
  counts = (histogram(lengths, max_seq_length)
            if lengths is not None and len(lengths) else None)
  if text == length_buckets.AUTO and counts is not None:
    buckets = optimal_boundaries(counts, max_buckets)
  else:
    buckets = length_buckets.parse_length_buckets(value, max_seq_length)
  if counts is None:
    return BucketChoice(tuple(buckets), text or length_buckets.NONE,
                        max_buckets, max_seq_length)
  compared = {rule: round(padded_share(counts, length_buckets.
                                       parse_length_buckets(rule,
                                                            max_seq_length)),
                          4)
              for rule in (length_buckets.POW2, length_buckets.NONE)
              if rule != text}
  return BucketChoice(tuple(buckets), text or length_buckets.NONE,
                      max_buckets, max_seq_length,
                      round(padded_share(counts, buckets), 4),
                      int(counts.sum()), source, compared)


def read(folder: str) -> Optional[BucketChoice]:
  """<folder>/length_buckets.json, or None."""
  path = file_io.join(folder, FILE_NAME)
  if not folder or not file_io.exists(path):
    return None
  values = file_io.read_json_object(path, "length buckets")
  try:
    return BucketChoice.from_dict(values)
  except (KeyError, TypeError, ValueError) as e:
    raise UserInputError(f"{path} is not a length-bucket record ({e}); "
                         "delete it to choose the boundaries again") from None


def write(folder: str, choice: BucketChoice) -> str:
  """Writes <folder>/length_buckets.json atomically; returns its path."""
  file_io.makedirs(folder)
  path = file_io.join(folder, FILE_NAME)
  file_io.write_json_atomic(path, choice.to_dict())
  return path


def resolve(value: str, max_seq_length: int, max_buckets: int,
            output_dir: str,
            lengths: Optional[Callable[[], Sequence[int]]] = None,
            source: str = "train") -> Tuple[int, ...]:
  """The run's boundaries (see the module docstring for the policy), logged
  and recorded in `output_dir`.

  Args:
    value: the --length_buckets value.
    max_seq_length, max_buckets: --max_seq_length, --max_length_buckets.
    output_dir: the run's folder ("" records nothing).
    lengths: () -> the token counts to choose from (called only when
      needed), or None.
    source: the split `lengths` reads.
  """
  is_auto = (value or "").strip().lower() == length_buckets.AUTO
  saved = read(output_dir) if output_dir else None
  if (is_auto and saved is not None and saved.setting == length_buckets.AUTO
      and saved.max_seq_length == max_seq_length
      and saved.max_length_buckets == max_buckets):
    _warn_if_data_changed(saved, max_seq_length, max_buckets, lengths)
    logging.info("length buckets %s (chosen by an earlier run, %s)",
                 _text(saved.length_buckets),
                 file_io.join(output_dir, FILE_NAME))
    return saved.length_buckets
  choice = choose(value, max_seq_length, max_buckets,
                  lengths() if lengths is not None and (
                      is_auto or saved is None) else None, source)
  if is_auto and saved is not None:
    logging.warning("--length_buckets=auto: the boundaries %s recorded in "
                    "%s were chosen for other settings; chose %s",
                    _text(saved.length_buckets), output_dir,
                    _text(choice.length_buckets))
  _log(choice)
  if output_dir:
    write(output_dir, choice)
  return choice.length_buckets


def _warn_if_data_changed(saved, max_seq_length, max_buckets, lengths):
  if lengths is None:
    return
  now = choose(length_buckets.AUTO, max_seq_length, max_buckets, lengths())
  if now.length_buckets != saved.length_buckets:
    logging.warning(
        "--length_buckets=auto: the %s data now gives boundaries %s, but "
        "this output directory's runs chose %s; keeping those (a resumed "
        "run continues the same batches). Use a new --output_dir, or "
        "delete %s there, to choose again.", saved.source or "training",
        _text(now.length_buckets), _text(saved.length_buckets), FILE_NAME)


def _text(buckets) -> str:
  return ",".join(map(str, buckets))


def _log(choice: BucketChoice) -> None:
  if choice.padded_share is None:
    logging.info("length buckets %s (--length_buckets=%s)",
                 _text(choice.length_buckets), choice.setting)
    return
  others = ", ".join(f"{name} {100 * share:.1f}%"
                     for name, share in choice.compared.items())
  logging.info("length buckets %s (--length_buckets=%s, from %d %s "
               "examples): %.1f%% of the positions are padding (%s)",
               _text(choice.length_buckets), choice.setting, choice.examples,
               choice.source, 100 * choice.padded_share, others)
