"""The pretraining step against Model Garden's, in one process, alternating
(step), the step on length buckets (length_buckets) and the cost of a resume
(resume). The step's figures sit beside the matmul peak measured in the same
run (benchmarks.roofline).

The gradient-accumulation overhead (accumulation: K=4 against K=1
micro-batches of the same size, time per example and peak memory) too.
"""
