"""Serving latency: our SavedModel and LiteRT files against ONNX Runtime
(runtimes: batch 1 and 32, quiet rounds), against Model Garden (garden),
length-bucketed raw-text exports (length_buckets) and LiteRT file sizes and
latency (litert).
"""
