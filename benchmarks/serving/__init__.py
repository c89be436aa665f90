"""Serving latency: our SavedModel and LiteRT files against ONNX Runtime
(runtimes: batch 1 and 32, quiet rounds), against Model Garden (garden),
length-bucketed raw-text exports (length_buckets) and LiteRT file sizes and
latency (litert); predicting over a corpus with tools.predict, in-process
and on Beam, against Beam's stock handler and Hugging Face's pipeline
(corpus: rows/s, peak memory).

early_exit: patience-based early exit against full depth and static cuts
in the SavedModel, LiteRT int8 and ONNX Runtime (its section with
stage="Serving"; a first-table row of order 60 once measured on a quiet
machine, and its accuracy-against-latency chart, are still to come).
"""
