"""run_classifier over the combinations of the run-shape flags:
--recompute_layers x --early_exit x --pack_examples x
--gradient_accumulation_steps x --dtype x --strategy. Each either trains
(status 0, a finite dev loss in eval_results.json) or is refused in one
line before any work (status 1, one `error:` line naming a flag, no
output directory).

Default strategy, in this process, sharing one set of files: make test
runs a pairwise set (6 runs: every value of each flag meets every value of
each other flag); the slow test runs a 3-wise set (15 runs: every value of
each flag meets every pair of values of any two others), not all 48, which
took 6 minutes of the suite for interactions of 4 or more flags. With
the strategy (default, or mirrored over 2 logical CPU devices), in one new
process: make test runs one mirrored
combination, the slow test a pairwise set of the 6 factors (7 runs); a
slow test runs one combination under multi_worker (2 worker
processes)."""

import itertools
import json
import math
import pathlib
import re
import subprocess
import sys

import pytest

from tests.albert_tf.training.finetuning.test_early_exit_finetuning import (
  _run_tool,
)
from tests.albert_tf.training.finetuning.test_early_exit_finetuning import (
  write_files,
)

ROOT = pathlib.Path(__file__).resolve().parents[4]
FLAGS = ("recompute_layers", "early_exit", "pack_examples")
ACCUMULATION = (1, 2)
DTYPES = ("float32", "bfloat16", "float16")


@pytest.fixture(scope="module")
def files(tmp_path_factory, english_corpus, spm_model):
  """The early-exit tests' files with a 2-layer model (theirs has 4): a
  combination trains or is refused whatever the depth, and each run traces
  the encoder about half as long (8.5 s of CPU a run instead of 15.5 s for
  recompute+early exit+packing+k2+float32)."""
  return write_files(tmp_path_factory.mktemp("flag_combinations"),
                     english_corpus, spm_model, num_hidden_layers=2)


def all_combinations():
  for switches in itertools.product((False, True), repeat=len(FLAGS)):
    for steps, dtype in itertools.product(ACCUMULATION, DTYPES):
      yield dict(zip(FLAGS, switches)), steps, dtype


# Rows of (recompute, early exit, packing, accumulation 2) per dtype: each
# dtype with a row and its complement, so every pair of values meets.
PAIRWISE = {"float32": ("0000", "1111"), "bfloat16": ("0101", "1010"),
            "float16": ("0011", "1100")}


# Rows of (recompute, early exit, packing, accumulation 2) per dtype: each
# dtype's 5 rows meet every pair of values of the 4 switches, and the 15
# rows meet every triple of values of the 5 factors (a covering array of
# strength 3, found by search; test_three_wise_set_covers_every_triple).
THREE_WISE = {"float32": ("0000", "0011", "0101", "1001", "1110"),
              "bfloat16": ("0000", "0011", "0101", "1001", "1110"),
              "float16": ("0001", "0110", "1010", "1100", "1111")}


# The combinations that must train, written out: these flags refuse only
# with --init_savedmodel (an exported encoder), and every run here builds
# its encoder from --albert_config_file, so none may be refused. The first
# six are the pairwise set; a refusal or failure of any is a failure.
MUST_TRAIN = (
    "k1+float32",
    "recompute_layers+early_exit+pack_examples+k2+float32",
    "early_exit+k2+bfloat16",
    "recompute_layers+pack_examples+k1+bfloat16",
    "pack_examples+k2+float16",
    "recompute_layers+early_exit+k1+float16",
)
# With the strategy: the seven rows of WITH_STRATEGY.
MUST_TRAIN_WITH_STRATEGY = (
    "early_exit+pack_examples+k2+float16+mirrored",
    "recompute_layers+k1+float16",
    "early_exit+k1+float32+mirrored",
    "k2+bfloat16+mirrored",
    "early_exit+pack_examples+k1+bfloat16",
    "recompute_layers+early_exit+pack_examples+k1+bfloat16+mirrored",
    "recompute_layers+pack_examples+k2+float32",
)


def assert_listed_ones_train(outcomes, listed):
  """Every name of `listed` was run and trained."""
  missing = sorted(set(listed) - set(outcomes))
  assert not missing, missing
  failed = {name: outcomes[name] for name in listed
            if outcomes[name] != "trains"}
  assert not failed, "\n".join(f"{k}: {v}" for k, v in failed.items())


def pairwise_combinations(table=PAIRWISE):
  for dtype, rows in table.items():
    for row in rows:
      bits = [bit == "1" for bit in row]
      yield dict(zip(FLAGS, bits[:3])), ACCUMULATION[bits[3]], dtype


def test_pairwise_set_covers_every_pair():
  rows = [(*switches.values(), steps, dtype)
          for switches, steps, dtype in pairwise_combinations()]
  values = [sorted(set(column)) for column in zip(*all_rows())]
  for i, j in itertools.combinations(range(len(values)), 2):
    met = {(row[i], row[j]) for row in rows}
    assert met == set(itertools.product(values[i], values[j])), (i, j)


def test_three_wise_set_covers_every_triple():
  rows = [(*switches.values(), steps, dtype) for switches, steps, dtype
          in pairwise_combinations(THREE_WISE)]
  values = [sorted(set(column)) for column in zip(*all_rows())]
  assert len(rows) == 15
  for columns in itertools.combinations(range(len(values)), 3):
    met = {tuple(row[i] for i in columns) for row in rows}
    assert met == set(itertools.product(*(values[i] for i in columns))), (
        columns)


def all_rows():
  return [(*switches.values(), steps, dtype)
          for switches, steps, dtype in all_combinations()]


def _arguments(files, out, switches, steps, dtype,  # noqa: F811
               strategy="default"):
  on = [f"--{flag}" for flag, value in switches.items() if value]
  return (f"--albert_config_file={files['config']}",
          f"--spm_model_file={files['spm']}", f"--train_file={files['train']}",
          f"--dev_file={files['dev']}", "--do_train", "--do_eval",
          "--max_seq_length=32", "--train_batch_size=8",
          "--eval_batch_size=80", "--train_step=2", "--warmup_step=1",
          "--iterations_per_loop=2", "--save_checkpoints_steps=2",
          f"--gradient_accumulation_steps={steps}", f"--dtype={dtype}",
          f"--output_dir={out}", f"--strategy={strategy}", *on)


def test_the_lists_name_the_sets_that_run():
  assert sorted(combination_name(*c) for c in pairwise_combinations()) == (
      sorted(MUST_TRAIN))
  assert sorted(combination_name(*c) for c in strategy_combinations()) == (
      sorted(MUST_TRAIN_WITH_STRATEGY))


def test_pairwise_combinations_train(files, tmp_path, capsys):  # noqa: F811
  outcomes = _check(pairwise_combinations(), files, tmp_path, capsys)
  assert sorted(outcomes) == sorted(MUST_TRAIN)
  assert_listed_ones_train(outcomes, MUST_TRAIN)


@pytest.mark.slow  # make test: the pairwise set above
def test_three_wise_combinations_train(files, tmp_path, capsys):  # noqa: F811
  """Every run builds its encoder from --albert_config_file, so none may be
  refused (these flags refuse only with --init_savedmodel)."""
  combinations = list(pairwise_combinations(THREE_WISE))
  outcomes = _check(combinations, files, tmp_path, capsys)
  assert len(outcomes) == len(set(map(str, combinations))) == 15
  assert_listed_ones_train(outcomes, sorted(outcomes))


# The strategy as a sixth factor: default, or mirrored over 2 logical CPU
# devices (tools' --strategy=mirrored without GPUs). Rows of (recompute,
# early exit, packing, accumulation 2), dtype, strategy: 7 rows meet every
# pair of values of the 6 factors (6 cannot: each dtype's 2 rows would
# have to be complements, which leaves 4 binary columns, not 5).
WITH_STRATEGY = (("0111", "float16", "mirrored"),
                 ("1000", "float16", "default"),
                 ("0100", "float32", "mirrored"),
                 ("0001", "bfloat16", "mirrored"),
                 ("0110", "bfloat16", "default"),
                 ("1110", "bfloat16", "mirrored"),
                 ("1011", "float32", "default"))
STRATEGIES = ("default", "mirrored")
# make test's mirrored run: every switch on, accumulation and packing
# splitting each replica's rows.
ONE_MIRRORED = ("1111", "bfloat16", "mirrored")


def strategy_combinations(rows=WITH_STRATEGY):
  for row, dtype, strategy in rows:
    bits = [bit == "1" for bit in row]
    yield dict(zip(FLAGS, bits[:3])), ACCUMULATION[bits[3]], dtype, strategy


def test_strategy_set_covers_every_pair_of_the_six_factors():
  rows = [(*switches.values(), steps, dtype, strategy)
          for switches, steps, dtype, strategy in strategy_combinations()]
  values = [sorted(set(column)) for column in zip(*all_rows())]
  values.append(sorted(STRATEGIES))
  assert len(rows) == 7 and all(len(row) == 6 for row in rows)
  for i, j in itertools.combinations(range(len(values)), 2):
    met = {(row[i], row[j]) for row in rows}
    assert met == set(itertools.product(values[i], values[j])), (i, j)


def _in_two_device_process(files, tmp_path, combinations):  # noqa: F811
  """Runs the combinations in ONE new process whose CPU is split into 2
  logical devices (set before TensorFlow initialises its devices:
  tests/scripts/flag_combinations_script.py); their outcomes by name."""
  combos = [dict(switches=s, steps=k, dtype=d, strategy=st)
            for s, k, d, st in combinations]
  out_json = tmp_path / "outcomes.json"
  process = subprocess.run(
      [sys.executable, str(ROOT / "tests" / "scripts" /
                           "flag_combinations_script.py"),
       json.dumps({k: str(v) for k, v in files.items()}),
       json.dumps(combos), str(tmp_path), str(out_json)],
      cwd=ROOT, capture_output=True, text=True, timeout=1800)
  assert process.returncode == 0, process.stderr[-3000:]
  result = json.loads(out_json.read_text())
  assert result["replicas"] == {"default": 1, "mirrored": 2}, result
  assert len(result["outcomes"]) == len(combos)
  return result["outcomes"]


def test_one_mirrored_combination_trains_on_two_replicas(
    files, tmp_path):  # noqa: F811
  outcomes = _in_two_device_process(
      files, tmp_path, strategy_combinations([ONE_MIRRORED]))
  assert list(outcomes.values()) == ["trains"], outcomes


@pytest.mark.slow  # make test: the one mirrored combination above
def test_strategy_combinations_train_or_are_refused_at_once(
    files, tmp_path):  # noqa: F811
  outcomes = _in_two_device_process(files, tmp_path,
                                    strategy_combinations())
  assert_trained_or_refused(outcomes)
  assert sorted(outcomes) == sorted(MUST_TRAIN_WITH_STRATEGY)
  assert_listed_ones_train(outcomes, MUST_TRAIN_WITH_STRATEGY)


@pytest.mark.slow  # two worker processes
def test_one_multi_worker_combination_trains(files, tmp_path):  # noqa: F811
  """ONE_MIRRORED's switches under --strategy=multi_worker: 2 local worker
  processes (TF_CONFIG), each one replica; the chief's eval_results."""
  from tests.albert_tf.training.pretraining.test_distributed import (
    _two_worker_attempts,
  )
  (switches, steps, dtype, _), = strategy_combinations([ONE_MIRRORED])
  out = tmp_path / "run"
  settings = dict(arg[2:].split("=", 1) for arg in _arguments(
      files, out, switches, steps, dtype) if "=" in arg and
      not arg.startswith("--strategy="))
  settings.update({arg[2:]: True for arg in _arguments(
      files, out, switches, steps, dtype) if "=" not in arg})
  # Length-bucketed evaluation (the default) over the whole dev set on each
  # worker: with the dataset sharded between workers, each predicted half
  # of it and the metrics failed on 40 predictions for 80 labels.
  settings, outputs = _two_worker_attempts(settings, "tools.run_classifier")
  assert ("strategy multi_worker (CollectiveAllReduceStrategy) with 2 "
          "replica(s)") in outputs[0], outputs[0][-3000:]
  results = json.loads((pathlib.Path(settings["output_dir"]) /
                        "eval_results.json").read_text())
  assert math.isfinite(results.get("loss", results.get("eval_loss"))), (
      results)


# Outcomes of the default-strategy runs made in this process, by the
# files' folder and the combination's name: a run gives the same outcome
# each time, and 3 rows of PAIRWISE are also rows of THREE_WISE.
_OUTCOMES = {}


def _check(combinations, files, tmp_path, capsys):  # noqa: F811
  def read_err():
    return capsys.readouterr().err

  outcomes = {}
  for index, (switches, steps, dtype) in enumerate(combinations):
    name = combination_name(switches, steps, dtype)
    key = (str(files["root"]), name)
    if key not in _OUTCOMES:
      _OUTCOMES[key] = run_combination(files, tmp_path / f"run{index}",
                                       switches, steps, dtype, "default",
                                       read_err)
    outcomes[name] = _OUTCOMES[key]
  assert_trained_or_refused(outcomes)
  return outcomes


def combination_name(switches, steps, dtype, strategy="default"):
  return "+".join([f for f, v in switches.items() if v] +
                  [f"k{steps}", dtype] +
                  ([] if strategy == "default" else [strategy]))


def run_combination(files, out, switches, steps, dtype,  # noqa: F811
                    strategy, read_err):
  """run_classifier in this process with one combination, output in `out`
  (a pathlib.Path); `read_err()` returns the stderr written since its last
  call. Returns "trains", "refused: <the error line>" or what went wrong."""
  read_err()
  try:
    status = _run_tool("run_classifier", *_arguments(
        files, out, switches, steps, dtype, strategy))
  except Exception as error:  # a stack trace: recorded, asserted after
    status = f"raised {type(error).__name__}: {str(error)[:200]}"
  err = read_err()
  errors = [line for line in err.splitlines() if line.startswith("error:")]
  if status == 0:
    results = json.loads((out / "eval_results.json").read_text())
    loss = results.get("loss", results.get("eval_loss"))
    return ("trains" if loss is not None and math.isfinite(loss)
            else f"loss {loss}")
  if status == 1 and len(errors) == 1 and not out.exists() and (
      re.search(r"--\w+", errors[0])):
    return "refused: " + errors[0]
  return (f"status {status}, errors {errors[:2]}, "
          f"output left: {out.exists()}; {err[-300:]}")


def assert_trained_or_refused(outcomes):
  bad = {name: outcome for name, outcome in outcomes.items()
         if not (outcome == "trains" or outcome.startswith("refused: "))}
  assert not bad, "\n".join(f"{k}: {v}" for k, v in bad.items())
