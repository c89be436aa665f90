"""`tools.predict`: a fine-tuned export over a corpus of any size, in this
process, streaming, exactly once across crashes.

  options.py         PredictOptions (the tool's flags) and their checks
  exported_model.py  what an export is (classifier, regression, multi-label,
                     NER, SQuAD, encoder), read from its signatures and
                     assets (no TensorFlow), and its predict function
  inputs.py          CSV, TSV, JSON lines, Parquet, plain text records,
                     streamed (local, gs://, .gz), with their columns
  batching.py        rows -> length-sorted batches -> output rows: the pure
                     per-batch step a Beam ModelHandler can wrap
  writers.py         one shard (jsonl, parquet, csv) published atomically
  manifest.py        the run's plan (checked on a rerun) and its manifest
  runner.py          the shard loop: resume, bad rows, progress
  beam_handler.py    a Beam ModelHandler for our exports (RunInference)
  beam_pipeline.py   --runner: the same files through Apache Beam

May import: albert_tf.exports, albert_tf.saved_model_inspection,
data_pipeline, albert_common.
"""
