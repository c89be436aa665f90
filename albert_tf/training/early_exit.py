"""run_classifier --early_exit: its settings, and the patience chosen on dev.

Without TensorFlow (NumPy only), so the tool checks the flags at once.

At evaluation every dev example's logits of every application of the
shared layer are computed once (AlbertEarlyExitClassifier's `all_logits`,
[N, L, C]); `exit_at` applies the PABEE rule to them for any patience
(the rule the in-graph loop runs, networks/early_exit_encoder.py: tests
hold them equal), so every patience 0..L-1 is scored from one pass.
`--exit_patience=auto` then takes the smallest mean exit layer whose main
metric is within `--exit_tolerance` points (hundredths of the metric) of
the best patience's.

eval_results.json gains `exit_patience`, `mean_exit_layer` and
`exit_table`: [{"patience": p, <main metric>: value, "mean_exit_layer":
m}, ...].
"""

import dataclasses
import re
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from albert_common import run_constants
from albert_common.errors import UserInputError
from albert_common.settings_fields import FlatConstructible
from albert_common.settings_fields import setting

AUTO = "auto"
# The values of --exit_patience, --exit_tolerance and --exit_threshold when
# they are not given. Their flags default to None, so that any value given
# without --early_exit is refused alike.
DEFAULT_PATIENCE = AUTO
DEFAULT_TOLERANCE = 0.5
DEFAULT_THRESHOLD = run_constants.EXIT_THRESHOLD
TABLE = "exit_table"


@dataclasses.dataclass(frozen=True, kw_only=True)
class EarlyExitOptions(FlatConstructible):
  """Patience-based early exit (each leaf field is the flag of its name)."""

  early_exit: bool = setting(
      False, "Train a classifier per application of the shared layer "
      "(PABEE loss, application j weighted j) and let each example stop "
      "at its own depth: at evaluation, prediction and in the export. "
      "Classification and regression (GLUE, your own files; not "
      "multi_label). Needs share_parameters=all with one group.")
  exit_patience: Optional[str] = setting(
      None, "--early_exit: stop when the prediction has stayed the same "
      "for this many consecutive applications (0 = full depth; below "
      "num_hidden_layers); auto: the smallest mean depth within "
      "--exit_tolerance of the best patience on dev. Unset: "
      f"{DEFAULT_PATIENCE}.")
  exit_tolerance: Optional[float] = setting(
      None, "--exit_patience=auto: points (hundredths of the main dev "
      "metric) a patience may lose against the best one. Unset: "
      f"{DEFAULT_TOLERANCE}.")
  exit_threshold: Optional[float] = setting(
      None, "--early_exit, regression only: a prediction that changes by "
      f"less than this counts as the same. Unset: {DEFAULT_THRESHOLD}.")


def check(options: EarlyExitOptions, task_type: str) -> None:
  """UserInputError for flags that do not fit the task ("classification",
  "regression", "multi_label") or each other."""
  if not options.early_exit:
    given = [name for name in ("exit_patience", "exit_tolerance",
                               "exit_threshold")
             if getattr(options, name) is not None]
    if given:
      raise UserInputError(f"--{given[0]} needs --early_exit")
    return
  if task_type not in ("classification", "regression"):
    raise UserInputError(
        f"--early_exit supports classification and regression, not "
        f"{task_type} (its labels are not one prediction to be patient on)")
  patience = patience_setting(options)
  # ASCII digits only: str.isdigit() accepts '²', which int() refuses.
  if patience != AUTO and not re.fullmatch(r"-?[0-9]+", patience):
    raise UserInputError(f"--exit_patience must be auto or an integer >= 0, "
                         f"got {patience!r}")
  if patience != AUTO and int(patience) < 0:
    raise UserInputError(f"--exit_patience must be >= 0 (0 = full depth), "
                         f"got {patience}")
  if not tolerance(options) >= 0:
    raise UserInputError(f"--exit_tolerance must be >= 0, got "
                         f"{options.exit_tolerance}")
  if patience != AUTO and options.exit_tolerance is not None:
    raise UserInputError(
        f"--exit_tolerance is for --exit_patience=auto; --exit_patience="
        f"{patience} is fixed")
  if options.exit_threshold is not None:
    if task_type != "regression":
      raise UserInputError(
          f"--exit_threshold is for regression; this task is {task_type} "
          "(its exit compares predicted classes)")
    if not options.exit_threshold > 0:
      raise UserInputError(f"--exit_threshold must be positive, got "
                           f"{options.exit_threshold}")


def check_model(options: EarlyExitOptions, init_savedmodel: str,
                config) -> None:
  """UserInputError unless the loop can run this model: the encoder built
  here (not an exported one), one block set shared by every layer, and a
  fixed --exit_patience below its number of applications (at or above it
  no example could exit: full depth).

  Args:
    options: the run's.
    init_savedmodel: --init_savedmodel ("" if not given).
    config: the encoder's AlbertConfig.
  """
  if not options.early_exit:
    return
  if init_savedmodel:
    raise UserInputError(
        "--early_exit runs the encoder's own layers in a loop: give "
        "--albert_config_file / --init_checkpoint, not --init_savedmodel")
  try:
    config.check_loopable()
  except ValueError as error:
    raise UserInputError(f"--early_exit: {error}") from None
  patience, layers = patience_setting(options), config.num_hidden_layers
  if patience != AUTO and int(patience) >= layers:
    raise UserInputError(
        f"--exit_patience={patience} never exits: the model applies its "
        f"layer num_hidden_layers={layers} times, so a patience must be "
        f"below {layers} (0 = full depth)")


def patience_setting(options: EarlyExitOptions) -> str:
  """--exit_patience as given, else "auto"."""
  return (DEFAULT_PATIENCE if options.exit_patience is None
          else options.exit_patience)


def tolerance(options: EarlyExitOptions) -> float:
  """--exit_tolerance as given, else 0.5 points."""
  return (DEFAULT_TOLERANCE if options.exit_tolerance is None
          else options.exit_tolerance)


def threshold(options: EarlyExitOptions) -> float:
  """--exit_threshold as given, else run_constants.EXIT_THRESHOLD."""
  return (DEFAULT_THRESHOLD if options.exit_threshold is None
          else options.exit_threshold)


def exit_at(all_logits: np.ndarray, patience: int,
            threshold: float = DEFAULT_THRESHOLD,
            regression: bool = False) -> Tuple[np.ndarray, np.ndarray]:
  """The PABEE rule on every application's logits.

  Args:
    all_logits: float [N, L, C].
    patience: >= 0; 0 = full depth.
    threshold: regression: a change below it is "the same".
    regression: compare logits[..., 0], else the argmax.

  Returns:
    (logits at each example's exit [N, C], exit layer 1..L int [N]).
  """
  all_logits = np.asarray(all_logits)
  count, layers = all_logits.shape[:2]
  exit_layer = np.full(count, layers, np.int64)
  if patience > 0:
    prediction = (all_logits[..., 0] if regression
                  else all_logits.argmax(-1))  # (N, L)
    same = (np.abs(np.diff(prediction, axis=1)) < threshold if regression
            else np.diff(prediction, axis=1) == 0)  # (N, L - 1)
    streak = np.zeros(count, np.int64)
    running = np.ones(count, bool)
    for j in range(1, layers):
      streak = np.where(same[:, j - 1], streak + 1, 0)
      done = running & (streak >= patience)
      exit_layer[done] = j + 1
      running &= ~done
  return all_logits[np.arange(count), exit_layer - 1], exit_layer


def exit_table(all_logits: np.ndarray,
               metrics: Callable[[np.ndarray], Dict[str, float]],
               main_metric: str, threshold: float = DEFAULT_THRESHOLD,
               regression: bool = False) -> List[Dict]:
  """For each patience 0..L-1: its main metric and mean exit layer."""
  rows = []
  for patience in range(np.shape(all_logits)[1]):
    logits, layers = exit_at(all_logits, patience, threshold, regression)
    rows.append({"patience": patience,
                 main_metric: float(metrics(logits)[main_metric]),
                 "mean_exit_layer": float(layers.mean())})
  return rows


def choose_patience(table: Sequence[Dict], main_metric: str,
                    tolerance_points: float) -> int:
  """The patience with the smallest mean exit layer whose metric is within
  `tolerance_points` / 100 of the best one's (ties: the better metric,
  then the larger patience)."""
  best = max(row[main_metric] for row in table)
  fits = [row for row in table
          if row[main_metric] >= best - tolerance_points / 100.0 - 1e-12]
  chosen = min(fits, key=lambda row: (row["mean_exit_layer"],
                                      -row[main_metric], -row["patience"]))
  return int(chosen["patience"])


def evaluate(all_logits: np.ndarray,
             metrics: Callable[[np.ndarray], Dict[str, float]],
             main_metric: str, options: EarlyExitOptions,
             regression: bool) -> Tuple[Dict, int]:
  """The dev results of an early-exit model and the patience they use.

  Returns:
    (metrics at the patience (--exit_patience, or auto's choice) plus
    exit_patience, mean_exit_layer and exit_table; the patience).
  """
  limit = threshold(options)
  table = exit_table(all_logits, metrics, main_metric, limit, regression)
  if patience_setting(options) == AUTO:
    patience = choose_patience(table, main_metric, tolerance(options))
  else:
    patience = int(options.exit_patience)
  logits, layers = exit_at(all_logits, patience, limit, regression)
  results = dict(metrics(logits), exit_patience=patience,
                 mean_exit_layer=float(layers.mean()))
  results[TABLE] = table
  return results, patience


def chosen_patience(options: EarlyExitOptions,
                    results: Optional[Dict]) -> int:
  """The patience prediction and export use: --exit_patience, else the
  one the best dev evaluation chose, else 0 (full depth: no dev set)."""
  if patience_setting(options) != AUTO:
    return int(options.exit_patience)
  if results and "exit_patience" in results:
    return int(results["exit_patience"])
  return 0


def export_settings(options: EarlyExitOptions, patience: int) -> Dict:
  """export_classifier's exit_patience and exit_threshold ({} without
  --early_exit: the export has no exit loop)."""
  if not options.early_exit:
    return {}
  return dict(exit_patience=patience, exit_threshold=threshold(options))
