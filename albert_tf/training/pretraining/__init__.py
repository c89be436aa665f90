"""Pretraining an AlbertPretrainer: settings (params), the end-to-end driver,
the Orbit trainer/evaluator (runner) and the MLM + SOP objective.

May import: albert_tf.training's runtime modules, albert_tf, data_pipeline,
albert_common.
"""
