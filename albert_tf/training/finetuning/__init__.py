"""Fine-tuning: one generic runner, one module per task on it.

  runner, model, task   FinetuningRunner (resume, best/, TensorBoard), the
                        Keras model fit trains, what a task hands the runner
  params, task_settings the settings and per-task recipes and options
  ner_settings          run_ner's options and Hugging Face recipe
  bucketed_steps        steps for length-bucketed batches
  multi_worker          --strategy=multi_worker: only the chief writes
  export_once           --export_dir checked before training, written once
  own_data_settings     the options and recipes of one's own files
                        (run_classifier --train_file, run_multiple_choice)
  tasks/                the tasks, one module each: classifier, squad, race,
                        ner, own_data, multiple_choice

May import: albert_tf.training's runtime modules, albert_tf.exports (a run's
--export_dir), albert_tf, data_pipeline, albert_common.
"""
