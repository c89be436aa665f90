"""benchmarks/ is grouped by stage: the commands run as
`python -m benchmarks.<stage>.<name>`, the flat names of before fail with
one line naming the new one, and `python -m benchmarks.roofline` prints the
matmul peak at a step's shapes."""

import importlib
import os
import pathlib
import subprocess
import sys

import pytest

import benchmarks
from benchmarks import roofline

ROOT = pathlib.Path(__file__).resolve().parents[2]
STAGES = ("data", "pretraining", "finetuning", "serving", "memory",
          "investigations")


def _python(*args):
  return subprocess.run(
      [sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
      timeout=300, env=dict(os.environ, PYTHONPATH=str(ROOT),
                            TF_CPP_MIN_LOG_LEVEL="3"))


def test_every_stage_is_a_package_that_says_what_it_holds():
  for stage in STAGES:
    module = importlib.import_module(f"benchmarks.{stage}")
    assert len(module.__doc__ or "") > 80, stage
  on_disk = {p.parent.name for p in (ROOT / "benchmarks").glob(
      "*/__init__.py")}
  assert on_disk == set(STAGES)
  # Nothing but the shared modules is left at the top.
  top = {p.stem for p in (ROOT / "benchmarks").glob("*.py")}
  assert top == {"__init__", "common", "roofline", "summary", "charts",
                 "figures", "run_all", "accuracy", "ceilings", "revision"}


@pytest.mark.parametrize("old", sorted(benchmarks.MOVED))
def test_an_old_module_names_its_new_path(old):
  new = benchmarks.MOVED[old]
  assert (ROOT / (new.replace(".", "/") + ".py")).exists(), new
  with pytest.raises(ImportError, match=f"^{old} moved to {new} "):
    importlib.import_module(old)


def test_an_old_command_fails_with_one_line():
  result = _python("-m", "benchmarks.bench_serving", "--size=tiny")
  assert result.returncode == 1
  assert result.stderr.strip().count("\n") == 0, result.stderr
  assert ("benchmarks.bench_serving moved to benchmarks.serving.runtimes"
          in result.stderr)


def test_roofline_command_prints_the_peak_at_a_steps_shapes(tmp_path):
  from albert_tf.config import AlbertConfig
  config = str(tmp_path / "tiny.json")
  AlbertConfig(vocab_size=300, embedding_size=16, hidden_size=32,
               num_hidden_layers=2, num_attention_heads=4,
               intermediate_size=64).to_json_file(config)
  result = _python("-m", "benchmarks.roofline", f"--sizes={config}",
                   "--rows=64", "--repeats=1", "--dtypes=float32")
  assert result.returncode == 0, result.stderr[-2000:]
  rows = [line.split("|")[1:-1] for line in result.stdout.splitlines()
          if line.startswith("| tiny") or line.startswith("| square")]
  assert [[c.strip() for c in r[:3]] for r in rows] == [
      ["tiny, 64 rows", "[64, 32] x [32, 64]", "float32"],
      ["tiny, 64 rows", "[64, 64] x [64, 32]", "float32"],
      ["square", "[2048, 2048] x [2048, 2048]", "float32"]]
  # Each shape as a share of the dtype's best (tiny shapes can round to
  # 0%); the best is 100%.
  shares = [float(r[4].strip().rstrip("%")) for r in rows]
  assert max(shares) == 100 and all(0 <= s <= 100 for s in shares)
  assert float(rows[-1][3]) > 1  # the square: over a GFLOP/s anywhere


def test_bfloat16_is_reported_only_where_the_cpu_has_it():
  assert not roofline.bfloat16_supported("flags\t\t: fpu avx2 avx512f\n")
  assert roofline.bfloat16_supported("flags\t\t: fpu avx2 amx_bf16 amx_tile\n")
  assert roofline.bfloat16_supported("processor\t: 0\nflags\t\t: avx512_bf16\n")
  assert not roofline.bfloat16_supported("")


def test_percent_of_peak():
  assert roofline.percent(80e9, 100e9) == "80%"
  assert roofline.percent(float("nan"), 100e9) == "-"
  assert roofline.percent(1.0, 0) == "-"
