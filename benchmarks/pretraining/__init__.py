"""The pretraining step against Model Garden's, in one process, alternating
(step), the step on length buckets (length_buckets) and the cost of a resume
(resume). The step's figures sit beside the matmul peak measured in the same
run (benchmarks.roofline).

The gradient-accumulation overhead (K=1 against K=4, the accumulation
issue's bench_accumulation) belongs here, written with stage="Pretraining".
"""
