"""RACE: examples (the released folder layout) and features (packing).

May import: data_pipeline.tasks, pretraining, corpora, tokenization,
albert_common.
"""
