"""Data creation and reading: instances/s against the official script,
the reader against what a step consumes, padding in the records, sentence
splitters and word segmentation.

Rerun when the data pipeline changes; each writes its BENCHMARKS.md section
with --write.
"""
