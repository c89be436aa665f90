"""Training: pretraining, fine-tuning, and the runtime both use.

  pretraining/   run_pretraining: params, driver, Orbit runner, objective
  finetuning/    the generic runner and one module per task on it
  runtime_params, strategy, mixed_precision, seeds, output_dir, warmup,
  warm_start, gradient_update   what both share: where and how a run
                 executes, its seeds, its output folder, the update step

May import: albert_tf (config, layers, networks, models, checkpoints),
data_pipeline, albert_common. pretraining/ and finetuning/ do not import
each other.
"""
