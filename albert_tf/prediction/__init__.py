"""`tools.predict`: a fine-tuned export over a corpus of any size, in this
process, streaming, exactly once across crashes.

  options.py         PredictOptions (the tool's flags) and their checks
  exported_model.py  what an export is (classifier, regression, multi-label,
                     NER, SQuAD, multiple choice, encoder) and its length
                     buckets, read from its signatures and assets (no
                     TensorFlow), and its predict function
  converted_model.py --runtime=onnx|litert: the same predict function on
                     the ONNX / LiteRT file made from the export
  inputs.py          CSV, TSV, JSON lines, Parquet, plain text records,
                     streamed (local, gs://, .gz), with their columns
  lengths.py         a row's length in tokens (the export's vocabulary)
  batching.py        rows -> length-sorted batches within the export's
                     buckets -> output rows: the pure per-batch step a
                     Beam ModelHandler can wrap
  writers.py         one shard (jsonl, parquet, csv) published atomically
  manifest.py        the run's plan (checked on a rerun) and its manifest
  runner.py          the shard loop: resume, bad rows, progress
  beam_handler.py    a Beam ModelHandler for our exports (RunInference)
  beam_pipeline.py   --runner: the same files through Apache Beam

May import: albert_tf.exports (with its litert/ and onnx/ runtimes),
albert_tf.saved_model_inspection, data_pipeline, albert_common.
"""
