"""Pretraining data: create_pretraining_data's TFRecords, and reading them.

Writing:
  data_creation_params, instance_options  the run's settings
  sop_instances      documents -> SOP (or NSP) instances
  mlm_masking        n-gram whole-word masking
  plan, worker, writer, shard_files, stats  the local run: a plan of pieces,
                     workers, atomic shards with sidecars, counters
  sentence_corpus    tools.split_sentences: documents -> the official format
  tfrecord_io, tfrecord_schema  records without TensorFlow; the features
  beam/              the same output on Apache Beam
Reading:
  reader             the pretraining tf.data pipeline (pretraining_dataset)
  record_stream      a seeded, resumable record stream
  buckets            length-bucketed pretraining batches

May import: data_pipeline.corpora, data_pipeline.tokenization, albert_common.
"""
