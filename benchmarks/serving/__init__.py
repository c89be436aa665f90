"""Serving latency: our SavedModel and LiteRT files against ONNX Runtime
(runtimes: batch 1 and 32, quiet rounds), against Model Garden (garden),
length-bucketed raw-text exports (length_buckets) and LiteRT file sizes and
latency (litert).

Early exit (the early-exit issue's bench_early_exit) belongs here too: its
section with stage="Serving", a first-table row of order 60, and its chart
(accuracy against latency) through benchmarks.charts.
"""
