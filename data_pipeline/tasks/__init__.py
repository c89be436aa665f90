"""Fine-tuning data, one folder per task: examples -> features -> metrics.

  glue/            GLUE's TSVs
  squad/           SQuAD v1.1 / v2.0 JSON, windows, post-processing
  race/            RACE's folders
  ner/             token classification: CoNLL, JSON lines, CLUENER; tag
                   schemes, windows, seqeval metrics, entity spans
  length_buckets   batches padded to the smallest bucket that holds them,
                   shared by every task
  label_list       a fine-tuned model's label names (labels.json), kept
                   with its run and export

May import: data_pipeline.pretraining, data_pipeline.corpora,
data_pipeline.tokenization, albert_common.
"""
