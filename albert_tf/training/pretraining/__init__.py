"""Pretraining an AlbertPretrainer: settings (params), the end-to-end driver,
the Orbit trainer/evaluator (runner), the MLM + SOP objective, and
where a run with --init_checkpoint starts (continuation).

May import: albert_tf.training's runtime modules, albert_tf, data_pipeline,
albert_common.
"""
