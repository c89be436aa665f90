"""The pretraining step against Model Garden's, in one process, alternating
(step), the step on length buckets (length_buckets) and the cost of a resume
(resume). The step's figures sit beside the matmul peak measured in the same
run (benchmarks.roofline).
"""
