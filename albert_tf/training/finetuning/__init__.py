"""Fine-tuning: one generic runner, one module per task on it.

  runner, model, task   FinetuningRunner (resume, best/, TensorBoard), the
                        Keras model fit trains, what a task hands the runner
  params, task_settings the settings and per-task recipes and options
  ner_settings          run_ner's options and Hugging Face recipe
  bucketed_steps        steps for length-bucketed batches
  multi_worker          --strategy=multi_worker: only the chief writes
  export_once           --export_dir checked before training, written once
  classifier, squad, race, ner  the tasks (tools.run_classifier,
                        run_squad, run_race, run_ner)
  own_data, multiple_choice  one's own files (run_classifier --train_file,
                        run_multiple_choice); own_data_settings their
                        options and recipes

May import: albert_tf.training's runtime modules, albert_tf.exports (a run's
--export_dir), albert_tf, data_pipeline, albert_common.
"""
