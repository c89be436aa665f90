"""One's own multiple-choice files (JSON lines, SWAG's CSV, Parquet; read
by data_pipeline.corpora.record_files), packed as RACE
(data_pipeline.tasks.choice_inputs).

  examples   columns, the number of choices, bad records
  features   model inputs, accuracy, the predictions file

May import: data_pipeline.tasks, data_pipeline.pretraining,
data_pipeline.corpora, data_pipeline.tokenization, albert_common.
"""
