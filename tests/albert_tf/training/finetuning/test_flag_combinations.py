"""run_classifier over the combinations of the run-shape flags:
--recompute_layers x --early_exit x --pack_examples x
--gradient_accumulation_steps x --dtype (default strategy, in this process,
sharing one set of files). Each either trains (status 0, a finite dev loss
in eval_results.json) or is refused in one line before any work (status 1,
one `error:` line naming a flag, no output directory).

make test runs a pairwise set (6 runs: every value of each flag meets every
value of each other flag); the slow test runs all 48 (about 20 s each on a
loaded 2-core machine)."""

import itertools
import json
import math
import re

import pytest

from tests.albert_tf.training.finetuning.test_early_exit_finetuning import (
  _run_tool,
)
from tests.albert_tf.training.finetuning.test_early_exit_finetuning import files  # noqa: F401 (fixture)

FLAGS = ("recompute_layers", "early_exit", "pack_examples")
ACCUMULATION = (1, 2)
DTYPES = ("float32", "bfloat16", "float16")


def all_combinations():
  for switches in itertools.product((False, True), repeat=len(FLAGS)):
    for steps, dtype in itertools.product(ACCUMULATION, DTYPES):
      yield dict(zip(FLAGS, switches)), steps, dtype


# Rows of (recompute, early exit, packing, accumulation 2) per dtype: each
# dtype with a row and its complement, so every pair of values meets.
PAIRWISE = {"float32": ("0000", "1111"), "bfloat16": ("0101", "1010"),
            "float16": ("0011", "1100")}


def pairwise_combinations():
  for dtype, rows in PAIRWISE.items():
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


def all_rows():
  return [(*switches.values(), steps, dtype)
          for switches, steps, dtype in all_combinations()]


def _arguments(files, out, switches, steps, dtype):  # noqa: F811
  on = [f"--{flag}" for flag, value in switches.items() if value]
  return (f"--albert_config_file={files['config']}",
          f"--spm_model_file={files['spm']}", f"--train_file={files['train']}",
          f"--dev_file={files['dev']}", "--do_train", "--do_eval",
          "--max_seq_length=32", "--train_batch_size=8",
          "--eval_batch_size=80", "--train_step=2", "--warmup_step=1",
          "--iterations_per_loop=2", "--save_checkpoints_steps=2",
          f"--gradient_accumulation_steps={steps}", f"--dtype={dtype}",
          f"--output_dir={out}", *on)


def test_pairwise_combinations_train_or_are_refused_at_once(
    files, tmp_path, capsys):  # noqa: F811
  _check(pairwise_combinations(), files, tmp_path, capsys)


@pytest.mark.slow  # make test: the pairwise set above
def test_every_combination_trains_or_is_refused_at_once(
    files, tmp_path, capsys):  # noqa: F811
  _check(all_combinations(), files, tmp_path, capsys)


def _check(combinations, files, tmp_path, capsys):  # noqa: F811
  outcomes = {}
  for index, (switches, steps, dtype) in enumerate(combinations):
    name = "+".join([f for f, v in switches.items() if v] +
                    [f"k{steps}", dtype])
    out = tmp_path / f"run{index}"
    try:
      status = _run_tool("run_classifier",
                         *_arguments(files, out, switches, steps, dtype))
    except Exception as error:  # a stack trace: recorded, asserted below
      status = f"raised {type(error).__name__}: {str(error)[:200]}"
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    if status == 0:
      results = json.loads((out / "eval_results.json").read_text())
      loss = results.get("loss", results.get("eval_loss"))
      outcomes[name] = ("trains" if loss is not None and math.isfinite(loss)
                        else f"loss {loss}")
    elif status == 1 and len(errors) == 1 and not out.exists() and (
        re.search(r"--\w+", errors[0])):
      outcomes[name] = "refused: " + errors[0]
    else:
      outcomes[name] = (f"status {status}, errors {errors[:2]}, "
                        f"output left: {out.exists()}; {err[-300:]}")
  bad = {name: outcome for name, outcome in outcomes.items()
         if not (outcome == "trains" or outcome.startswith("refused: "))}
  assert not bad, "\n".join(f"{k}: {v}" for k, v in bad.items())
