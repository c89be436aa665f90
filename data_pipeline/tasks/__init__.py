"""Fine-tuning data, one folder per task: examples -> features -> metrics.

  glue/            GLUE's TSVs
  squad/           SQuAD v1.1 / v2.0 JSON, windows, post-processing
  race/            RACE's folders
  ner/             token classification: CoNLL, JSON lines, CLUENER; tag
                   schemes, windows, seqeval metrics, entity spans
  own_data/        one's own classification, regression and multi-label
                   files (CSV, TSV, JSON lines, Parquet)
  multiple_choice/ one's own multiple-choice files (JSON lines, SWAG's CSV)
  text_pair_inputs `[CLS] a [SEP] (b [SEP])` packing and datasets (GLUE,
                   own data)
  choice_inputs    RACE's multiple-choice packing (RACE, own choices)
  length_buckets   batches padded to the smallest bucket that holds them,
                   shared by every task
  bucket_boundaries  --length_buckets=auto: boundaries fitted to the data
                   (least padding), kept in the run's length_buckets.json
  packing          --pack_examples: several short examples a row of
                   --max_seq_length, static rows x slots batches
  label_list       a fine-tuned model's label names (labels.json), kept
                   with its run and export

May import: data_pipeline.pretraining, data_pipeline.corpora,
data_pipeline.tokenization, albert_common.
"""
