"""GLUE: examples (the task table and TSV readers), features, metrics.

May import: data_pipeline.tasks, pretraining, corpora, tokenization,
albert_common.
"""
