"""Memory: peak resident memory against batch and sequence length, and what
recomputing activations (gradient checkpointing) saves and costs.

The harnesses come from the memory issue's branch (bench_memory); each
writes its BENCHMARKS.md section with a `figures` block (see
benchmarks.common.figures_block) so benchmarks.summary adds its row to the
first table.
"""
