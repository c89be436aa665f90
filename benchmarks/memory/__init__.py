"""Memory: peak resident memory against batch and sequence length, and what
recomputing activations (gradient checkpointing) saves and costs.

peaks: the peak memory of a pretraining step, recomputation on and off,
measured in a child process per configuration against the memory plan
(albert_tf.memory_plan). A harness here, with --write, calls
`common.update_benchmarks_md(section, body, figures=[row],
stage="Memory")`: the section lands under BENCHMARKS.md's
"## Memory", and `row` (see benchmarks.common.figures_block; order 50,
the ceiling e.g. the memory of one micro-batch) becomes its line of the
first table at the next `python -m benchmarks.summary --write`. Its chart
(memory against batch and sequence length) goes to benchmarks/charts/ with
benchmarks.charts.lines.
"""
