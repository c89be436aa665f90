r"""Creates ALBERT pretraining TFRecords (SOP + n-gram masking) from text.

Input: one sentence per line, a blank line between documents (the official
format, --input_format=text), or documents as JSON lines (--input_format=jsonl,
also .jsonl.gz / .json.gz) or Parquet (--input_format=parquet), split into
sentences (--sentence_splitter). The official google-research/albert flags
keep their meaning; added: --num_workers, --num_output_shards,
--single_segment_random_document, --skip_non_utf8_lines, --piece_bytes,
--albert_config_file, --runner, --word_segmenter, and the corpus flags
(data_pipeline.corpora.corpus_options: --input_format, --text_field,
--sentence_splitter, --min_document_sentences, --dedup_documents,
--skip_bad_records); every flag is a field of
data_pipeline.pretraining.data_creation_params.DataCreationParams. See
data_pipeline/pretraining/writer.py for sharding, shuffling and determinism
(shard_files.py for output names and resume),
data_pipeline/pretraining/sop_instances.py and mlm_masking.py for the algorithm,
data_pipeline/pretraining/beam/pipeline.py for the Beam pipeline.

  python -m tools.create_pretraining_data \
    --input_file=corpus/*.txt \
    --output_file=data/train.tfrecord --num_output_shards=64 \
    --spm_model_file=30k-clean.model \
    --max_seq_length=512 --max_predictions_per_seq=20 \
    --dupe_factor=10 --random_seed=12345

A WordPiece vocabulary (the released Chinese ALBERTs; the official flags):

  python -m tools.create_pretraining_data \
    --input_file=zh_corpus/*.txt --output_file=data/zh.tfrecord \
    --vocab_file=albert_base_zh/vocab_chinese.txt \
    --albert_config_file=albert_base_zh/albert_config.json \
    --max_seq_length=512 --max_predictions_per_seq=51

Add --word_segmenter=jieba to mask whole Chinese words (jieba's
segmentation) instead of single characters; the ids do not change.

Wikipedia from wikiextractor --json, C4 or FineWeb:

  python -m tools.create_pretraining_data \
    --input_file=c4/en/c4-train.*.json.gz --input_format=jsonl \
    --output_file=data/train.tfrecord --num_output_shards=64 \
    --spm_model_file=30k-clean.model --min_document_sentences=2

The same job on Apache Beam (same output bytes; see docs/corpora-and-beam.md for
Dataflow, Flink and Spark): add --runner and Beam's own pipeline options, e.g.

  python -m tools.create_pretraining_data ... \
    --runner=DirectRunner --direct_num_workers=2 \
    --direct_running_mode=multi_processing
  python -m tools.create_pretraining_data ... \
    --input_file=gs://bucket/corpus/*.txt \
    --output_file=gs://bucket/data/train.tfrecord --num_output_shards=1024 \
    --runner=DataflowRunner --project=my-project --region=us-central1 \
    --temp_location=gs://bucket/tmp --sdk_container_image=IMAGE
"""

from absl import logging

from data_pipeline.pretraining.data_creation_params import DataCreationParams

from .support import cli
from .support import settings_flags

# Every flag is a field of DataCreationParams (with its InstanceOptions and
# CorpusOptions): its name, default and help.
settings_flags.define_flags(DataCreationParams, __name__)


def main(argv):
  params, _ = settings_flags.read_settings(DataCreationParams)
  params.check()
  # Imported here so that `--help` stays fast.
  from data_pipeline.pretraining import shard_files
  from data_pipeline.pretraining import stats as pretraining_stats
  from data_pipeline.pretraining import writer as pretraining_writer
  logging.set_verbosity(logging.INFO)
  if params.runner:
    from data_pipeline.pretraining.beam import pipeline as beam_pipeline
    stats = beam_pipeline.create_pretraining_data_beam(
        runner=params.runner, pipeline_args=argv[1:],
        **params.writer_kwargs())
  else:
    stats = pretraining_writer.create_pretraining_data(
        show_progress=params.progress, **params.writer_kwargs())
  summary = pretraining_stats.PretrainingStats.from_dict(stats).summary()
  json_path = shard_files.stats_path(params.output_file,
                                     params.num_output_shards)
  print(summary)
  print(f"wrote {stats['instances']:,} instances to "
        f"{len(stats['outputs'])} file(s); stats: {json_path}")


def run():
  cli.run(main, flags_parser=cli.parse_flags_with_beam_options)


if __name__ == "__main__":
  run()
