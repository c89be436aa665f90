"""One's own classification, regression and multi-label files (CSV, TSV,
JSON lines, Parquet; read by data_pipeline.corpora.record_files).

  examples   columns, typed labels, bad records; the label list
  features   packing (text_pair_inputs) and the targets of each task type
  metrics    scikit-learn / SciPy metrics; the predictions file

May import: data_pipeline.tasks, data_pipeline.pretraining,
data_pipeline.corpora, data_pipeline.tokenization, albert_common.
"""
