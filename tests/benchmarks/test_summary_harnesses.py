"""The harnesses' side of BENCHMARKS.md's first table: the rows data
creation, the pretraining step and peak memory write from their numbers
(fabricated here), the machine label, and the load a run measured."""


import pytest

from benchmarks import common
from benchmarks import figures
from benchmarks import summary
from tests.benchmarks.summary_kit import PNG
from tests.benchmarks.summary_kit import benchmarks_doc


def test_data_creation_writes_its_row_only_from_a_large_local_run():
  from benchmarks.data import creation
  rates = {("local", 1): 25261.0, ("local", 2): 44407.0}
  official = {"rate": 985.0}
  (row,) = creation.figures(rates, "python -m benchmarks.data.creation",
                            creation.MIN_COPIES, "", official)
  assert row["ceiling"]["value"] == 50522 and row["reached"] == 44407
  assert f"{summary.share(row):.0%}" == "88%"
  # Ours and reached are one figure: 2 workers against the official
  # script's one process (it has no workers).
  assert row["ours"]["value"] == row["reached"] == 44407
  assert f"{summary.ratio(row):.2f}x" == "45.08x"
  assert "peer_run" not in row  # the official script ran in this run
  assert creation.figures(rates, "x", 16, "", None) == []  # no peer run
  small = creation.MIN_COPIES - 1
  assert creation.figures(rates, "x", small, "", official) == []
  assert creation.figures(rates, "x", 16, "2", official) == []  # with Beam
  assert creation.figures({("local", 1): 1.0}, "x", 16, "", official) == []


def test_pretraining_step_write_feeds_the_first_table(tmp_path, monkeypatch):
  """step --write: its section under Pretraining, the chart, and a row the
  summary reads, from the run's numbers (fabricated here)."""
  import argparse

  from benchmarks import charts
  from benchmarks.pretraining import step
  path = tmp_path / "BENCHMARKS.md"
  path.write_text(f"# Benchmarks\n\n{summary.START}\n\n{summary.END}\n\n"
                  "## Pretraining\n\nIntro.\n\n## History\n\nOld.\n")
  monkeypatch.setattr(common, "BENCHMARKS_MD", str(path))
  monkeypatch.setattr(charts, "CHARTS_DIR", str(tmp_path / "charts"))
  plot = [dict(label="base\nfloat32", size="base", mode="float32", ours=3.4,
               garden=2.3, ceiling=4.25, peak=287e9, reached=0.8)]
  args = argparse.Namespace(sizes="base", batch_size=8, seq_length=128,
                            repeats=6, modes="float32")
  step._write(args, "| model |\n| --- |\n| base |", plot)
  text = path.read_text()
  assert text.index("## Pretraining") < text.index("### Pretraining step")
  assert text.index("### Pretraining step") < text.index("## History")
  (row,) = summary.current_rows(text)
  assert f"{summary.ratio(row):.2f}x" == "1.48x"
  assert f"{summary.share(row):.0%}" == "80%"
  assert row["command"].startswith("python -m benchmarks.pretraining.step")
  png = tmp_path / "charts" / "pretraining_step.png"
  assert png.read_bytes()[:8] == PNG


@pytest.mark.parametrize("model,flags,want", [
    ("Intel(R) Xeon(R) Processor", "fpu avx512f amx_bf16 amx_tile amx_int8",
     "2-core Intel Xeon (AMX)"),
    ("Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", "fpu avx512f",
     "2-core Intel Xeon"),
    ("AMD EPYC 9R14 96-Core Processor", "fpu avx512f", "2-core AMD EPYC"),
    ("Apple M2", "", "2-core Apple M2"),
])
def test_machine_label_names_cores_family_and_amx(model, flags, want):
  cpuinfo = (f"processor\t: 0\nmodel name\t: {model}\nflags\t\t: {flags}\n"
             f"\nprocessor\t: 1\nmodel name\t: {model}\nflags\t\t: {flags}\n")
  assert common.machine_label(cpuinfo, cores=2) == want
  # The summary accepts every label the function writes, this machine's too.
  assert figures.MACHINE.fullmatch(want)
  assert figures.MACHINE.fullmatch(common.machine_label())


def test_a_row_carries_the_load_its_harness_measured(tmp_path):
  """Pretraining step, memory and data creation write the other
  processes' cores over their run; a loaded speed row is refused."""
  from benchmarks.data import creation
  from benchmarks.memory import peaks
  from benchmarks.pretraining import step
  assert common.load_conditions(0.04) == ("quiet: other processes 0.04 "
                                          "cores over the run")
  assert common.load_conditions(0.5).startswith("loaded: ")
  plot = [dict(label="base", size="base", mode="float32", ours=3.4,
               garden=2.3, ceiling=4.25, peak=287e9, reached=0.8)]
  (row,) = step.figures(plot, 8, 128, "2-core AMD EPYC", "python -m "
                        "benchmarks.pretraining.step", others=0.6)
  assert row["conditions"].endswith("loaded: other processes 0.60 cores "
                                    "over the run")
  path = benchmarks_doc(tmp_path)
  common.update_benchmarks_md("Step", "x", stage="Memory", path=str(path),
                              figures=[row])
  with pytest.raises(summary.FiguresError, match="cannot be current"):
    summary.current_rows(path.read_text())
  (row,) = creation.figures({("local", 1): 10.0, ("local", 2): 19.0}, "x",
                            creation.MIN_COPIES, "", {"rate": 1.0},
                            "2-core AMD EPYC", others=0.02)
  assert row["conditions"] == ("quiet: other processes 0.02 cores over the "
                               "run")
  configs = [dict(size="base", seq=512, batch=4, on_mib=900.0,
                  off_mib=3000.0, plan_on_mib=700.0)]
  (row,) = peaks.figures(configs, "2-core AMD EPYC", "x", others=0.3)
  assert row["conditions"].endswith("other processes 0.30 cores over the "
                                    "run")
  assert "over the built model" in row["ours"]["label"]
  assert "over the built model" in row["peer"]["label"]
