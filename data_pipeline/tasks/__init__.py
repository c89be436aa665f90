"""Fine-tuning data, one folder per task: examples -> features -> metrics.

  glue/            GLUE's TSVs
  squad/           SQuAD v1.1 / v2.0 JSON, windows, post-processing
  race/            RACE's folders
  length_buckets   batches padded to the smallest bucket that holds them,
                   shared by every task
  bucket_boundaries  --length_buckets=auto: boundaries fitted to the data
                   (least padding), kept in the run's length_buckets.json
  label_list       a fine-tuned model's label names (labels.json), kept
                   with its run and export

May import: data_pipeline.pretraining, data_pipeline.corpora,
data_pipeline.tokenization, albert_common.
"""
