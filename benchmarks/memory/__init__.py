"""Memory: peak resident memory against batch and sequence length, and what
recomputing activations (gradient checkpointing) saves and costs.

The memory issue's harness (its branch's bench_memory.py) goes here as
benchmarks/memory/<name>.py, run as `python -m benchmarks.memory.<name>`.
With --write it calls `common.update_benchmarks_md(section, body,
figures=[row], stage="Memory")`: the section lands under BENCHMARKS.md's
"## Memory", and `row` (see benchmarks.common.figures_block; order 50,
the ceiling e.g. the memory of one micro-batch) becomes its line of the
first table at the next `python -m benchmarks.summary --write`. Its chart
(memory against batch and sequence length) goes to benchmarks/charts/ with
benchmarks.charts.lines.
"""
