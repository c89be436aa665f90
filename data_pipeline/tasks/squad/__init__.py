"""SQuAD v1.1 / v2.0: examples, features (windows over the context),
postprocess (spans -> answer text) and the official metrics.

May import: data_pipeline.tasks, pretraining, corpora, tokenization,
albert_common.
"""
