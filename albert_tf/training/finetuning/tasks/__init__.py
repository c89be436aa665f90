"""The fine-tuning tasks: one module per task on the generic runner.

  classifier       GLUE (tools.run_classifier)
  own_data         one's own classification, regression and multi-label
                   files (run_classifier --train_file)
  multiple_choice  one's own multiple-choice files (tools.run_multiple_choice)
  race             RACE (tools.run_race)
  squad            SQuAD v1.1 / v2.0 (tools.run_squad)
  ner              token classification (tools.run_ner)

Each builds its model, loss and data on albert_tf.training.finetuning's
runner, params, task and settings modules.

May import: albert_tf.training.finetuning's modules, albert_tf.training's
runtime modules, albert_tf.checkpoints.task_models (a source's head and
labels), albert_tf.exports.serving (a run's --export_dir), albert_tf's
models, networks and layers, data_pipeline, albert_common.
"""
