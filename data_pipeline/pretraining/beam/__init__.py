"""create_pretraining_data on Apache Beam: the local path's bytes.

  pipeline     the Beam job (pieces -> records -> shards, stats combiner)
  filesystems  albert_common.file_io's functions on Beam's FileSystems

May import: data_pipeline.pretraining, data_pipeline.corpora,
data_pipeline.tokenization, albert_common.
"""
